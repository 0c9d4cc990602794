"""Hostile specs (issue 10): names that would become paths outside the storage, YAML that expands
without bound or names Python objects, values that overflow, and a corpus of malformed files that
must each exit 2 with `path:line: field: message` and no traceback, from `zoo validate`, `zoo show`
and `zoo run` alike."""
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.runner.folders import wipe as _wipe
from zoo.runner.sweep import Storage
from zoo.cli import main
from zoo.errors import UserError
from zoo.paths import inside
from zoo.spec import SpecError, resolve

REPO = Path(__file__).resolve().parents[1]


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


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


# -- 1. path safety --------------------------------------------------------------------------------

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
        _wipe(escaping, st.scratch_root)
    with pytest.raises(UserError, match="outside the storage folder"):
        _wipe(str(v), st.scratch_root)
    # a symlink planted inside the storage that points outside it is refused too
    (tmp_path / "storage" / "base").mkdir(parents=True)
    (tmp_path / "storage" / "base" / "A1-cpu").symlink_to(v)
    with pytest.raises(UserError, match="outside the storage folder"):
        _wipe(st.run_dir("base", "A1", "cpu"), st.scratch_root)
    assert untouched(v)
    # inside the storage it does its job: checkpoints and summary go, the folder stays
    ok = tmp_path / "storage" / "base" / "A2-cpu"
    (ok / "checkpoints").mkdir(parents=True)
    (ok / "summary.json").write_text("{}")
    _wipe(st.run_dir("base", "A2", "cpu"), st.scratch_root)
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


# -- 3. YAML resource limits -------------------------------------------------------------------------

LAUGHS = "paper: {group: x}\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a runaway expansion dies, not the machine


def test_billion_laughs_fails_fast_in_little_memory(tmp_path):
    f = tmp_path / "laughs.yaml"
    f.write_text(LAUGHS)
    assert len(LAUGHS) < 2000
    code = ("import resource, sys; from zoo.cli import main; rc = main(['validate', sys.argv[1]]); "
            "print(open('/proc/self/status').read()); sys.exit(rc)")  # VmHWM: this process's peak (ru_maxrss survives exec)
    r = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=60,
                       preexec_fn=_limit_memory)
    assert r.returncode == 2, r.stdout + r.stderr[-2000:]
    assert f"{f}:2: l0: YAML anchors and aliases (&name, *name) are not allowed" in r.stdout
    assert int(re.search(r"VmHWM:\s+(\d+) kB", r.stdout).group(1)) < 300_000  # start-up size, no expansion


@pytest.mark.parametrize("text, line, fragment", [
    ('model:\n  N: !!python/object/apply:os.system ["echo pwned"]\n', 2, "model.N: the YAML tag '!!python/object/apply:os.system' is not allowed"),
    ("model: !!python/name:os.system\n", 1, "model: the YAML tag '!!python/name:os.system' is not allowed"),
    ("!!python/object:collections.OrderedDict\nmodel: {N: 2}\n", 1, "the YAML tag '!!python/object:collections.OrderedDict'"),
    ("model:\n  <<: {N: 2}\n", 2, "model: YAML merge keys (<<) are not allowed"),
    ("model: &m {N: 2}\n", 1, "model: YAML anchors and aliases"),
])
def test_tags_merge_keys_and_anchors_are_clear_errors(tmp_path, capsys, text, line, fragment):
    f = tmp_path / "t.yaml"
    f.write_text(text)
    code, out, err = run("validate", f, capsys=capsys)
    assert code == 2 and f"FAIL  {f}:{line}: {fragment}" in out and "Traceback" not in out + err


def test_oversized_file_is_refused_before_parsing(tmp_path, capsys):
    f = tmp_path / "big.yaml"
    f.write_text("model:\n  N: 6\n" + "# padding\n" * 120_000)
    code, out, _ = run("validate", f, capsys=capsys)
    assert code == 2 and f"{f}:1: the file is larger than 1000 KB" in out


# -- 4 and 5. numbers that overflow, non-finite floats, lax coercion, corpora ------------------------------

