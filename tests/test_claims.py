"""Table 3's claims as data and their verdicts: synthetic runs on real dev references, and the
paired bootstrap checked against sacreBLEU's own."""
import random

import numpy as np
import pytest

from zoo import claims as C
from zoo import data as D


@pytest.fixture(scope="module")
def refs(data_root):
    return [t for _, t in D.load_pairs("multi30k", "dev", data_root)][:400]


def degrade(refs, p, seed):
    """A system that drops each word with probability p (seeded: a different 'training seed')."""
    rng = random.Random(seed)
    return [" ".join(w for w in r.split() if rng.random() > p) or r.split()[0] for r in refs]


def stats(refs, p, seeds):
    return [C.sentence_stats(degrade(refs, p, s), refs) for s in seeds]


def test_claims_come_from_the_paper():
    assert len({c.id for c in C.CLAIMS}) == len(C.CLAIMS) >= 15
    one_head = next(c for c in C.CLAIMS if c.id == "A-one-head-bleu")
    assert one_head.paper_delta == pytest.approx(0.9)  # "0.9 BLEU worse than the best setting"
    for c in C.CLAIMS:
        if c.tie:
            assert abs(c.paper_delta) <= 0.1 + 1e-9, c.id
        else:
            assert c.paper_delta > 0, c.id  # the paper's own table agrees with its text
    smoothing = {c.id: c for c in C.CLAIMS if c.id.startswith("D-smoothing")}
    assert smoothing["D-smoothing-ppl"].better == "D3" and smoothing["D-smoothing-bleu"].better == "base"
    assert {c.group for c in C.CLAIMS} == {"A", "B", "C", "D", "E", "big"}


def test_clear_win_tie_and_flip(refs):
    win = next(c for c in C.CLAIMS if c.id == "C-depth-bleu")
    tie = next(c for c in C.CLAIMS if c.id == "E-positions-bleu")
    good, bad = stats(refs, 0.05, [1, 2, 3]), stats(refs, 0.4, [4, 5, 6])
    clear = C.bleu_interval(good, bad, samples=300)
    assert clear.lo > 5 and C.verdict(win, clear) == "held"
    flip = C.bleu_interval(bad, good, samples=300)
    assert flip.hi < -5 and C.verdict(win, flip) == "flipped"
    same = C.bleu_interval(stats(refs, 0.2, [7, 8, 9]), stats(refs, 0.2, [10, 11, 12]), samples=300)
    assert same.lo < 0 < same.hi
    assert C.verdict(win, same) == "within noise" and C.verdict(tie, same) == "held"
    assert C.verdict(tie, clear) == "flipped"


def test_seed_spread_widens_the_interval(refs):
    one = C.bleu_interval(stats(refs, 0.2, [1]), stats(refs, 0.25, [2]), samples=300)
    noisy_seeds = [C.sentence_stats(degrade(refs, p, s), refs) for p, s in ((0.1, 3), (0.3, 4), (0.2, 5))]
    three = C.bleu_interval(noisy_seeds, stats(refs, 0.25, [6, 7, 8]), samples=300)
    assert (three.hi - three.lo) > (one.hi - one.lo)


def test_paired_bootstrap_matches_sacrebleu(refs, monkeypatch):
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest, estimate_ci
    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    base, system = degrade(refs, 0.3, 1), degrade(refs, 0.1, 2)
    test = PairedTest([("base", base), ("system", system)], {"BLEU": BLEU(references=[refs])}, None,
                      test_type="bs", n_samples=200)
    _, scores = test()
    theirs = scores["BLEU"][1]  # the system's Result: score, p_value, mean, ci
    idx = C.resample_indices(len(refs), 200, 12345)
    ours = C._bleu(C.sentence_stats(system, refs)[idx].sum(1))
    mean, ci = estimate_ci(ours)
    assert mean == pytest.approx(theirs.mean, abs=1e-9) and ci == pytest.approx(theirs.ci, abs=1e-9)
    interval = C.bleu_interval([C.sentence_stats(system, refs)], [C.sentence_stats(base, refs)], samples=200)
    assert interval.delta == pytest.approx(theirs.score - scores["BLEU"][0].score, abs=1e-6)
    assert interval.lo > 0 and theirs.p_value < 0.05  # both see a real difference


def test_perplexity_needs_two_seeds_and_reads_lower_as_better():
    dropout = next(c for c in C.CLAIMS if c.id == "D-dropout-ppl")
    assert C.scalar_interval("ppl", [5.0], [6.0]) is None
    held = C.scalar_interval("ppl", [5.0, 5.1, 4.9], [6.0, 6.2, 5.9])
    assert held.delta == pytest.approx(1.0333, abs=1e-3) and C.verdict(dropout, held) == "held"
    noise = C.scalar_interval("ppl", [5.0, 6.1, 4.9], [5.2, 5.9, 5.0])
    assert C.verdict(dropout, noise) == "within noise"


def test_kendall_tau_with_interval():
    paper = [1, 2, 3, 4, 5, 6, 7, 8]
    tau, lo, hi = C.kendall_tau(paper, [[p + 0.1, p - 0.1] for p in paper], samples=200)
    assert tau == pytest.approx(1.0) and lo > 0.5
    rng = np.random.default_rng(0)
    tau, lo, hi = C.kendall_tau(paper, [list(rng.normal(0, 1, 3)) for _ in paper], samples=200)
    assert lo < 0 < hi  # a random order: no agreement that the interval can see
