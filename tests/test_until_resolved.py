"""`zoo run SPEC --until-resolved`: a smoke sweep with a real (loopback-only) Ray adds seeds only to
the rows of claims still open, judging each look at its group-sequential level (zoo.evidence.sequential), and
each finished trial keeps its per-sentence dev likelihoods."""
import math
import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # bind 127.0.0.1 only
os.environ["RAY_AUTH_MODE"] = "disabled"

import subprocess
import sys
from pathlib import Path

import pytest

from zoo.runner.store import Store

REPO = Path(__file__).resolve().parents[1]
SMALL = ["train.steps=6", "train.eval_every=6", "train.checkpoint_every=3", "eval.max_sentences=4"]


@pytest.mark.slow
def test_until_resolved_adds_seeds_to_open_claims_only(tmp_path, data_root):
    storage = tmp_path / "runs"
    # smoke's budget with claims judged (smoke itself can test none: refused), and seeds it names: 5 and 9
    judged = tmp_path / "judged.yaml"
    judged.write_text("extends: smoke\nuntestable: ''\nseeds: [5, 9]\n")
    cmd = [sys.executable, "-m", "zoo.cli", "run", "specs/table3_A.yaml", "--profile", str(judged), "--variant", "A3",
           "--variant", "A4", "--variant", "A2", "--until-resolved", "--max-seeds", "3",
           "--storage", str(storage), *[x for s in SMALL for x in ("--set", s)]]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    trials = {t.trial: t for t in Store(storage / "zoo.db").trials()}
    # 6 steps learn nothing: A3 against A4 stays within noise, so the round adds a new seed (10: past the
    # profile's 5 and 9, not 1-3) to A3 and A4 only; A2 is in no claim (A-one-head rests on A1 and base)
    assert "after 2 seeds:" in out.stdout and "adding seed 10 to A3, A4" in out.stdout, out.stdout
    assert {"A3-seed10", "A4-seed10", "A2-seed5", "A2-seed9"} <= set(trials) and "A2-seed10" not in trials
    assert not {"A3-seed1", "A3-seed2", "A3-seed3"} & set(trials), sorted(trials)
    assert "A-too-many-heads-bleu" in out.stdout and "after 3 seeds:" in out.stdout, out.stdout
    # a group-sequential test (zoo.evidence.sequential): 2 looks fixed before the run (seeds 2 and 3 of --max-seeds 3),
    # 5% spent over them O'Brien-Fleming-type, each look's verdicts printed with its level
    assert "sequential test: 2 looks (2 to 3 seeds)" in out.stdout, out.stdout
    assert "after 2 seeds: look 1 of 2, at level 0.016:" in out.stdout, out.stdout
    assert "after 3 seeds: look 2 of 2, at level 0.034:" in out.stdout, out.stdout
    m = trials["A3-seed5"].result
    nll, tok = map(sum, zip(*m.dev_nll_stats))
    assert len(m.dev_nll_stats) > 0 and math.exp(nll / tok) == pytest.approx(m.dev_ppl, rel=1e-4)
    # the paper's own BLEU beside sacreBLEU, with its per-sentence statistics
    assert m.primary.bleu_paper is not None and len(m.primary.bleu_paper_stats) == m.primary.eval_sentences