@pytest.mark.parametrize("setting, fragment", [
    ("train.steps=99999999999999999999", "train.steps: Input should be less than or equal to 100000000"),
    ("train.batch_tokens=9223372036854775808", "train.batch_tokens: Input should be less than or equal to"),
    ("train.schedule.lr_scale=.inf", "train.schedule.lr_scale: Input should be a finite number"),
    ("model.dropout=.nan", "model.dropout: Input should be a finite number"),
    ("train.seed=-1", "train.seed: Input should be greater than or equal to 0"),
    ("model.N=true", "model.N: Input should be a valid integer (got True)"),
    ("model.N='6'", "model.N: Input should be a valid integer (got '6')"),
    ("model.N=6.0", "model.N: Input should be a valid integer (got 6.0)"),
    ("model.share_embeddings=1", "model.share_embeddings: Input should be a valid boolean"),
    ("data.dataset=wmt14_en_dee", "data.dataset: unknown corpus 'wmt14_en_dee'; did you mean 'wmt14_en_de'?"),
    ("eval.split=tset", "eval.split: corpus wmt14_en_de has no split 'tset'; did you mean 'test'?"),
])
def test_set_overflow_non_finite_and_strict_types(capsys, setting, fragment):
    code, _, err = run("show", REPO / "specs/base.yaml", "--set", setting, capsys=capsys)
    assert code == 2 and f"--set {setting}: {fragment}" in err, err


def test_yaml_ints_still_fill_float_fields(tmp_path):
    f = tmp_path / "ints.yaml"
    f.write_text("model: {dropout: 0}\ntrain: {schedule: {lr_scale: 2}, optimizer: {betas: [0, 0.5], eps: 1e-8}}\n")
    c = resolve(f)[0]
    assert c.model.dropout == 0.0 and c.train.schedule.lr_scale == 2.0 and c.train.optimizer.betas == (0.0, 0.5)
    assert c.train.optimizer.eps == 1e-8  # YAML 1.1 would read 1e-8 as a string


