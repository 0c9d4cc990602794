"""zoo.result: the typed run result (issue 11). Old summaries load; nothing outside the module reads
a summary field by string; the committed reference stores load as RunResults."""
import json
import re
from pathlib import Path

import pytest

from zoo.result import Hardware, RunResult, SplitScore

REPO = Path(__file__).resolve().parents[1]

FLAT = {  # a summary.json as train() wrote it before hardware and splits were models
    "config_hash": "abc", "variant": "A1", "profile": "quick", "steps_done": 480, "tokens_seen": 1_900_000,
    "train_seconds": 300.0, "dev_ppl": 41.2, "vocab_size_actual": 4000, "bpe_model": "x.model",
    "dataset": "multi30k", "train_pairs": 29000, "device": "cpu", "device_name": "cpu", "threads": 1,
    "workers": 1, "eval_split": "dev", "eval_sentences": 1014, "eval_weights": "final weights",
    "bleu": 4.1, "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3",
    "bleu_tokenized": 4.3, "some_field_since_removed": 1}


def test_an_old_flat_summary_loads_with_hardware_and_its_split():
    r = RunResult.model_validate(FLAT)
    assert r.hardware == Hardware(device="cpu", device_name="cpu", threads=1, workers=1)
    assert r.primary == r.split("dev") and r.primary.bleu == 4.1 and r.primary.eval_sentences == 1014
    assert r.figure("bleu") == 4.1 and r.figure("dev_ppl") == 41.2
    with pytest.raises(ValueError):
        r.figure("BLEU")
    # and round-trips through the JSON the store and summary.json keep
    assert RunResult.model_validate_json(r.model_dump_json()) == r


def test_a_parsing_split_has_its_score():
    s = SplitScore(eval_split="test", f1=61.0, f1_flat=9.55, f1_right_branching=17.3, malformed=0)
    assert s.score == ("f1", 61.0)


@pytest.mark.parametrize("db", sorted(REPO.glob("reports/reference/*/zoo.db")), ids=lambda p: p.parent.name)
def test_the_committed_reference_stores_load(db):
    from zoo.runner.store import Store
    done = [t for t in Store(db, readonly=True).trials() if t.status == "finished"]
    assert done and all(isinstance(t.result, RunResult) and t.result.primary for t in done)


def test_no_summary_field_is_read_by_string_outside_the_result_module():
    # store columns (variant, profile, status, ...) are the store's; these are the result's alone
    names = (set(RunResult.model_fields) | set(SplitScore.model_fields) | set(Hardware.model_fields)) - {
        "variant", "profile", "config_hash", "tokens_seen", "train_seconds", "bleu", "f1", "dataset",
        "attention", "hardware", "dev_ppl", "splits"}  # also the names of store columns and curve points,
    # the best-so-far record, a profile's dataset mapping, a corpus listing and zoo.metrics' return values
    pat = re.compile(r"""(\[|\.get\(|\.pop\()\s*["'](%s)["']""" % "|".join(sorted(names)))
    hits = [f"{f.relative_to(REPO)}:{i}: {line.strip()}"
            for d in ("zoo", "runner", "reports") for f in sorted((REPO / d).rglob("*.py")) if f.name != "result.py"
            for i, line in enumerate(f.read_text().splitlines(), 1) if pat.search(line)]
    assert not hits, "\n".join(hits)
