"""Hostile and malformed specs (issue 10): each case of the table below is a spec file that `zoo validate`
refuses with exit 2, no traceback and one short message `path:line: field: what is allowed`, naming the line
and field the case expects. `zoo show` and `zoo run` load a spec through another path (one error raised, not
every error listed; `run` checks the file under the paper profile before Ray): a case of each kind goes
through them too, and they must name the same place."""
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, NamedTuple

import pytest

from helpers import REPO, run


class Case(NamedTuple):
    body: bytes | Callable[[Path], bytes]  # the file, or a function of tmp_path that sets the scene and returns it
    line: int  # the line the message names
    field: str | None  # the field it names; None: the file as a whole (its bytes, its YAML syntax)
    words: str  # what the message says there, in part
    file: str = "spec.yaml"  # the file it names: the spec, or a file its extends chain reaches


SAFE = "is not a safe name"
FINITE = "Input should be a finite number"
TAG = "is not allowed; specs hold plain mappings"


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


CASES = {
    # YAML syntax
    "unclosed_flow": Case(b"model: {N: 6\n", 2, None, "YAML syntax error: did not find expected ',' or '}'"),
    "bad_indent": Case(b"model:\n  N: 6\n d_ff: 3\n", 3, None, "YAML syntax error: did not find expected key"),
    "tab_indent": Case(b"model:\n\tN: 6\n", 2, None, "YAML syntax error: found character that cannot start any token"),
    "two_documents": Case(b"model: {N: 2}\n---\nmodel: {N: 3}\n", 2, None, "a spec is one YAML document"),
    "only_separator": Case(b"---\n", 1, None, "file is empty"),
    "whitespace_only": Case(b"   \n\n  \n", 1, None, "file is empty"),
    "empty": Case(b"", 1, None, "file is empty; a spec needs at least one of model, data"),
    "scalar_top": Case(b"just a string\n", 1, None, "the top level must be a mapping of sections, not a string"),
    "unterminated_quote": Case(b'model:\n  positional_encoding: "sinus\n', 3, None,
                               "YAML syntax error: found unexpected end of stream"),
    # encodings and bytes
    "latin1": Case(b"description: caf\xe9\n", 1, None, "not valid UTF-8 (byte 0xe9)"),
    "not_utf8_later": Case(b"model:\n  N: 6\ndescription: caf\xe9\n", 3, None, "not valid UTF-8 (byte 0xe9)"),
    "utf16_bom": Case("model:\n  N: 2\n".encode("utf-16"), 1, None, "not valid UTF-8 (byte 0xff)"),
    "utf8_bom_then_error": Case(b"\xef\xbb\xbfmodel:\n  N: six\n", 2, "model.N", "valid integer (got 'six')"),
    "binary": Case(bytes(range(256)) * 4, 2, None, "not valid UTF-8 (byte 0x80)"),
    "png_header": Case(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 1, None, "not valid UTF-8 (byte 0x89)"),
    "nul_char": Case(b"model:\n  N: 6\x00\n", 2, None, "character U+0000 is not allowed in YAML"),
    "bell_char": Case(b"model:\n  positional_encoding: \x07\n", 2, None, "character U+0007 is not allowed in YAML"),
    "bom_in_key": Case("model:\n  \ufeffN: 6\n".encode(), 2, "model.\\ufeffN", "a look-alike letter?); did you mean 'N'?"),
    # structure
    "list_top": Case(b"- model\n- data\n", 1, None, "the top level must be a mapping of sections, not a list"),
    "list_section": Case(b"train: [1, 2]\n", 1, "train", "must be a mapping of fields, not a list"),
    "string_section": Case(b"model: big\n", 1, "model", "must be a mapping of fields, not a string"),
    "null_value": Case(b"model:\n  N: null\n", 2, "model.N", "valid integer (got None)"),
    "list_value": Case(b"model:\n  d_model: [512]\n", 2, "model.d_model", "valid integer (got [512])"),
    "mapping_value": Case(b"model:\n  N: {six: 6}\n", 2, "model.N", "valid integer"),
    "list_key": Case(b"model:\n  [a, b]: 1\n", 2, "model", "a key must be a plain name, not a list"),
    "mapping_key": Case(b"? {a: 1}\n: 2\n", 1, None, "a key must be a plain name, not a mapping"),
    "int_key_top": Case(b"1: 2\n", 1, "1", "unknown top-level key '1'. Allowed: claims, data"),
    "null_key_top": Case(b"null: 2\n", 1, "null", "unknown top-level key 'null'"),
    "variants_list": Case(b"variants: [A1, A2]\n", 1, "variants", "must be a non-empty mapping of name -> overrides"),
    "variants_empty": Case(b"variants: {}\n", 1, "variants", "must be a non-empty mapping of name -> overrides"),
    "variant_overrides_list": Case(b"variants:\n  A1: [1, 2]\n", 2, "variants.A1", "overrides must be a mapping of sections"),
    "variant_section_list": Case(b"variants:\n  A1: {model: [1]}\n", 2, "variants.A1.model", "not a list"),
    "variant_section_scalar": Case(b"variants:\n  A1: {train: fast}\n", 2, "variants.A1.train", "not a string"),
    "variant_unknown_section": Case(b"variants:\n  A1: {modle: {N: 2}}\n", 2, "variants.A1.modle",
                                    "unknown section 'modle'; did you mean 'model'?"),
    "paper_list": Case(b"paper: [3, A]\n", 1, "paper", "valid dictionary or instance of PaperRef (got [3, 'A'])"),
    "paper_string": Case(b"paper: table3\n", 1, "paper", "(got 'table3')"),
    "description_list": Case(b"description: [a, b]\n", 1, "description", "valid string (got ['a', 'b'])"),
    "betas_short": Case(b"train:\n  optimizer: {betas: [0.9]}\n", 2, "train.optimizer.betas.1", "Field required (got [0.9])"),
    "betas_strings": Case(b"train:\n  optimizer: {betas: ['0.9', '0.98']}\n", 2, "train.optimizer.betas.0",
                          "valid number (got '0.9')"),
    "deep_flow": Case(b"model: " + b"[" * 200 + b"]" * 200 + b"\n", 1, "model" + ".0" * 31, "nested deeper than 32 levels"),
    "deep_block": Case("".join(f"{'  ' * i}k{i}:\n" for i in range(60)).encode() + b"  " * 60 + b"v: 1\n", 33,
                       ".".join(f"k{i}" for i in range(32)), "nested deeper than 32 levels"),
    # keys
    "unknown_top": Case(b"modle:\n  N: 6\n", 1, "modle", "unknown top-level key 'modle'; did you mean 'model'?"),
    "unknown_field": Case(b"model:\n  dropuot: 0.1\n", 2, "model.dropuot", "did you mean 'dropout'? Allowed: N,"),
    "lookalike_key": Case("m\u043edel:\n  N: 6\n".encode(), 1, "m\u043edel", "a look-alike letter?); did you mean 'model'?"),
    "duplicate_top": Case(b"model: {N: 2}\nmodel: {N: 3}\n", 2, "model", "duplicate key 'model' (first set on line 1)"),
    "duplicate_nested": Case(b"variants:\n  A1:\n    model: {h: 1, h: 2}\n", 3, "variants.A1.model.h", "duplicate key 'h'"),
    "duplicate_variant": Case(b"variants:\n  A1: {}\n  A1: {}\n", 3, "variants.A1", "duplicate key 'A1' (first set on line 2)"),
    "extends_twice": Case(b"extends: a.yaml\nextends: b.yaml\n", 2, "extends", "duplicate key 'extends' (first set on line 1)"),
    "long_key": Case(b"model:\n  " + b"k" * 200_000 + b": 1\n", 2, None, "YAML syntax error"),
    # values: types, ranges, sizes, non-finite
    "bool_for_int": Case(b"model:\n  N: true\n", 2, "model.N", "valid integer (got True)"),
    "bool_for_float": Case(b"train:\n  label_smoothing: true\n", 2, "train.label_smoothing", "valid number (got True)"),
    "yes_for_float": Case(b"model:\n  dropout: yes\n", 2, "model.dropout", "valid number (got 'yes')"),
    "str_for_int": Case(b"model:\n  N: '6'\n", 2, "model.N", "valid integer (got '6')"),
    "float_for_int": Case(b"model:\n  h: 8.5\n", 2, "model.h", "valid integer (got 8.5)"),
    "float_for_int_exp": Case(b"model:\n  N: 1e3\n", 2, "model.N", "valid integer (got 1000.0)"),
    "int_for_bool": Case(b"model:\n  share_embeddings: 1\n", 2, "model.share_embeddings", "valid boolean (got 1)"),
    "int_for_str": Case(b"data:\n  dataset: 30\n", 2, "data.dataset", "valid string (got 30)"),
    "negative": Case(b"model:\n  N: -1\n", 2, "model.N", "greater than or equal to 1 (got -1)"),
    "negative_dropout": Case(b"model:\n  dropout: -0.5\n", 2, "model.dropout", "greater than or equal to 0 (got -0.5)"),
    "dropout_above_one": Case(b"model:\n  dropout: 1.5\n", 2, "model.dropout", "less than 1 (got 1.5)"),
    "negative_cpus": Case(b"resources:\n  cpus: -2\n", 2, "resources.cpus", "greater than 0 (got -2)"),
    "zero_steps": Case(b"train:\n  steps: 0\n", 2, "train.steps", "greater than or equal to 1 (got 0)"),
    "zero_beam": Case(b"eval:\n  beam_size: 0\n", 2, "eval.beam_size", "greater than or equal to 1 (got 0)"),
    "huge_steps": Case(b"train:\n  steps: 99999999999999999999\n", 2, "train.steps", "less than or equal to 100000000"),
    "int64_overflow": Case(b"train:\n  batch_tokens: 9223372036854775808\n", 2, "train.batch_tokens",
                           "less than or equal to 100000000 (got 9223372036854775808)"),
    "huge_offset": Case(b"eval:\n  max_len_offset: 99999999999999999999\n", 2, "eval.max_len_offset",
                        "less than or equal to 100000"),
    "huge_digits": Case(b"train:\n  steps: " + b"9" * 5000 + b"\n", 2, "train.steps", "cannot read this value"),
    "huge_float": Case(b"train:\n  schedule: {lr_scale: 1.0e400}\n", 2, "train.schedule.lr_scale", f"{FINITE} (got inf)"),
    "huge_time_limit": Case(b"train:\n  time_limit_minutes: 1.0e400\n", 2, "train.time_limit_minutes", f"{FINITE} (got inf)"),
    "inf": Case(b"train:\n  schedule: {lr_scale: .inf}\n", 2, "train.schedule.lr_scale", f"{FINITE} (got inf)"),
    "neg_inf": Case(b"train:\n  time_limit_minutes: -.inf\n", 2, "train.time_limit_minutes", f"{FINITE} (got -inf)"),
    "nan": Case(b"model:\n  dropout: .nan\n", 2, "model.dropout", f"{FINITE} (got nan)"),
    "nan_eps": Case(b"train:\n  optimizer: {eps: .NaN}\n", 2, "train.optimizer.eps", f"{FINITE} (got nan)"),
    "bad_date": Case(b"train:\n  seed: 2001-13-45\n", 2, "train.seed", "valid integer (got '2001-13-45')"),
    "enum": Case(b"model:\n  positional_encoding: rotary\n", 2, "model.positional_encoding",
                 "no positional component 'rotary'. Allowed: alibi, learned, none, rope, sinusoidal"),
    "long_string": Case(b"description: " + b"x" * 900_000 + b"\n", 1, "description", "at most 10000 characters"),
    "long_split": Case(b"eval:\n  split: " + b"d" * 100 + b"\n", 2, "eval.split", "at most 64 characters"),
    "odd_d_model": Case(b"model:\n  d_model: 511\n", 1, "model", "d_model must be even for sinusoidal positions (got 511)"),
    "averaging_without_checkpoints": Case(b"eval: {average_checkpoints: 20}\ntrain: {keep_checkpoints: 5}\n", 1,
                                          "eval.average_checkpoints", "needs train.keep_checkpoints >= 20 (got 5)"),
    # a variant's overrides: the field named as the section writes it, at the variant's line
    "variant_inf": Case(b"variants:\n  A1: {train: {schedule: {lr_scale: .inf}}}\n", 2, "train.schedule.lr_scale", FINITE),
    "variant_yes_for_int": Case(b"variants:\n  A1: {model: {N: yes}}\n", 2, "model.N", "valid integer (got 'yes')"),
    "variant_huge_steps": Case(b"variants:\n  A1:\n    train: {steps: 100000000000000000000000}\n", 3, "train.steps",
                               "less than or equal to 100000000"),
    # names that become paths
    "variant_traversal": Case(b'variants:\n  "../../../../victim": {}\n', 2, "variants.../../../../victim",
                              f"the variant name '../../../../victim' {SAFE}"),
    "variant_absolute": Case(b'variants:\n  "/tmp/x": {}\n', 2, "variants./tmp/x", f"'/tmp/x' {SAFE}"),
    "variant_dotdot_name": Case(b"variants:\n  ..: {}\n", 2, "variants...", f"'..' {SAFE}"),
    "variant_slash_name": Case(b"variants:\n  a/../../b: {model: {N: 2}}\n", 2, "variants.a/../../b", f"'a/../../b' {SAFE}"),
    "variant_nul_name": Case(b'variants:\n  "A\\0": {}\n', 2, "variants.A\\x00", SAFE),
    "variant_rtl": Case('variants:\n  "A1\u202e": {}\n'.encode(), 2, "variants.A1\\u202e", SAFE),
    "variant_zero_width": Case('variants:\n  "A\u200b1": {}\n'.encode(), 2, "variants.A\\u200b1", SAFE),
    "variant_too_long": Case(b"variants:\n  " + b"v" * 100 + b": {}\n", 2, "variants." + "v" * 60 + "... (100 characters)", SAFE),
    "name_traversal": Case(b"name: ../x\n", 1, "name", f"the variant name '../x' {SAFE}"),
    "dataset_traversal": Case(b"data:\n  dataset: ../../etc\n", 2, "data.dataset", f"'../../etc' {SAFE}"),
    "dataset_absolute": Case(b"data:\n  dataset: /etc\n", 2, "data.dataset", f"'/etc' {SAFE}"),
    "dataset_nul": Case(b'data:\n  dataset: "wmt14_en_de\\0"\n', 2, "data.dataset", f"'wmt14_en_de\\x00' {SAFE}"),
    "dataset_unknown": Case(b"data:\n  dataset: wmt14_en_dee\n", 2, "data.dataset",
                            "unknown corpus 'wmt14_en_dee'; did you mean 'wmt14_en_de'?"),
    "split_unknown": Case(b"eval:\n  split: devtest\n", 2, "eval.split", "corpus wmt14_en_de has no split 'devtest'"),
    "extra_split_traversal": Case(b"eval:\n  extra_splits: [../../x]\n", 2, "eval.extra_splits", f"'../../x' {SAFE}"),
    # YAML features specs refuse (billion laughs: tests/test_spec_size_limits.py, in a memory-capped process)
    "alias": Case(b"a: &x {N: 2}\nmodel: *x\n", 1, "a", "YAML anchors and aliases (&name, *name) are not allowed"),
    "anchor": Case(b"model: &m {N: 2}\n", 1, "model", "YAML anchors and aliases"),
    "alias_in_variant": Case(b"variants:\n  A1: &v {model: {N: 2}}\n  A2: *v\n", 2, "variants.A1", "YAML anchors and aliases"),
    "merge_key": Case(b"model:\n  <<: {N: 2}\n", 2, "model", "YAML merge keys (<<) are not allowed"),
    "merge_in_variant": Case(b"variants:\n  A1:\n    <<: {model: {N: 2}}\n", 3, "variants.A1", "YAML merge keys (<<)"),
    "python_tag": Case(b'model:\n  N: !!python/object/apply:os.system ["echo pwned"]\n', 2, "model.N",
                       f"the YAML tag '!!python/object/apply:os.system' {TAG}"),
    "python_name_tag": Case(b"model: !!python/name:os.system\n", 1, "model", f"the YAML tag '!!python/name:os.system' {TAG}"),
    "python_tag_top": Case(b"!!python/object:collections.OrderedDict\nmodel: {N: 2}\n", 1, None,
                           "the YAML tag '!!python/object:collections.OrderedDict' is not allowed"),
    "python_tag_in_variant": Case(b"variants:\n  A1: {model: {N: !!python/object/new:int [2]}}\n", 2,
                                  "variants.A1.model.N", "the YAML tag '!!python/object/new:int'"),
    "custom_tag": Case(b"model: !foo {N: 2}\n", 1, "model", f"the YAML tag '!foo' {TAG}"),
    "binary_tag": Case(b"description: !!binary aGVsbG8=\n", 1, "description", f"the YAML tag '!!binary' {TAG}"),
    "set_tag": Case(b"eval:\n  extra_splits: !!set {test: null}\n", 2, "eval.extra_splits", f"the YAML tag '!!set' {TAG}"),
    # extends
    "extends_missing": Case(b"extends: nope.yaml\n", 1, "extends", "file 'nope.yaml' not found"),
    "extends_list": Case(b"extends: [a.yaml]\n", 1, "extends", "must be the path of a .yaml spec file"),
    "extends_empty": Case(b"extends: ''\n", 1, "extends", "must be the path of a .yaml spec file"),
    "extends_self": Case(b"extends: self.yaml\n", 1, "extends", "cycle in extends", "self.yaml"),
    "extends_not_yaml": Case(b"extends: /etc/hostname\n", 1, "extends", "'/etc/hostname' is not a .yaml or .yml spec file"),
    "extends_passwd": Case(b"extends: ../../../../../../etc/passwd\n", 1, "extends", "is not a .yaml or .yml spec file"),
    "extends_directory": Case(_dir, 1, "extends", "'sub.yaml' is a directory"),
    "extends_symlink_loop": Case(_symlink_loop, 1, "extends", "'loop1.yaml' is a broken symlink or a symlink loop"),
    "extends_device": Case(_device, 1, "extends", "'zero.yaml' is not a .yaml or .yml spec file"),
    "extends_chain_too_long": Case(_chain, 1, "extends", "the extends chain is longer than 16 files", "c16.yaml"),
}

