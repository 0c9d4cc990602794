"""Names that would become paths outside the storage (variant, spec stem, profile, split) are refused, and
wiping a run folder never leaves the storage."""
from pathlib import Path

import pytest

from helpers import REPO, run
from zoo.errors import UserError
from zoo.paths import inside
from zoo.runner.folders import wipe
from zoo.runner.sweep import Storage
from zoo.spec import SpecError, resolve


def victim(tmp_path: Path) -> Path:
    """A folder outside any storage, shaped like a run folder, that nothing may touch."""
    v = tmp_path / "victim"
    (v / "checkpoints").mkdir(parents=True)
    for f in ("checkpoints/step_00000001.pt", "summary.json", "metrics.jsonl", "precious.txt"):
        (v / f).write_text("keep me")
    return v


def untouched(v: Path) -> bool:
    return sorted(str(p.relative_to(v)) for p in v.rglob("*")) == [
        "checkpoints", "checkpoints/step_00000001.pt", "metrics.jsonl", "precious.txt", "summary.json"] \
        and all(p.read_text() == "keep me" for p in v.rglob("*") if p.is_file())


def test_traversal_variant_name_is_refused_at_validation(tmp_path, capsys):
    f = tmp_path / "evil.yaml"
    f.write_text('extends: %s\nvariants:\n  "../../../../victim": {model: {N: 2}}\n' % (REPO / "specs/base.yaml"))
    code, out, _ = run("validate", f, capsys=capsys)
    assert code == 2
    assert f"FAIL  {f}:3: variants.../../../../victim: the variant name '../../../../victim' is not a safe name" in out


@pytest.mark.parametrize("name", ["..", ".hidden", "a/b", "a\\b", "A1\u202e", "A\u200b1", "x" * 65, "a b", "~root"])
def test_unsafe_variant_names(tmp_path, name):
    f = tmp_path / "s.yaml"
    f.write_text(f"variants:\n  {name!r}: {{}}\n".replace("'", '"') if "\\" not in name else
                 "variants:\n  'a\\b': {}\n")
    with pytest.raises(SpecError, match=r"s\.yaml:2: variants\..*not a safe name"):
        resolve(f)


def test_unsafe_spec_stem_name_and_profile_are_refused(tmp_path, capsys):
    f = tmp_path / "<svg onload=alert(1)>.yaml"
    f.write_text("model: {N: 2}\n")
    code, out, _ = run("validate", f, capsys=capsys)
    assert code == 2 and f"{f}:1: spec: the file name '<svg onload=alert(1)>' is not a safe name" in out
    g = tmp_path / "ok.yaml"
    g.write_text("name: ../../x\nmodel: {N: 2}\n")
    code, out, _ = run("validate", g, capsys=capsys)
    assert code == 2 and f"{g}:1: name: the variant name '../../x' is not a safe name" in out
    code, _, err = run("show", REPO / "specs/base.yaml", "--profile", "../../../x", capsys=capsys)
    assert code == 2 and "--profile: the profile name '../../../x' is not a safe name" in err
    (tmp_path / "my prof.yaml").write_text("scale: {steps: 0.5}\n")
    code, _, err = run("show", REPO / "specs/base.yaml", "--profile", tmp_path / "my prof.yaml", capsys=capsys)
    assert code == 2 and "profile file's name" in err
    code, _, err = run("show", REPO / "specs/base.yaml", "--set", "eval.split=../../../../tmp/x", capsys=capsys)
    assert code == 2 and "eval.split: '../../../../tmp/x' is not a safe name" in err


def test_a_profile_file_names_runs_by_its_stem(tmp_path):
    (tmp_path / "tiny.yaml").write_text("scale: {steps: 0.001}\n")
    c = resolve(REPO / "specs/base.yaml", profile=str(tmp_path / "tiny.yaml"))[0]
    assert c.profile == "tiny" and c.train.steps == 100


def test_wipe_outside_the_storage_refuses_and_touches_nothing(tmp_path):
    v = victim(tmp_path)
    st = Storage(str(tmp_path / "storage"))
    with pytest.raises(UserError, match="outside the storage folder"):
        st.run_dir("base", "../../../victim", "cpu")
    escaping = str(tmp_path / "storage" / "base" / ".." / ".." / "victim")
    with pytest.raises(UserError, match="outside the storage folder"):
        wipe(escaping, st.scratch_root)
    with pytest.raises(UserError, match="outside the storage folder"):
        wipe(str(v), st.scratch_root)
    # a symlink planted inside the storage that points outside it is refused too
    (tmp_path / "storage" / "base").mkdir(parents=True)
    (tmp_path / "storage" / "base" / "A1-cpu").symlink_to(v)
    with pytest.raises(UserError, match="outside the storage folder"):
        wipe(st.run_dir("base", "A1", "cpu"), st.scratch_root)
    assert untouched(v)
    # inside the storage it does its job: checkpoints and summary go, the folder stays
    ok = tmp_path / "storage" / "base" / "A2-cpu"
    (ok / "checkpoints").mkdir(parents=True)
    (ok / "summary.json").write_text("{}")
    wipe(st.run_dir("base", "A2", "cpu"), st.scratch_root)
    assert ok.is_dir() and not (ok / "checkpoints").exists() and not (ok / "summary.json").exists()


def test_uri_storage_run_dirs_stay_inside():
    st = Storage("s3://bucket/zoo-runs")
    assert st.run_dir("base", "A1", "cpu") == "s3://bucket/zoo-runs/base/A1-cpu"
    with pytest.raises(UserError):
        st.run_dir("base", "../x", "cpu")
    with pytest.raises(UserError):
        st.run_dir("..", "A1", "cpu")


def test_inside_helper(tmp_path):
    assert inside(tmp_path, "a", "b-c") == (tmp_path / "a" / "b-c").resolve()
    for parts in (("..",), ("a", "../../b"), ("/etc",)):
        with pytest.raises(UserError):
            inside(tmp_path, *parts)


def test_train_out_refuses_an_escaping_default_folder(tmp_path, monkeypatch):
    """`zoo train` without --out names its folder from the spec; it must stay in runs/train."""
    from zoo.commands import cmd_train
    import argparse
    v = victim(tmp_path)
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "s.yaml"
    f.write_text('variants:\n  "../../../victim": {}\n')
    args = argparse.Namespace(spec=str(f), variant=None, profile="smoke", set=None, out=None, data_dir=None)
    with pytest.raises(SpecError, match="not a safe name"):
        cmd_train(args)
    assert untouched(v) and not (tmp_path / "runs").exists()
