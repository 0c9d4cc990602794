"""Table 3's claims as data, their preconditions and their verdicts: synthetic runs on real dev
references, the difference checked against sacreBLEU's own corpus scores."""
import random

import numpy as np
import pytest

from zoo.evidence import claims as C
from zoo.evidence import stats as S
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


def rows_of(**sides):
    """Row label -> RowRuns with per-sentence BLEU statistics, seeds 1, 2, 3 (paired)."""
    return {row: [C.RowRun(seed=i + 1, steps=100, bleu_stats=x) for i, x in enumerate(st)] for row, st in sides.items()}


def judged(claim, rows, samples=2000):
    return C.judge([C.compare(claim, rows, lambda n: S.Resampler(n, samples, 1))])[0]


def test_clear_win_tie_and_flip(refs):
    win = next(c for c in C.CLAIMS if c.id == "C-depth-bleu")
    tie = next(c for c in C.CLAIMS if c.id == "E-positions-bleu")
    good, bad = stats(refs, 0.05, [1, 2, 3]), stats(refs, 0.4, [4, 5, 6])
    clear = judged(win, rows_of(C3=good, C1=bad))
    assert clear.estimate.lo > 5 and clear.verdict == "held" and clear.estimate.sentences == len(refs)
    assert judged(win, rows_of(C3=bad, C1=good)).verdict == "flipped"
    same = judged(win, rows_of(C3=stats(refs, 0.2, [7, 8, 9]), C1=stats(refs, 0.2, [10, 11, 12])))
    assert same.estimate.lo < 0 < same.estimate.hi and same.verdict == "within noise"
    assert judged(tie, rows_of(E=good, base=bad)).verdict == "different"
    assert judged(tie, rows_of(E=stats(refs, 0.2, [7, 8, 9]), base=stats(refs, 0.2, [10, 11, 12]))).verdict == "inconclusive"


def test_delta_is_sacrebleus_corpus_difference(refs):
    from sacrebleu.metrics import BLEU
    win = next(c for c in C.CLAIMS if c.id == "C-depth-bleu")
    a, b = [degrade(refs, 0.1, s) for s in (1, 2, 3)], [degrade(refs, 0.3, s) for s in (4, 5, 6)]
    got = judged(win, rows_of(C3=[C.sentence_stats(h, refs) for h in a], C1=[C.sentence_stats(h, refs) for h in b]))
    theirs = np.mean([BLEU().corpus_score(h, [refs]).score for h in a]) - np.mean([BLEU().corpus_score(h, [refs]).score for h in b])
    assert got.estimate.delta == pytest.approx(theirs, abs=1e-9)


def test_one_seed_and_missing_scores_give_no_verdict(refs):
    win = next(c for c in C.CLAIMS if c.id == "C-depth-bleu")
    one = {"C3": [C.RowRun(seed=1, steps=1, bleu_stats=stats(refs, 0.1, [1])[0])],
           "C1": [C.RowRun(seed=1, steps=1, bleu_stats=stats(refs, 0.3, [1])[0])]}
    assert judged(win, one).verdict == "needs 2+ seeds"
    old = {r: [C.RowRun(seed=s, steps=1) for s in (1, 2)] for r in ("C3", "C1")}
    assert judged(win, old).verdict.startswith("no per-sentence scores")


def test_perplexity_without_sentence_likelihoods_falls_back_to_seeds():
    dropout_free = next(c for c in C.CLAIMS if c.id == "D-smoothing-ppl")  # D3 has the lower perplexity
    rows = {"D3": [C.RowRun(seed=s, steps=1, dev_ppl=p) for s, p in ((1, 5.0), (2, 5.1), (3, 4.9))],
            "base": [C.RowRun(seed=s, steps=1, dev_ppl=p) for s, p in ((1, 6.0), (2, 6.2), (3, 5.9))]}
    v = judged(dropout_free, rows)
    assert v.estimate.delta == pytest.approx(1.0333, abs=1e-3) and v.verdict == "held"
    assert v.estimate.sentences == 0 and v.comparison.sentences.startswith("seeds only")


def test_preconditions_make_a_claim_untestable_and_say_why():
    dropout = next(c for c in C.CLAIMS if c.id == "D-dropout-ppl")
    big = next(c for c in C.CLAIMS if c.id == "big-ppl")
    capacity = [c for c in C.CLAIMS if c.group in ("A", "B", "C")]
    assert dropout.needs and big.needs and not any(c.needs for c in capacity)  # capacity claims: any budget
    falling = (40.0, 30.0, 25.0, 22.0)
    run = lambda s, ppl, curve, steps=100: C.RowRun(seed=s, steps=steps, dev_ppl=ppl, dev_ppl_curve=curve, train_loss_tail=3.5)
    rows = {"base": [run(s, 20.0 + s, falling) for s in (1, 2, 3)], "D1": [run(s, 22.0 + s, falling) for s in (1, 2, 3)]}
    v = judged(dropout, rows)
    assert v.verdict == C.UNTESTABLE and "D1 does not over-fit" in v.reason and v.estimate is not None
    rising = (40.0, 20.0, 21.0, 23.0)  # lowest mid-run, then up 15%: over-fitting
    rows["D1"] = [run(s, 23.0 + s, rising) for s in (1, 2, 3)]
    assert judged(dropout, rows).verdict in C.DIRECTIONAL
    rows["big"] = [run(s, 30.0 + s, falling, steps=100) for s in (1, 2, 3)]
    v = judged(big, rows)
    assert v.verdict == C.UNTESTABLE and "3x" in v.reason
    rows["big"] = [run(s, 30.0 + s, falling, steps=300) for s in (1, 2, 3)]
    assert judged(big, rows).verdict in C.DIRECTIONAL