# One case of each kind through `zoo show` and `zoo run`: syntax, bytes, structure, a variant's shape, keys,
# a value, a cross-field rule, a variant's override, a name that becomes a path, a corpus, a tag, an alias,
# extends to a missing file and through a chain.
OTHER_PATHS = ["unclosed_flow", "latin1", "list_section", "variants_list", "unknown_field", "duplicate_nested",
               "huge_steps", "zero_beam", "averaging_without_checkpoints", "variant_inf", "variant_traversal",
               "dataset_unknown", "python_tag", "alias", "extends_missing", "extends_chain_too_long"]


@pytest.fixture(autouse=True)
def _no_ray_here(monkeypatch):
    """`zoo run` on a malformed spec must stop before Ray: make starting one an obvious failure."""
    import zoo.runner.local as local
    monkeypatch.setattr(local.LocalRay, "start", lambda self: pytest.fail("zoo run started Ray for a bad spec"))


def refused_at(tmp_path, monkeypatch, capsys, name: str, command: str):
    """`zoo COMMAND spec` on the case's file: exit 2, no traceback, one short message at the case's line and field."""
    case = CASES[name]
    monkeypatch.chdir(tmp_path)  # `zoo run` would create ./runs here
    body = case.body(tmp_path) if callable(case.body) else case.body
    f = tmp_path / ("self.yaml" if name == "extends_self" else "spec.yaml")
    f.write_bytes(body)
    code, out, err = run(command, f, capsys=capsys)
    text = out + err
    assert code == 2 and "Traceback" not in text, text[-3000:]
    msg = re.search(r"^(?:FAIL  |zoo: error: )(.*)$", text, re.M).group(1)
    where = f"{tmp_path / case.file}:{case.line}: " + (f"{case.field}: " if case.field else "")
    assert msg.startswith(where) and case.words in msg, (where, case.words, msg)
    if case.field is None:  # the file as a whole: no field comes before the message
        assert msg[len(where):].startswith(case.words[:12]), msg
    assert len(msg) < 600, f"a {len(msg)}-character error: long values must be cut"
    assert not (tmp_path / "runs").exists(), "a bad spec created the storage"


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_refuses_at_the_cases_line_and_field(tmp_path, monkeypatch, capsys, name):
    refused_at(tmp_path, monkeypatch, capsys, name, "validate")


@pytest.mark.parametrize("name", OTHER_PATHS)
@pytest.mark.parametrize("command", ["show", "run"])
def test_show_and_run_refuse_at_the_same_place(tmp_path, monkeypatch, capsys, name, command):
    refused_at(tmp_path, monkeypatch, capsys, name, command)


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
