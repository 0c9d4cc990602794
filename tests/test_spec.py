"""The spec language: every paper spec resolves; every kind of user mistake exits 2 naming file, line, field."""
import json
import re
import subprocess
import sys

import pytest

from zoo.spec import SpecError, resolve, spec_files
from helpers import run


def test_validate_all_specs(repo, capsys):
    code, out, _ = run("validate", str(repo / "specs"), capsys=capsys)
    assert code == 0
    files = spec_files([repo / "specs"])
    assert len(files) >= 13
    for f in files:
        assert f"ok    {f}" in out
    assert "profiles" not in out


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_spec_resolves_under_each_profile(repo, profile):
    for f in spec_files([repo / "specs"]):
        for c in resolve(f, profile=profile):
            assert c.profile == profile


def test_variant_names_are_the_papers_rows(repo):
    from zoo.paper import TABLE3
    names = {c.variant for f in ("base", "table3_A", "table3_B", "table3_C", "table3_D", "table3_E", "big")
             for c in resolve(repo / "specs" / f"{f}.yaml")}
    assert names == {r[0] for r in TABLE3}


def test_inheritance_and_overrides(repo):
    a1 = resolve(repo / "specs/table3_A.yaml", "A1")[0]
    assert (a1.model.h, a1.model.d_k, a1.model.d_v, a1.model.d_ff, a1.model.N) == (1, 512, 512, 2048, 6)
    b1 = resolve(repo / "specs/table3_B.yaml", "B1")[0]
    assert (b1.model.d_k, b1.model.d_v) == (16, 64)  # row B changes d_k only
    fr_big = resolve(repo / "specs/table2_en_fr_big.yaml")[0]
    assert fr_big.model.dropout == 0.1 and fr_big.model.d_model == 1024 and fr_big.data.vocab_size == 32000
    assert fr_big.eval.average_checkpoints == 20 and fr_big.eval.split == "test"
    wsj = resolve(repo / "specs/table4_wsj.yaml")[0]
    assert (wsj.model.N, wsj.model.d_model, wsj.data.vocab_size, wsj.eval.beam_size,
            wsj.eval.length_penalty, wsj.eval.max_len_offset) == (4, 1024, 16000, 21, 0.3, 300)
    assert wsj.variant == "wsj_only" and not wsj.model.word_pointer  # the paper's model as it stands
    assert resolve(repo / "specs/table4_wsj.yaml", "wsj_only_pointer")[0].model.word_pointer  # ours, a variant
    s = resolve(repo / "specs/table3_D.yaml", "D2", sets=["model.dropout=0.25", "train.steps=7"])[0]
    assert s.model.dropout == 0.25 and s.train.steps == 7


def test_profile_keeps_ablation_ratios(repo):
    for c in resolve(repo / "specs/table3_A.yaml", profile="cpu") + resolve(repo / "specs/table3_C.yaml", "C4", "cpu"):
        assert c.model.h * c.model.d_k == c.model.d_model
    d = {c.variant: c for c in resolve(repo / "specs/table3_D.yaml", profile="cpu")}
    assert d["D1"].model.dropout == 0.0 and d["D4"].train.label_smoothing == 0.2
    assert resolve(repo / "specs/table3_C.yaml", "C1", "cpu")[0].model.N < resolve(repo / "specs/table3_C.yaml", "C3", "cpu")[0].model.N


def test_new_variants_need_no_code(tmp_path, repo, capsys):
    (tmp_path / "mine.yaml").write_text(
        f"extends: {repo / 'specs/base.yaml'}\n"
        "variants:\n"
        "  odd_heads: {model: {h: 6, d_k: 48, d_v: 80}}\n"
        "  shallow_wide: {model: {N: 3, d_ff: 3072}}\n"
        "  d384: {model: {d_model: 384}}\n")
    code, out, _ = run("validate", str(tmp_path / "mine.yaml"), capsys=capsys)
    assert code == 0 and "3 variants" in out
    code, out, _ = run("params", str(tmp_path / "mine.yaml"), "--json", capsys=capsys)
    rows = json.loads(out)
    assert [r["variant"] for r in rows] == ["odd_heads", "shallow_wide", "d384"]
    assert all(r["params"] == r["params_analytic"] for r in rows)


