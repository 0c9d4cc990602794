"""Profiles that named what they cannot use (issue 51): a `datasets:` key, a `dataset:` or a `prefer:` corpus
that is in no registry validated with exit 0 (a misspelt key never matched, so the spec silently ran as
written; a misspelt `prefer:` was never present, so the fallback always ran and `zoo show` advised fetching
it), and `betas: [1.0, 0.98]` named its section, not its field. Each is now one paragraph at the profile's
file:line naming the field and the corpora allowed, exit 2, before anything runs."""
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.data import CORPORA

SPEC = Path(__file__).resolve().parents[1] / "specs" / "table3_A.yaml"
ALLOWED = "Allowed: " + ", ".join(sorted(CORPORA))  # the registry's corpora, from their one home

CASES = {  # profile text, the line and field the error names, a fragment of what it says
    "misspelt-key": ("extends: smoke\ndatasets:\n  wmt14_en_dee: {dataset: multi30k}\n",
                     3, "datasets.wmt14_en_dee", "unknown corpus 'wmt14_en_dee'; did you mean 'wmt14_en_de'? " + ALLOWED),
    "prefer": ("extends: smoke\ndatasets:\n  wmt14_en_de:\n    dataset: multi30k\n    prefer: {dataset: nosuch_corpus}\n",
               5, "datasets.wmt14_en_de.prefer.dataset", "unknown corpus 'nosuch_corpus'. " + ALLOWED),
    "target": ("extends: smoke\ndatasets:\n  wmt14_en_de:\n    dataset: multi30kk\n",
               4, "datasets.wmt14_en_de.dataset", "unknown corpus 'multi30kk'; did you mean 'multi30k'? " + ALLOWED),
    "betas": ("extends: smoke\nset:\n  train:\n    optimizer:\n      betas: [1.0, 0.98]\n",
              5, "train.optimizer.betas", "each of the two betas must lie in [0, 1) (got [1.0, 0.98])"),
}


def zoo(capsys, *argv) -> tuple:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, (out.out + out.err).strip()


@pytest.mark.parametrize("case", CASES)
def test_a_profile_naming_what_it_cannot_use_fails_validation_at_its_line(tmp_path, capsys, case):
    text, line, field, said = CASES[case]
    prof = tmp_path / "p.yaml"
    prof.write_text(text)
    code, msg = zoo(capsys, "validate", SPEC, "--profile", prof)
    assert code == 2 and "Traceback" not in msg, msg
    assert f"{prof}:{line}: {field}: {said}" in msg, msg


@pytest.mark.parametrize("case", ["misspelt-key", "prefer", "betas"])
def test_zoo_run_and_show_refuse_it_before_anything_runs(tmp_path, capsys, case):
    text, line, field, _ = CASES[case]
    prof = tmp_path / "p.yaml"
    prof.write_text(text)
    storage = tmp_path / "runs"
    code, msg = zoo(capsys, "run", SPEC, "--profile", prof, "--variant", "A1", "--storage", storage)
    assert code == 2 and "Traceback" not in msg and f"{prof}:{line}: {field}: " in msg, msg
    assert not storage.exists()  # no store, no Ray experiment, no trial folder
    code, msg = zoo(capsys, "show", SPEC, "--profile", prof, "--variant", "A1")
    assert code == 2 and f"{prof}:{line}: {field}: " in msg and "zoo data fetch" not in msg, msg