def test_kendall_tau_with_interval():
    paper = [1, 2, 3, 4, 5, 6, 7, 8]
    tau, lo, hi = C.kendall_tau(paper, [[p + 0.1, p - 0.1] for p in paper], samples=200)
    assert tau == pytest.approx(1.0) and lo > 0.5
    rng = np.random.default_rng(0)
    tau, lo, hi = C.kendall_tau(paper, [list(rng.normal(0, 1, 3)) for _ in paper], samples=200)
    assert lo < 0 < hi  # a random order: no agreement that the interval can see


def _kendall_tau_a_row_at_a_time(paper_values, ours, samples, seed):
    """The bootstrap as first written, one `rng.choice` and one mean a row: the reference kendall_tau keeps to."""
    p = np.asarray(paper_values, float)
    rng = np.random.default_rng(seed)
    seeds = [np.asarray(o) for o in ours]
    taus = []
    for _ in range(samples):
        rows = rng.integers(len(p), size=len(p))
        m = np.array([np.mean(rng.choice(seeds[r], size=len(seeds[r]))) for r in rows])
        if len(set(rows)) > 2:
            taus.append(C._tau_b(p[rows], m))
    taus = [t for t in taus if np.isfinite(t)]
    return tuple(float(x) for x in np.percentile(taus, [2.5, 97.5]))


@pytest.mark.parametrize("seeds", [[3], [1], [10], [2, 3, 5]], ids=["3-seeds", "1-seed", "10-seeds", "unequal"])
def test_kendall_tau_draws_and_sums_as_a_row_at_a_time_bit_for_bit(seeds):
    """Resampling all rows' seeds in one draw gives the interval of the loop a row at a time, to the last bit
    (the committed reports' intervals do not move), with equal seed counts (one draw) and unequal (a row each)."""
    rng = np.random.default_rng(7)
    paper = list(rng.normal(25, 2, 12))
    ours = [list(x + rng.normal(0, 1.5, seeds[i % len(seeds)])) for i, x in enumerate(paper)]
    for seed in (12345, 1):
        assert C.kendall_tau(paper, ours, 300, seed)[1:] == _kendall_tau_a_row_at_a_time(paper, ours, 300, seed)


def test_claims_pool_the_sentences_of_every_split_a_trial_scored(repo):
    """BLEU pools the eval split and the extra splits; perplexity adds the perplexity-only splits; a split
    without statistics (an older run) is left out, and the pool is named in what was resampled."""
    from zoo.reports.verdicts import _pooled
    from zoo.result import RunResult, SplitScore, Trial
    from zoo.spec import resolve
    cfg = resolve(repo / "specs/base.yaml", None, "smoke",
                  ["eval.extra_splits=[test, test_2018_flickr]", "eval.ppl_splits=[test_2017_flickr]"])[0]
    b = lambda n, v: [[v] * 10 for _ in range(n)]
    result = RunResult(config_hash="h", variant="base", profile="smoke", steps_done=1, eval_split="dev",
                       dev_nll_stats=[[1.0, 2]] * 3, splits={
                           "dev": SplitScore(eval_split="dev", bleu_stats=b(3, 1)),
                           "test": SplitScore(eval_split="test", bleu_stats=b(2, 2), nll_stats=[[2.0, 2]] * 2),
                           "test_2018_flickr": SplitScore(eval_split="test_2018_flickr"),  # an older run's: no stats
                           "test_2017_flickr": SplitScore(eval_split="test_2017_flickr", nll_stats=[[3.0, 2]] * 4)})
    t = Trial(spec="base.yaml", variant="base", trial="base", profile="smoke", status="finished", config=cfg,
              result=result)
    bleu, where = _pooled(t, "bleu")
    assert where == ("dev", "test") and bleu.shape == (5, 10) and list(bleu[:, 0]) == [1, 1, 1, 2, 2]
    nll, where = _pooled(t, "nll")
    assert where == ("dev", "test", "test_2017_flickr") and nll.shape == (9, 2)
    assert list(nll[:, 0]) == [1.0] * 3 + [2.0] * 2 + [3.0] * 4
    t.result.splits["dev"].bleu_stats = None  # no statistics on the eval split: no pool at all
    assert _pooled(t, "bleu") == (None, ())