def test_unknown_dataset_fails_validation_without_importing_torch(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text("model: {N: 2}\ndata:\n  dataset: multi30K\n")
    code = ("import sys; from zoo.cli import main; rc = main(['validate', sys.argv[1]]); "
            "assert not [m for m in ('torch', 'ray', 'pandas') if m in sys.modules]; sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert f"{f}:3: data.dataset: unknown corpus 'multi30K'; did you mean 'multi30k'?" in r.stdout


def test_extends_a_directory_names_the_file_line_and_field(tmp_path, capsys):
    (tmp_path / "specs").mkdir()
    f = tmp_path / "child.yaml"
    f.write_text("model: {N: 2}\nextends: specs\n")
    code, out, _ = run("validate", f, capsys=capsys)
    assert code == 2 and f"FAIL  {f}:2: extends: 'specs' is a directory" in out


# -- 6. a corpus of malformed specs ------------------------------------------------------------------

def _chain(tmp_path):  # 20 files each extending the next: longer than any real chain
    for i in range(20):
        (tmp_path / f"c{i}.yaml").write_text(f"extends: c{i + 1}.yaml\n" if i < 19 else "model: {N: 2}\n")
    return (tmp_path / "c0.yaml").read_bytes()


def _symlink_loop(tmp_path):
    (tmp_path / "loop1.yaml").symlink_to(tmp_path / "loop2.yaml")
    (tmp_path / "loop2.yaml").symlink_to(tmp_path / "loop1.yaml")
    return b"extends: loop1.yaml\n"


def _device(tmp_path):
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    return b"extends: zero.yaml\n"


def _dir(tmp_path):
    (tmp_path / "sub.yaml").mkdir()
    return b"extends: sub.yaml\n"


CORPUS = {  # name: file bytes (or a function of tmp_path that sets the scene and returns them)
    # YAML syntax
    "unclosed_flow": b"model: {N: 6\n",
    "bad_indent": b"model:\n  N: 6\n d_ff: 3\n",
    "tab_indent": b"model:\n\tN: 6\n",
    "two_documents": b"model: {N: 2}\n---\nmodel: {N: 3}\n",
    "only_separator": b"---\n",
    "whitespace_only": b"   \n\n  \n",
    "empty": b"",
    "scalar_top": b"just a string\n",
    "unterminated_quote": b'model:\n  positional_encoding: "sinus\n',
    # encodings and bytes
    "latin1": b"description: caf\xe9\n",
    "utf16_bom": "model:\n  N: 2\n".encode("utf-16"),
    "utf8_bom_then_error": b"\xef\xbb\xbfmodel:\n  N: six\n",
    "binary": bytes(range(256)) * 4,
    "png_header": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "nul_char": b"model:\n  N: 6\x00\n",
    "bell_char": b"model:\n  positional_encoding: \x07\n",
    "bom_in_key": "model:\n  \ufeffN: 6\n".encode(),
    # structure
    "list_top": b"- model\n- data\n",
    "list_section": b"train: [1, 2]\n",
    "string_section": b"model: big\n",
    "null_value": b"model:\n  N: null\n",
    "list_value": b"model:\n  d_model: [512]\n",
    "mapping_value": b"model:\n  N: {six: 6}\n",
    "list_key": b"model:\n  [a, b]: 1\n",
    "mapping_key": b"? {a: 1}\n: 2\n",
    "int_key_top": b"1: 2\n",
    "null_key_top": b"null: 2\n",
    "variants_list": b"variants: [A1, A2]\n",
    "variants_empty": b"variants: {}\n",
    "variant_overrides_list": b"variants:\n  A1: [1, 2]\n",
    "variant_section_list": b"variants:\n  A1: {model: [1]}\n",
    "variant_section_scalar": b"variants:\n  A1: {train: fast}\n",
    "variant_unknown_section": b"variants:\n  A1: {modle: {N: 2}}\n",
    "paper_list": b"paper: [3, A]\n",
    "paper_string": b"paper: table3\n",
    "description_list": b"description: [a, b]\n",
    "betas_short": b"train:\n  optimizer: {betas: [0.9]}\n",
    "betas_strings": b"train:\n  optimizer: {betas: ['0.9', '0.98']}\n",
    "deep_flow": b"model: " + b"[" * 200 + b"]" * 200 + b"\n",
    "deep_block": "".join(f"{'  ' * i}k{i}:\n" for i in range(60)).encode() + b"  " * 60 + b"v: 1\n",
    # keys
    "unknown_top": b"modle:\n  N: 6\n",
    "unknown_field": b"model:\n  dropuot: 0.1\n",
    "lookalike_key": "m\u043edel:\n  N: 6\n".encode(),  # Cyrillic o
    "duplicate_top": b"model: {N: 2}\nmodel: {N: 3}\n",
    "duplicate_nested": b"variants:\n  A1:\n    model: {h: 1, h: 2}\n",
    "duplicate_variant": b"variants:\n  A1: {}\n  A1: {}\n",
    "long_key": b"model:\n  " + b"k" * 200_000 + b": 1\n",
    # values: types, ranges, sizes, non-finite
    "bool_for_int": b"model:\n  N: true\n",
    "yes_for_float": b"model:\n  dropout: yes\n",
    "str_for_int": b"model:\n  N: '6'\n",
    "float_for_int": b"model:\n  h: 8.5\n",
    "int_for_bool": b"model:\n  share_embeddings: 1\n",
    "int_for_str": b"data:\n  dataset: 30\n",
    "negative": b"model:\n  N: -1\n",
    "zero_steps": b"train:\n  steps: 0\n",
    "huge_steps": b"train:\n  steps: 99999999999999999999\n",
    "int64_overflow": b"train:\n  batch_tokens: 9223372036854775808\n",
    "huge_digits": b"train:\n  steps: " + b"9" * 5000 + b"\n",
    "huge_float": b"train:\n  schedule: {lr_scale: 1.0e400}\n",
    "inf": b"train:\n  schedule: {lr_scale: .inf}\n",
    "neg_inf": b"train:\n  time_limit_minutes: -.inf\n",
    "nan": b"model:\n  dropout: .nan\n",
    "bad_date": b"train:\n  seed: 2001-13-45\n",
    "enum": b"model:\n  positional_encoding: rotary\n",
    "long_string": b"description: " + b"x" * 900_000 + b"\n",
    "long_split": b"eval:\n  split: " + b"d" * 100 + b"\n",
    "odd_d_model": b"model:\n  d_model: 511\n",
    "averaging_without_checkpoints": b"eval: {average_checkpoints: 20}\ntrain: {keep_checkpoints: 5}\n",
    # names that become paths
    "variant_traversal": b'variants:\n  "../../../../victim": {}\n',
    "variant_absolute": b'variants:\n  "/tmp/x": {}\n',
    "variant_rtl": 'variants:\n  "A1\u202e": {}\n'.encode(),
    "variant_zero_width": 'variants:\n  "A\u200b1": {}\n'.encode(),
    "variant_too_long": b"variants:\n  " + b"v" * 100 + b": {}\n",
    "name_traversal": b"name: ../x\n",
    "dataset_traversal": b"data:\n  dataset: ../../etc\n",
    "dataset_unknown": b"data:\n  dataset: wmt14_en_dee\n",
    "split_unknown": b"eval:\n  split: devtest\n",
    "extra_split_traversal": b"eval:\n  extra_splits: [../../x]\n",
    # YAML features specs refuse
    "alias": b"a: &x {N: 2}\nmodel: *x\n",  # (billion laughs: its own test, in a memory-capped process)
    "merge_key": b"model:\n  <<: {N: 2}\n",
    "python_tag": b'model:\n  N: !!python/object/apply:os.system ["true"]\n',
    "custom_tag": b"model: !foo {N: 2}\n",
    "binary_tag": b"description: !!binary aGVsbG8=\n",
    "set_tag": b"eval:\n  extra_splits: !!set {test: null}\n",
    # extends
    "extends_missing": b"extends: nope.yaml\n",
    "extends_list": b"extends: [a.yaml]\n",
    "extends_empty": b"extends: ''\n",
    "extends_self": b"extends: self.yaml\n",  # the file is written as self.yaml below
    "extends_not_yaml": b"extends: /etc/hostname\n",
    "extends_directory": _dir,
    "extends_symlink_loop": _symlink_loop,
    "extends_device": _device,
    "extends_chain_too_long": _chain,
}


@pytest.fixture(autouse=True)
def _no_ray_here(monkeypatch):
    """`zoo run` on a malformed spec must stop before Ray: make starting one an obvious failure."""
    import zoo.runner.local as local
    monkeypatch.setattr(local.LocalRay, "start", lambda self: pytest.fail("zoo run started Ray for a bad spec"))


@pytest.mark.parametrize("case", sorted(CORPUS))
@pytest.mark.parametrize("command", ["validate", "show", "run"])
def test_malformed_corpus_exits_2_with_path_line(tmp_path, monkeypatch, capsys, case, command):
    monkeypatch.chdir(tmp_path)  # `zoo run` would create ./runs here
    body = CORPUS[case]
    body = body(tmp_path) if callable(body) else body
    f = tmp_path / ("self.yaml" if case == "extends_self" else "spec.yaml")
    f.write_bytes(body)
    code, out, err = run(command, f, capsys=capsys)
    assert code == 2, (out, err)
    text = out + err
    assert "Traceback" not in text
    msg = re.search(r"^(?:FAIL  |zoo: error: )(.*)$", text, re.M).group(1)
    # path:line: [field: ]message, the path being this spec or a file it extends
    m = re.match(rf"({re.escape(str(tmp_path))}/[^:]+|/etc/hostname):(\d+): \S", msg)
    assert m, msg
    assert len(msg) < 600, f"a {len(msg)}-character error: long values must be cut"
    assert not (tmp_path / "runs").exists() or command == "run"


def test_pipes_and_devices_are_refused_without_reading(tmp_path, capsys):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # opening it would wait forever for a writer
    for f in (fifo, Path("/dev/zero")):  # reading this one would never end
        code, out, _ = run("validate", f, capsys=capsys)
        assert code == 2 and f"FAIL  {f}:1: is not a regular file" in out


def test_a_bad_value_is_refused_even_where_a_profile_would_replace_it(tmp_path, capsys):
    f = tmp_path / "inf.yaml"
    f.write_text("extends: base\nvariants:\n  v:\n    train: {schedule: {lr_scale: .inf}}\n")
    for profile in ("paper", "smoke"):
        code, out, _ = run("validate", f, "--profile", profile, capsys=capsys)
        assert code == 2 and f"{f}:4: train.schedule.lr_scale:" in out, out
