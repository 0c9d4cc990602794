"""A run that is not learning stops and says so (issue 44, item 2; zoo.train.learning): after warm-up, a training
NLL above the uniform level, or (given the steps to get there) not clearly below the target pieces' unigram
level, is exit 2 with one paragraph in `zoo train` and a failed trial whose error says so in `zoo run`. The
smoke profile's runs and every committed reference's curves never trip it."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from helpers import run
from zoo.train.learning import CLEARLY, UNIGRAM_STEPS, Levels, check_from, levels

COLLAPSE = ["--set", "train.schedule.lr_scale=30", "--set", "train.schedule.warmup_steps=5"]


def test_levels_are_the_unigram_entropy_and_ln_v():
    # targets 4 4 5 5 and 4 4 5 5: with one end of sentence (id 3) each, the pieces 3, 4, 5 at 1/5, 2/5, 2/5
    lv = levels([(np.array([9]), np.array([4, 4, 5, 5])), (np.array([9]), np.array([4, 4, 5, 5]))], 10)
    p = np.array([0.2, 0.4, 0.4])
    assert math.isclose(lv.unigram, float(-(p * np.log(p)).sum())) and math.isclose(lv.uniform, math.log(10))
    assert lv.problem(math.log(10) + 1.01, 1) and lv.problem(math.log(10) + 0.5, 1) is None and lv.problem(0.99 * lv.unigram, UNIGRAM_STEPS)
    assert lv.problem(0.99 * lv.unigram, UNIGRAM_STEPS - 1) is None  # too soon to hold it to the unigram level
    assert lv.problem(CLEARLY * 0.99 * lv.unigram, 10 * UNIGRAM_STEPS) is None


def test_the_check_starts_after_warm_up_and_can_be_turned_off():
    from zoo.spec import resolve
    (c,) = resolve("table3_A", variant="A1", profile="cpu")
    assert check_from(c) == 2 * c.train.schedule.warmup_steps
    off = c.model_copy(update={"train": c.train.model_copy(update={"stop_if_not_learning": False})})
    assert check_from(off) is None and off.config_hash() == c.config_hash()  # the same run when it finishes


def _train(tmp_path, data_root, *extra):
    cmd = [sys.executable, "-m", "zoo.cli", "train", "table3_A", "--variant", "A1", "--profile", "smoke",
           "--out", str(tmp_path / "run"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**__import__("os").environ, "ZOO_DATA_DIR": str(data_root)})


@pytest.mark.slow
def test_a_collapsing_run_stops_with_exit_2_and_the_paragraph_and_a_normal_one_does_not(tmp_path, data_root, capsys):
    r = _train(tmp_path, data_root, *COLLAPSE)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "zoo: error: not learning: at step 20 of 30" in r.stderr
    for said in ("above the uniform level", "post-LN", "warmup_steps=4000", "train.stop_if_not_learning=false"):
        assert said in r.stderr, said
    assert not (tmp_path / "run" / "summary.json").exists()
    code, out, err = run("train", "table3_A", "--variant", "A1", "--profile", "smoke", "--out", tmp_path / "normal",
                         capsys=capsys)  # the smoke run as it is (in this process: the exit code is the contract above)
    assert code == 0, out[-2000:] + err[-2000:]


@pytest.mark.slow
def test_a_trial_that_is_not_learning_fails_saying_so(tmp_path, data_root, capsys):
    cmd = [sys.executable, "-m", "zoo.cli", "run", "table3_A", "--variant", "A1", "--profile", "smoke",
           "--storage", str(tmp_path / "runs"), *COLLAPSE]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode != 0 and "0 finished, 1 failed" in r.stdout + r.stderr, r.stdout[-2000:] + r.stderr[-2000:]
    _, out, _ = run("status", "--json", "--runs", tmp_path / "runs", capsys=capsys)  # a reader: in this process
    (t,) = json.loads(out)
    # one thread in a Ray worker takes other roundings than `zoo train`'s two: the same collapse may reach a
    # non-finite loss first, which stops the run as surely (NonFiniteLoss, also exit 2 in `zoo train`)
    assert t["status"] == "failed" and ("NotLearningError: not learning" in t["error"]
                                        or "NonFiniteLoss: non-finite loss" in t["error"]), t


@pytest.mark.slow
def test_no_committed_reference_would_have_tripped_it(repo, data_root):
    """Each reference trial's curve, replayed against the check with the levels of its own corpus and vocabulary:
    the unsmoothed training NLL where the store has it (trend, modern), else the dev NLL per piece, ln(dev
    perplexity), at its evaluations (the older stores kept only the label-smoothed loss, which sits about
    eps x ln V above the NLL and says nothing against the unigram level)."""
    from zoo.runner.store import open_store
    from zoo.train import prepare
    seen, judged, cache = 0, 0, {}
    for ref in ("ablation-cpu2", "ablation2-cpu2", "modern-cpu2", "quick-cpu2", "table4-cpu2", "trend-cpu2"):
        store = open_store(repo / "results" / ref / "zoo.db")
        for t in store.trials():
            if t.config is None or (first := check_from(t.config)) is None:
                continue
            d = t.config.data
            key = (d.dataset, d.vocab_size, d.max_train_pairs, d.max_len, d.target_vocab)
            if key not in cache:
                p = prepare(t.config, data_root)
                cache[key] = levels(p.train, p.tgt_vocab_size or p.vocab_size)
            lv: Levels = cache[key]
            for pt in store.points(t.spec, t.trial, t.profile):
                nll = pt.nll if pt.nll is not None else math.log(pt.dev_ppl) if pt.dev_ppl else None
                if pt.step >= first and nll is not None:
                    judged += 1
                    assert lv.problem(nll, pt.step) is None, (ref, t.trial, pt.step, nll, lv, CLEARLY)
            seen += 1
    assert seen >= 90 and judged >= 400, (seen, judged)  # 99 trials, 438 points (trend and modern: 2 x warm-up > steps)
