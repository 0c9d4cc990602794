"""Each verdict as one sentence to paste: the evidence's wording, and where it is printed (the claims table,
zoo compare, the LaTeX table)."""
import pytest

from zoo import evidence as E

from helpers import ran


def estimate(delta, lo, hi, se=0.2, seeds=(3, 3), paired=True):
    return E.Estimate(delta=delta, se=se, df=seeds[0] - 1, lo=lo, hi=hi, mc_error=0.001, seeds=seeds,
                      paired=paired, sentences=1000, resamples=1000, seed_se=se, sentence_se=0.0)


def judged(claim, e, **extra):
    (v,) = E.judge([E.Comparison(claim, e, **extra)])
    return v


DEPTH = E.Claim("depth", "C", "4 layers beat 1", "ppl", "C3", "C1")


def test_a_held_claim_reads_as_the_issue_asks():
    v = judged(DEPTH, estimate(2.36, 1.79, 2.94))
    assert v.verdict == "held"
    assert E.say(v) == f"C3 beats C1 by 2.36 PPL [1.79, 2.94], paired over 3 seeds, Holm-adjusted p {v.p_holm:.3g}."


def test_a_flipped_claim_names_the_row_ahead_and_says_flipped():
    v = judged(DEPTH, estimate(-14.58, -19.78, -9.37, se=2))
    assert v.verdict == "flipped"
    assert E.say(v).startswith("C1 beats C3 by 14.58 PPL [9.37, 19.78], paired over 3 seeds, Holm-adjusted p ")
    assert E.say(v).endswith(": flipped (the paper has C3 ahead).")


def test_unpaired_rows_say_welch_and_each_rows_seeds():
    v = judged(DEPTH, estimate(0.3, -2.0, 2.6, se=1.0, seeds=(2, 3), paired=False))
    s = E.say(v)
    assert "C3 leads C1 by 0.30 PPL [-2.00, 2.60], Welch's unpaired test over 2 and 3 seeds" in s, s
    assert s.endswith(": within noise, no verdict.") and "beats" not in s


def test_a_verdict_that_decides_nothing_says_no_verdict():
    cut = judged(DEPTH, None, missing="cut short: C3 ran 439 of 500 steps")
    assert E.say(cut) == "C3 against C1 on PPL: no verdict (cut short: C3 ran 439 of 500 steps)."
    untestable = judged(DEPTH, estimate(2.0, 1.5, 2.5), untestable="C1 does not over-fit; the add-on ...")
    assert E.say(untestable).endswith(": untestable at this budget (C1 does not over-fit), no verdict.")
    tie = E.Claim("pos", "E", "nearly identical", "bleu", "E", "base", tie=True, margin=0.015)
    v = judged(tie, estimate(2.85, -1.15, 6.84, se=1.5), level=20.0)
    assert E.say(v).startswith("E leads base by 2.85 BLEU [-1.15, 6.84], paired over 3 seeds, margin ±0.30 (1.5% of base)")
    assert E.say(v).endswith(": inconclusive, no verdict.")


@pytest.mark.slow  # the claims of a reference store, bootstrapped
def test_the_sentence_column_of_the_claims_table_uses_the_real_figures(repo):
    from zoo.reports import frames, runs as R
    runs = R.load(repo / "results/ablation2-cpu2/zoo.db", profile="ablation", addons=("ablation_dropout", "ablation_big"))
    claims = frames.table(runs, 3, section=1)
    assert claims.loc["C-depth-ppl", "sentence"] == ("C1 beats C3 by 14.58 PPL [9.37, 19.78], paired over 3 seeds, "
                                                     "Holm-adjusted p 0.0341: flipped (the paper has C3 ahead).")
    assert claims.loc["C-width-ppl", "sentence"] == ("C5 beats C4 by 12.54 PPL [10.97, 14.10], paired over 6 seeds, "
                                                     "Holm-adjusted p 4.52e-05.")
    # the table's own cells, in other words
    assert claims.loc["C-width-ppl", "measured 95% interval"] == "[+10.97, +14.10]"


@pytest.mark.slow  # a comparison of a reference store, bootstrapped
def test_zoo_compare_prints_the_sentence(repo, capsys):
    r = ran("compare", "C3", "C1", "--runs", repo / "results/ablation2-cpu2/zoo.db", "--profile", "ablation", capsys=capsys)
    assert r.returncode == 0, r.stderr
    assert ("in a sentence: C1 beats C3 by 14.58 PPL [9.37, 19.78], paired over 3 seeds, p 0.00682 "
            "(one comparison, unadjusted).") in r.stdout, r.stdout


@pytest.mark.slow  # a report of a reference store
def test_the_latex_claims_table_carries_the_sentence(repo, tmp_path, capsys):
    r = ran("report", "--runs", repo / "results/quick-cpu2/zoo.db", "--table", "3", "--format", "latex",
            "--out", tmp_path, capsys=capsys)
    assert r.returncode == 0, r.stderr
    tex = next(tmp_path.glob("table3*.tex")).read_text()
    assert "& sentence \\\\" in tex and "no verdict (cut short" in tex, tex[-3000:]
