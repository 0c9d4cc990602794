"""zoo.result: the typed run result (issue 11). Old summaries load; nothing outside the module reads
a summary field by string; the committed reference stores load as RunResults."""
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


REFERENCE_STORES = sorted(REPO.glob("results/*/zoo.db.xz"))  # the committed reference stores, compressed


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
@pytest.mark.parametrize("db", REFERENCE_STORES, ids=lambda p: p.parent.name)
def test_the_committed_reference_stores_load_as_typed_records_untouched(db):
    import hashlib
    from zoo.result import Point, Trial, TrialStatus
    from zoo.runner.store import Store
    from zoo.config import Config
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    st = Store(db, readonly=True)
    trials = st.trials()
    done = [t for t in trials if t.status is TrialStatus.finished]
    assert done and all(isinstance(t, Trial) and isinstance(t.config, Config) and isinstance(t.result, RunResult)
                        and t.result.primary for t in done)
    # schema 1 kept the trial's name in `variant`: read back as the trial, the variant from its config
    assert all(t.trial == t.config.trial and t.variant == t.config.variant for t in trials)
    pts = st.points(*done[0].key)
    assert pts and all(isinstance(p, Point) for p in pts)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest  # read-only: not even migrated


def test_a_schema_1_store_is_migrated_when_opened_for_writing(tmp_path):
    import shutil
    import sqlite3
    from zoo.runner.store import SCHEMA_VERSION, Store
    from zoo.runner.storefile import unpacked
    src = next(p for p in REFERENCE_STORES if p.parent.name.startswith("ablation"))
    shutil.copy(unpacked(src), tmp_path / "zoo.db")
    before = {t.key: t for t in Store(src, readonly=True).trials()}
    st = Store(tmp_path / "zoo.db")
    c = sqlite3.connect(tmp_path / "zoo.db")
    assert {"trial", "variant"} <= {r[1] for r in c.execute("PRAGMA table_info(trials)")}
    assert "trial" in {r[1] for r in c.execute("PRAGMA table_info(points)")}
    assert c.execute("SELECT value FROM zoo_meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    seeded = c.execute("SELECT trial, variant FROM trials WHERE trial LIKE 'A1-seed%'").fetchall()
    assert seeded and all(v == "A1" for _, v in seeded)  # the variant in its own column
    c.close()
    after = {t.key: t for t in st.trials()}
    assert after.keys() == before.keys() and all(after[k].result == before[k].result for k in after)
    key = next(k for k in after if k[1] == "A1-seed2")
    assert st.points(*key) == Store(src, readonly=True).points(*key)
    st.upsert(*key, warning="w")  # keyed by the trial's name: one row updated, none added
    assert len(Store(tmp_path / "zoo.db").trials()) == len(before) and st.get(*key).warning == "w"


def test_every_train_event_reads_back_from_its_wire_form():
    from zoo.result import (BadCheckpoint, Done, LogPoint, NoOptimizerState, Placement, Resumed, Started, event,
                            wire)
    r = RunResult.model_validate(FLAT)
    events = [Started(placement=Placement(pid=3)), Resumed(step=4),
              BadCheckpoint(path="a.pt", moved_to="a.pt.bad", error="zip"), NoOptimizerState(path="b.pt", step=2),
              Done(result=r), Done(), LogPoint(step=5, steps=10, loss=2.0)]
    for e in events:
        assert event(wire(e)) == e
    assert wire(Done(result=r))["event"] == "done" and wire(Done(result=r))["steps_done"] == 480  # as train() sends
    assert event({"event": "something new"}) is None and event({"loss": 1.0}) is None


def test_no_summary_field_is_read_by_string_outside_the_result_module():
    # store columns (variant, profile, status, ...) are the store's; these are the result's alone
    names = (set(RunResult.model_fields) | set(SplitScore.model_fields) | set(Hardware.model_fields)) - {
        "variant", "profile", "config_hash", "tokens_seen", "train_seconds", "bleu", "f1", "dataset",
        "attention", "hardware", "dev_ppl", "splits", "ppl"}  # also the names of store columns and curve points,
    # the best-so-far record, a profile's dataset mapping, a corpus listing and zoo.evidence.metrics' return values
    pat = re.compile(r"""(\[|\.get\(|\.pop\()\s*["'](%s)["']""" % "|".join(sorted(names)))
    hits = [f"{f.relative_to(REPO)}:{i}: {line.strip()}"
            for d in ("zoo", "runner", "reports") for f in sorted((REPO / d).rglob("*.py")) if f.name != "result.py"
            for i, line in enumerate(f.read_text().splitlines(), 1)
            if pat.search(line) and not line.startswith("__all__")]  # a part's list of what it lends is not a read
    assert not hits, "\n".join(hits)
