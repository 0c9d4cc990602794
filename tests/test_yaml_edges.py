"""The YAML reader's last edges (issue 38): a `%YAML` directive other than 1.2, scalar tags on
collections, lines after multi-byte text, JSON's surrogate-pair escapes, and all-commented sections
inside a variant or a profile's `set:`."""
import json
from pathlib import Path

import pytest

from zoo.spec import resolve
from zoo.spec import yaml12
from helpers import run


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


def fails_at(tmp_path, capsys, text: str, line: int, field: str, fragment: str = "") -> str:
    f = write(tmp_path, text)
    code, out, err = run("validate", f, capsys=capsys)
    msg = (out + err).strip()
    assert code == 2 and "Traceback" not in msg, msg
    where = f"{f}:{line}: {field + ': ' if field else ''}"
    assert where in msg and fragment in msg.split(where, 1)[1], msg  # not in the test's folder name
    return msg


def passes(tmp_path, capsys, text: str, *more) -> None:
    f = write(tmp_path, text)
    code, out, err = run("validate", f, *more, capsys=capsys)
    assert code == 0, out + err


# -- %YAML directives --------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["1.1", "1.0", "1.3"])
def test_a_yaml_version_other_than_1_2_is_refused(tmp_path, capsys, version):
    msg = fails_at(tmp_path, capsys, f"%YAML {version}\n---\nmodel:\n  N: 010\n", 1, "%YAML", "1.2")
    assert version in msg


def test_yaml_1_2_directive_is_fine(tmp_path, capsys):
    passes(tmp_path, capsys, "# a spec\n%YAML 1.2\n---\nmodel:\n  N: 2\n")
    assert yaml12.load("%YAML 1.2\n---\nN: 010\n")[0] == {"N": 10}


# -- scalar tags on collections ----------------------------------------------------------------

@pytest.mark.parametrize("text, line, field, tag", [
    ("model: !!int\n  N: 6\n", 1, "model", "!!int"),
    ("model:\n  N: 6\ntrain:\n  optimizer:\n    betas: !!str [0.9, 0.98]\n", 5, "train.optimizer.betas", "!!str"),
    ("model: !!seq {N: 6}\n", 1, "model", "!!seq"),
    ("model:\n  N: 6\ntrain:\n  optimizer:\n    betas: !!map\n      - 0.9\n", 5, "train.optimizer.betas", "!!map"),
    ("!!float\nmodel: {N: 6}\n", 1, "", "!!float"),
])
def test_scalar_tags_on_collections_are_refused(tmp_path, capsys, text, line, field, tag):
    fails_at(tmp_path, capsys, text, line, field, f"'{tag}'")


def test_collection_tags_on_their_own_kind_are_fine(tmp_path, capsys):
    passes(tmp_path, capsys, "model: !!map\n  N: 6\ntrain:\n  optimizer:\n    betas: !!seq [0.9, 0.98]\n")


# -- lines after multi-byte text ---------------------------------------------------------------

@pytest.mark.parametrize("char", ["\x00", "\x01", "\x7f"])
@pytest.mark.parametrize("prose", ["é", "日本語", "😀"])
def test_a_control_character_after_multibyte_text_is_reported_on_its_line(tmp_path, capsys, char, prose):
    text = "".join(f"# {prose * 20}\n" for _ in range(10)) + f"description: \"{prose}\"\nmodel:\n  N: 6{char}\n"
    fails_at(tmp_path, capsys, text, 13, "", f"U+{ord(char):04X}")


# -- JSON's surrogate-pair escapes -------------------------------------------------------------

def test_a_spec_written_by_json_dumps_with_an_emoji_reads(tmp_path, capsys):
    text = json.dumps({"description": "launch \U0001F600 \u00e9", "model": {"N": 6}})
    assert "\\ud83d\\ude00" in text
    passes(tmp_path, capsys, text)
    assert yaml12.load(text)[0]["description"] == "launch \U0001F600 \u00e9"


@pytest.mark.parametrize("text, want", [
    ('d: "a\\uD83D\\uDE00b"\n', "a\U0001F600b"),          # upper-case hex, as some writers do
    ('d: "x\\\\ud83d\\ude00"\n', None),                  # `\\` is a backslash: the pair is not whole
    ("d: 'a\\ud83d\\ude00'\n", "a\\ud83d\\ude00"),       # single-quoted: no escapes, text as typed
    ("d: a\\ud83d\\ude00\n", "a\\ud83d\\ude00"),         # plain: the same
    ('d: "\\ud83d\\ude00" # "\\ud83d\\ude00"\n', "\U0001F600"),
    ('d: "line one\n  \\ud83d\\ude00 two"\n', "line one \U0001F600 two"),
])
def test_surrogate_pairs_join_only_inside_double_quotes(text, want):
    if want is None:  # `"\\ud83d\ude00"`: a backslash, then `ud83d`, then a lone low surrogate
        with pytest.raises(yaml12.YamlError, match="surrogate"):
            yaml12.load(text)
    else:
        assert yaml12.load(text)[0] == {"d": want}


@pytest.mark.parametrize("escape", ["\\ud83d", "\\ude00", "\\ude00\\ud83d", "\\ud83d\\u0041"])
def test_a_lone_surrogate_is_a_clear_error(tmp_path, capsys, escape):
    fails_at(tmp_path, capsys, f"model:\n  N: 6\ndescription: \"bad {escape} x\"\n", 3, "", "surrogate")


# -- all-commented sections inside a variant or a profile's `set:` -----------------------------

def test_an_all_commented_section_in_a_variant_reads_as_empty(tmp_path, capsys):
    text = ("model:\n  N: 3\nvariants:\n  A:\n    model:\n      # N: 2\n    train:\n      # steps: 5\n"
            "  B:\n    model:\n      N: 2\n")
    passes(tmp_path, capsys, text)
    cfgs = {c.variant: c for c in resolve(tmp_path / "s.yaml")}
    assert (cfgs["A"].model.N, cfgs["B"].model.N) == (3, 2)


def test_an_all_commented_section_in_a_profile_set_reads_as_empty(tmp_path, capsys):
    prof = write(tmp_path, "set:\n  model:\n    # N: 2\n  train:\n    steps: 7\n", "p.yaml")
    passes(tmp_path, capsys, "model:\n  N: 3\n", "--profile", prof)
    c = resolve(tmp_path / "s.yaml", profile=str(prof))[0]
    assert (c.model.N, c.train.steps) == (3, 7)


def test_an_all_commented_section_in_a_profile_datasets_set_reads_as_empty(tmp_path):
    prof = write(tmp_path, "datasets:\n  wmt14_en_de:\n    dataset: multi30k\n    set:\n      model:\n        # N: 1\n"
                 "      train:\n        steps: 9\n", "p.yaml")
    write(tmp_path, "model:\n  N: 3\ndata:\n  dataset: wmt14_en_de\n")
    c = resolve(tmp_path / "s.yaml", profile=str(prof))[0]
    assert (c.model.N, c.train.steps, c.data.dataset) == (3, 9, "multi30k")