BAD = {  # name: (file text, expected line, expected field fragment, message fragment)
    "syntax": ("model:\n  N: 6\n  d_model: [512\n", 4, "", "YAML syntax error"),
    "empty": ("", 1, "", "empty"),
    "comments_only": ("# nothing here\n", 1, "", "empty"),
    "list_top": ("- model\n- data\n", 1, "", "mapping"),
    "list_section": ("model:\n  - N\n  - 6\n", 1, "model", "mapping"),
    "wrong_type": ("model:\n  N: six\n", 2, "model.N", "integer"),
    "unknown_key": ("model:\n  N: 6\n  dropuot: 0.1\n", 3, "model.dropuot", "did you mean 'dropout'"),
    "unknown_section": ("modle:\n  N: 6\n", 1, "modle", "did you mean 'model'"),
    "range": ("model:\n  dropout: 1.5\n", 2, "model.dropout", "less than 1"),
    "beam": ("eval:\n  beam_size: 0\n", 2, "eval.beam_size", "greater than or equal to 1"),
    "missing_extends": ("extends: nope.yaml\n", 1, "extends", "not found"),
    "duplicate_variant": ("variants:\n  A1: {model: {h: 1}}\n  A1: {model: {h: 2}}\n", 3, "variants.A1", "duplicate"),
    "duplicate_key": ("model:\n  N: 6\n  N: 4\n", 3, "model.N", "duplicate"),
    "bad_variant_value": ("variants:\n  A1: {model: {h: -1}}\n", 2, "model.h", "greater than or equal to 1"),
    "odd_sinusoid": ("model:\n  d_model: 511\n", 1, "model", "even"),
    "enum": ("model:\n  positional_encoding: rotary\n", 2, "model.positional_encoding", "sinusoidal"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_specs_exit_2_with_file_line_field(tmp_path, case, capsys):
    text, line, field, msg = BAD[case]
    f = tmp_path / f"{case}.yaml"
    f.write_text(text)
    code, out, err = run("validate", str(f), capsys=capsys)
    assert code == 2
    m = re.search(rf"FAIL  {re.escape(str(f))}:(\d+): (.*)", out)
    assert m, out
    assert int(m.group(1)) == line, out
    assert field in m.group(2) and msg in m.group(2), out
    assert "Traceback" not in out + err


def test_non_utf8_and_cycles(tmp_path, capsys):
    f = tmp_path / "latin1.yaml"
    f.write_bytes(b"model:\n  N: 6\n# caf\xe9\n")
    code, out, _ = run("validate", str(f), capsys=capsys)
    assert code == 2 and f"{f}:3: not valid UTF-8" in out
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    code, out, _ = run("validate", str(tmp_path / "a.yaml"), capsys=capsys)
    assert code == 2 and "cycle in extends" in out and "a.yaml" in out


def test_error_points_at_the_line_that_set_the_value(tmp_path, repo):
    (tmp_path / "parent.yaml").write_text("model:\n  N: 6\n  h: 8\n")
    (tmp_path / "child.yaml").write_text("extends: parent.yaml\nvariants:\n  x:\n    model:\n      h: zero\n")
    with pytest.raises(SpecError) as e:
        resolve(tmp_path / "child.yaml")
    assert str(e.value).startswith(f"{tmp_path / 'child.yaml'}:5: model.h:")


def test_set_errors_and_unknown_profile(repo, capsys):
    code, _, err = run("show", str(repo / "specs/base.yaml"), "--set", "model.h=many", capsys=capsys)
    assert code == 2 and "--set model.h=many: model.h:" in err
    code, _, err = run("show", str(repo / "specs/base.yaml"), "--set", "modle.h=2", capsys=capsys)
    assert code == 2 and "did you mean 'model'" in err
    code, _, err = run("show", str(repo / "specs/base.yaml"), "--profile", "smok", capsys=capsys)
    assert code == 2 and "did you mean 'smoke'" in err
    code, _, err = run("show", str(repo / "specs/table3_A.yaml"), "--variant", "A9", capsys=capsys)
    assert code == 2 and "no variant 'A9'" in err


def test_show_json_shape(repo, capsys):
    code, out, _ = run("show", str(repo / "specs/table3_A.yaml"), "--json", capsys=capsys)
    rows = json.loads(out)
    assert code == 0 and [r["variant"] for r in rows] == ["A1", "A2", "A3", "A4"]
    for r in rows:
        assert {"variant", "model", "data", "train", "eval", "resources"} <= set(r)
        assert r["model"]["d_model"] == 512 and r["train"]["optimizer"]["betas"] == [0.9, 0.98]


def test_cli_start_up_imports_no_torch_or_ray(repo):
    code = ("import sys; from zoo.cli import main; main(['validate', '%s']); "
            "bad = [m for m in ('torch', 'ray', 'pandas') if m in sys.modules]; assert not bad, bad" % (repo / "specs"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "zoo.cli", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "validate" in r.stdout


def test_builtin_specs_by_name_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no specs/ here
    code, out, _ = run("show", "table3_A", "--variant", "A1", "--profile", "smoke", capsys=capsys)
    assert code == 0 and "variant A1" in out
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: base\nmodel: {h: 4}\n")  # a user's spec on top of the built-in base
    c = resolve(mine)[0]
    assert c.model.h == 4 and c.model.d_model == 512
    code, _, err = run("show", "tabel3_A", capsys=capsys)
    assert code == 2 and "no built-in spec of that name" in err and "table3_A" in err and "Traceback" not in err


def test_profiles_scale_the_checkpoint_cadence_with_the_steps():
    """The paper checkpoints every 10 minutes (base 1500 steps of 100K, big 600 of 300K) and averages
    the last 5 / 20: a scaled run keeps those shares, so averaging spans the same late part of training."""
    for stem, every, k in (("table2_en_de_base", 1500, 5), ("table2_en_de_big", 600, 20)):
        paper_cfg = resolve(f"specs/{stem}.yaml")[0]
        assert paper_cfg.train.checkpoint_every == every and paper_cfg.eval.average_checkpoints == k
        for profile in ("quick", "cpu"):
            c = resolve(f"specs/{stem}.yaml", profile=profile)[0]
            share = c.train.checkpoint_every * k / c.train.steps
            assert share == pytest.approx(every * k / paper_cfg.train.steps, rel=0.25), (stem, profile)


def test_seeds_axis_expands_variants_into_trials(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text("extends: base\nseeds: [1, 2]\nvariants:\n  a: {model: {h: 4}}\n  b: {}\n")
    cfgs = resolve(f)
    assert [(c.variant, c.trial, c.train.seed) for c in cfgs] == [
        ("a", "a-seed1", 1), ("a", "a-seed2", 2), ("b", "b-seed1", 1), ("b", "b-seed2", 2)]
    assert len({c.config_hash() for c in cfgs}) == 4
    assert [c.trial for c in resolve(f, "b", seeds=[7])] == ["b-seed7"]  # --seeds wins over the file
    assert [c.trial for c in resolve("specs/big.yaml")] == ["big"]  # no axis: the trial is the variant
    for bad in ("[]", "[1, 1]", "[true]", "[-1]", "3", "[1.5]"):
        f.write_text(f"extends: base\nname: x\nseeds: {bad}\n")
        with pytest.raises(SpecError, match=r"s\.yaml:3: seeds: must be a list of 1 to 100 different integers"):
            resolve(f)


def test_a_profile_can_keep_head_size_by_scaling_heads(tmp_path):
    """scale.heads (issue 27): h scales with the width where the paper ties d_k = d_model / h, so every
    row's head is the paper's divided by one factor, and rows A compare head counts, not head sizes."""
    prof = tmp_path / "p.yaml"
    prof.write_text("description: x\nscale: {width: 0.125, depth: 0.5, heads: 0.5}\n")
    got = {c.variant: (c.model.h, c.model.d_k) for spec in ("base", "table3_A", "table3_B", "big")
           for c in resolve(spec, profile=str(prof))}
    assert got == {"base": (4, 16), "A1": (1, 64), "A2": (2, 32), "A3": (8, 8), "A4": (16, 4),
                   "B1": (4, 4), "B2": (4, 8), "big": (8, 16)}


def test_a_profile_extends_another_and_changes_only_what_it_says(tmp_path):
    """An add-on budget (a longer run of the same proxy) names the proxy's profile and its own steps."""
    (tmp_path / "proxy.yaml").write_text(
        "description: the proxy\nseeds: [1, 2, 3]\nscale: {width: 0.125, depth: 0.5, heads: 0.5}\n"
        "set:\n  train: {steps: 1000, batch_tokens: 2000, schedule: {warmup_steps: 250, lr_scale: 0.5}}\n")
    (tmp_path / "longer.yaml").write_text(
        "extends: proxy\ndescription: longer\nseeds: [1, 2]\nset:\n  train: {steps: 3000}\n")
    cs = resolve("base", profile=str(tmp_path / "longer.yaml"))
    c = cs[0]
    assert len(cs) == 2 and (c.model.d_model, c.model.h, c.model.N) == (64, 4, 3)  # the proxy's scale
    assert (c.train.steps, c.train.batch_tokens, c.train.schedule.warmup_steps, c.train.schedule.lr_scale) == \
        (3000, 2000, 250, 0.5)  # its own steps; the rest of `set` merged from the proxy
    assert c.profile_description.startswith("longer")
    (tmp_path / "a.yaml").write_text("extends: b\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(SpecError, match=r"a\.yaml:1: extends: profiles extend each other in a cycle"):
        resolve("base", profile=str(tmp_path / "a.yaml"))
    (tmp_path / "c.yaml").write_text("description: x\nextends: paper\n")
    with pytest.raises(SpecError, match=r"c\.yaml:2: extends: profile 'paper' not found"):
        resolve("base", profile=str(tmp_path / "c.yaml"))
    (tmp_path / "d.yaml").write_text("extends: nowhere\n")
    with pytest.raises(SpecError, match=r"d\.yaml:1: extends: profile 'nowhere' not found"):
        resolve("base", profile=str(tmp_path / "d.yaml"))


def test_config_hashes_stay_put_when_fields_are_added():
    """A trial is finished when its config hash matches; a code change that moves the hash of an
    unchanged spec makes every store redo (and wipe) its finished trials. These values were computed
    before train.schedule.cooldown and eval.ppl_splits existed: a new field must leave the hash of a
    config that does not use it alone (zoo.config.Config.config_hash drops it when off)."""
    assert resolve("base", None, "smoke")[0].config_hash() == "15b28feb430c5331"
    assert [c.config_hash() for c in resolve("base", None, "ablation_v1")][:2] == ["574cb86203b8c0b5", "c1eb459a397ba53e"]
    assert resolve("table3_A", "A1", "cpu")[0].config_hash() == "b6a1f16ef40b980e"


def test_a_spec_without_data_gets_the_profiles_corpus(tmp_path):
    """No `data:` means the default corpus (WMT14 EN-DE), which the cpu profile maps to Multi30k like any other."""
    f = tmp_path / "bare.yaml"
    f.write_text("description: no data section\nmodel: {N: 2}\n")
    (cfg,) = resolve(f, profile="cpu")
    assert cfg.data.dataset == "multi30k" and cfg.data.vocab_size == 8000
    assert resolve(f, profile="paper")[0].data.dataset == "wmt14_en_de"
