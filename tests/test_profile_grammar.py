"""A profile's grammar is one model (zoo.spec.profile_grammar.Profile): the validator and `zoo schema
--profile-file` read it, so they agree on every profile, and a mistake in a profile is refused whichever spec
it is laid over (before, a `datasets:` entry was checked only on a spec of that corpus, and a `description:`
the schema refused passed validation)."""
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from zoo.cli import main
from zoo.spec import SpecError, resolve

REPO = Path(__file__).resolve().parents[1]
WSJ = REPO / "specs" / "table4_wsj.yaml"  # parsing: no profile entry below maps its corpus

MISTAKES = {  # profile text, the line and field said, a fragment of what is allowed
    "entry-prefer": ("datasets:\n  wmt14_en_de: {dataset: multi30k, prefer: {vocab_size: 3}}\n", 2,
                     "datasets.wmt14_en_de.prefer", "must be data settings naming a corpus"),
    "entry-scale": ("datasets:\n  wmt14_en_de:\n    scale: {height: 2}\n", 3,
                    "datasets.wmt14_en_de.scale.height", "unknown scale 'height'. Allowed: depth, heads, steps, width"),
    "entry-set": ("datasets:\n  wmt14_en_de:\n    set: {modle: {N: 1}}\n", 3,
                  "datasets.wmt14_en_de.set.modle", "did you mean 'model'?"),
    "description": ("description: [a]\n", 1, "description", "Input should be a valid string"),
}


@pytest.mark.parametrize("case", MISTAKES)
def test_a_profile_mistake_is_refused_on_any_spec(tmp_path, case):
    text, line, field, said = MISTAKES[case]
    prof = tmp_path / "p.yaml"
    prof.write_text(text)
    with pytest.raises(SpecError) as e:
        resolve(WSJ, profile=str(prof))
    assert f"{prof}:{line}: {field}: " in str(e.value) and said in str(e.value), str(e.value)


def test_the_validator_and_the_schema_agree(tmp_path, capsys):
    """Each profile below is refused by both or by neither (shipped profiles: accepted by both)."""
    assert main(["schema", "--profile-file"]) == 0
    schema = jsonschema.Draft202012Validator(json.loads(capsys.readouterr().out))
    docs = [t for t, *_ in MISTAKES.values()] + [
        "scale: {width: 0.5, heads: 0.5}\n", "scale: {width: 0}\n", "scale: {width: true}\n", "seeds: [1, 1]\n",
        "untestable: 3\n", "set: {model: {N: 2}}\n", "set: {modle: {}}\n", "datasets: {wsj_sample: {vocab_size: 900}}\n",
        "datasets: {wmt14_en_dee: {dataset: multi30k}}\n", "extends_: smoke\n"]
    for i, text in enumerate(docs):
        (tmp_path / f"p{i}.yaml").write_text(text)
        try:
            resolve(WSJ, profile=str(tmp_path / f"p{i}.yaml"))
            ours = True
        except SpecError:
            ours = False
        assert schema.is_valid(yaml.safe_load(text)) == ours, text
