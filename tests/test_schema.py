"""`zoo schema`: a stock JSON Schema validator accepts every shipped spec and profile and refuses
the mistakes zoo's own validator refuses."""
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from zoo.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _schema(capsys, *args) -> jsonschema.Draft202012Validator:
    assert main(["schema", *args]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_shipped_spec_and_profile_is_valid(capsys):
    spec, profile = _schema(capsys), _schema(capsys, "--profile-file")
    specs, profiles = sorted(ROOT.glob("specs/*.yaml")), sorted(ROOT.glob("specs/profiles/*.yaml"))
    assert len(specs) >= 13 and len(profiles) >= 4
    for validator, files in ((spec, specs), (profile, profiles)):
        for f in files:
            errors = [e.message for e in validator.iter_errors(yaml.safe_load(f.read_text()))]
            assert not errors, f"{f.name}: {errors}"


@pytest.mark.parametrize("doc", [
    {"model": {"N": True}},                          # bool for an int
    {"model": {"Nx": 6}},                            # unknown field
    {"modle": {"N": 6}},                             # unknown section
    {"model": {"dropout": 1.5}},                     # out of range
    {"model": {"positional_encoding": "rotary"}},    # not one of the choices
    {"train": {"optimizer": {"betas": [0.9]}}},      # a pair
    {"variants": {"../../victim": {}}},              # a name that becomes a path
    {"variants": {"A1": {"modle": {}}}},
    {"extends": "base.json"},
    {"name": ".hidden"},
])
def test_schema_refuses_what_zoo_refuses(capsys, doc):
    assert not _schema(capsys).is_valid(doc)


def test_profile_schema_refuses_unknown_scale(capsys):
    v = _schema(capsys, "--profile-file")
    assert v.is_valid({"scale": {"width": 0.5}, "set": {"train": {"steps": 10}}})
    assert not v.is_valid({"scale": {"height": 0.5}})
    assert not v.is_valid({"scale": {"width": 0}})
    assert not v.is_valid({"set": {"train": {"steps": "ten"}}})


def test_profile_schema_refuses_a_corpus_the_registry_lacks(capsys):
    """As `zoo validate` does (tests/test_profile_mistakes.py): a datasets: key, dataset: or prefer: dataset:."""
    v = _schema(capsys, "--profile-file")
    assert v.is_valid({"datasets": {"wmt14_en_de": {"dataset": "multi30k", "prefer": {"dataset": "wmt14_en_de"}}}})
    assert not v.is_valid({"datasets": {"wmt14_en_dee": {"dataset": "multi30k"}}})
    assert not v.is_valid({"datasets": {"wmt14_en_de": {"dataset": "multi30kk"}}})
    assert not v.is_valid({"datasets": {"wmt14_en_de": {"dataset": "multi30k", "prefer": {"dataset": "nosuch_corpus"}}}})
