"""Tables 2, 3 and 4 as pandas frames: the paper's figures (zoo.paper) beside the measured ones (the
results store), with the analytic costs (zoo.costs).

Frames hold raw values (None where there is nothing), object dtype so integers stay integers;
render.py formats them. Columns are (section, label) pairs; a two-level index is (group, row).
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field

import pandas as pd
from scipy.stats import spearmanr

from zoo.reports import peaks
from zoo.reports.runs import (TABLE2_SPECS, TABLE3_SPECS, TABLE4_SPECS, Runs, config_of, paper_configs)
from zoo import costs, paper
from zoo.errors import UserError
from zoo.result import RunResult, SplitScore, Trial, TrialStatus
from zoo.spec import Config, profile_description


@dataclass
class Section:
    heading: str
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    data: list = field(default_factory=list)  # typed rows behind the frame, for figures


@dataclass
class Table:
    name: str                       # file stem: table2, table3, table4
    title: str
    intro: str
    sections: list[Section]
    notes: list[str]
    trials: list[tuple[str, Trial]]  # (row label, trial) shown on the page, for curves and attention
    counts: dict                    # state -> number of paper rows in it, for the index


# -- shared cell helpers --------------------------------------------------------------------------

class State(str):
    """A row's state as shown ("done", "failed: ...") that also carries its one-word key (for CSS
    classes and counts), so nothing parses the display text back."""
    key: str

    def __new__(cls, key: str, text: str | None = None):
        self = super().__new__(cls, text or key)
        self.key = key
        return self


CITED = State("cited", "cited, not re-run")


def state(t: Trial | None) -> State:
    if t is None:
        return State("not-run", "not run")
    s = t.status
    if s is TrialStatus.running:
        return State("running", f"running: step {t.step or 0} of {t.steps or '?'}")
    if s is TrialStatus.failed:
        reason = (t.error or "no reason recorded").strip().splitlines()
        reason = reason[-1] if reason else "no reason recorded"  # a traceback's last line is the error
        return State("failed", "failed: " + (reason if len(reason) <= 120 else reason[:117] + "..."))
    if s is TrialStatus.finished:
        if truncated(t):  # a wall-clock cap cut it short: shown, but kept out of every comparison
            done, planned = t.result.steps_done, t.steps
            limit = t.config and t.config.train.time_limit_minutes
            return State("truncated", f"truncated: step {done} of {planned}" + (f", {limit:g}-minute limit" if limit else ""))
        return State("done")
    if s is TrialStatus.stopped:  # ended early by a sweep's scheduler (ASHA): its figures are not final
        return State("stopped", f"stopped early at step {t.step or 0} of {t.steps or '?'}")
    return State(s.value)  # pending


def truncated(t: Trial | None) -> bool:
    """A finished run that stopped before its planned steps (a time limit): not comparable to its group."""
    if not t or not t.finished:
        return False
    done, planned = t.result and t.result.steps_done, t.steps
    return bool(done and planned and done < planned)


def _metrics(t: Trial | None) -> RunResult | None:
    """A finished trial's result; None for the others (a running trial's figures are not final)."""
    return t.result if t and t.finished else None


def _vocab(t: Trial | None, cfg: Config) -> int:
    m = _metrics(t)
    return (m and m.vocab_size_actual) or cfg.data.vocab_size


def over_seeds(trials: list[Trial], key: str) -> tuple[float | None, float | None, int]:
    """Mean, sample standard deviation (None for one seed) and count of a finished figure over seeds."""
    vals = [v for x in trials if x.result and (v := x.result.figure(key)) is not None]
    if not vals:
        return None, None, 0
    mean = sum(vals) / len(vals)
    sd = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else None
    return mean, sd, len(vals)


def flops_done(t: Trial | None, cfg: Config | None) -> float | None:
    """Analytic training FLOPs of the steps actually done (per step x steps done, so far if running)."""
    if t is None or cfg is None:
        return None
    steps = t.result.steps_done if t.finished and t.result else t.step
    if not steps:
        return None
    return costs.train_flops_per_step(cfg, vocab_size=_vocab(t, cfg)) * steps


def data_split(t: Trial | None, cfg: Config | None) -> str | None:
    """'dataset / eval split' the trial used (from its metrics once finished, else its config)."""
    if t is None or cfg is None:
        return None
    m = _metrics(t)
    return f"{(m and m.dataset) or cfg.data.dataset} / {(m and m.eval_split) or cfg.eval.split}"


def _frame(rows: list[list], index: list, columns: list[tuple], names=("group", "row")) -> pd.DataFrame:
    idx = pd.MultiIndex.from_tuples(index, names=names) if index and isinstance(index[0], tuple) \
        else pd.Index(index, name=names[-1])
    return pd.DataFrame(rows, index=idx, columns=pd.MultiIndex.from_tuples(columns), dtype=object)


def _count(labels: list[State]) -> dict:
    out: dict = {}
    for s in labels:
        out[s.key] = out.get(s.key, 0) + 1
    return out


def _profile_notes(trials: list[Trial]) -> list[str]:
    """Say what each profile in use means, and its schedule (warmup, peak learning rate)."""
    notes = []
    for prof in sorted({t.profile for t in trials if t}):
        cfg = next((t.config for t in trials if t and t.profile == prof and t.config), None)
        if cfg is not None and cfg.profile_description:  # what the profile said when the run started
            text = f"{prof}: {cfg.profile_description}"
        else:  # a run from before descriptions were kept: today's profile file, if it is still there
            try:
                text = profile_description(prof)
            except (UserError, OSError):
                text = f"{prof}: (profile description not found)"
        if cfg is not None:
            s = cfg.train.schedule
            # zoo.train.noam_lr at step = warmup (its peak), written out until noam_lr lives in a module
            # without torch: the report never imports torch (tests/test_report.py)
            lr = s.lr_scale * cfg.model.d_model ** -0.5 * s.warmup_steps ** -0.5
            text += (f" Schedule: linear warmup over {s.warmup_steps} steps, then inverse square root decay; "
                     f"lr_scale {s.lr_scale:g}, peak learning rate {lr:.2g} at d_model {cfg.model.d_model}.")
        if prof != "paper":
            text += (f" Numbers from the {prof} profile are not comparable in absolute terms to the paper's "
                     "(another model scale, data set or training budget, as described): compare the rank "
                     "order of rows, not the values.")
        notes.append("Profile " + text)
    return notes


def _decoding_note(shown: list[tuple[str, Trial]]) -> str:
    """How the finished rows decoded (the paper: beam 4, alpha 0.6, input + 50); profiles may differ."""
    ways: dict[str, list[str]] = {}
    for label, t in shown:
        if (cfg := t.config) and t.finished:
            e = cfg.eval
            way = (f"beam {e.beam_size}, alpha {e.length_penalty:g}, max length input + {e.max_len_offset}"
                   + (f", first {e.max_sentences} sentences" if e.max_sentences else ""))
            ways.setdefault(way, []).append(label)
    if len(ways) <= 1:
        return f"Decoding: {next(iter(ways))}." if ways else ""
    return "Decoding: " + "; ".join(f"{w} ({', '.join(rows)})" for w, rows in ways.items()) + "."


COUNTING = (f"Counting rules. Parameters: numel of the compiled model, each tensor once (the shared "
            f"embedding / pre-softmax matrix counts once), with the vocabulary the run actually built. "
            f"FLOPs: analytic, 2 per multiply-add of every matrix product, training = 3 x forward, "
            f"attention counted dense, sentences of {costs.SEQ_LEN} word-pieces, batch_tokens source and "
            f"target tokens per step, times the number of steps (done, unless a column says planned).")


def paper_metric(seeds: list[Trial], m: RunResult | None):
    """The paper's own BLEU (zoo.metrics.paper_bleu), mean over seeds; 'n/a (older store)' for a
    finished run from before it was kept."""
    if m is None or m.primary is None or m.primary.bleu is None:
        return None
    mean, _, n = over_seeds(seeds, "bleu_paper")
    return mean if n else OLDER


OLDER = "n/a (older store)"
PAPER_METRIC_NOTE = ("BLEU, paper's metric: tokenized BLEU with the compound splitting of tensor2tensor's "
                     "get_ende_bleu.sh (Moses tokenizer, ##AT##-##AT## compounds, multi-bleu), the metric of the "
                     "paper's figures; it reads higher than sacreBLEU (the paper's 25.8 / 28.4 are in it). "
                     "n/a (older store): a run from before it was kept (the store keeps no hypotheses to score again).")


# -- Table 3 --------------------------------------------------------------------------------------

T3_COLUMNS = [("spec", c) for c in ("N", "d_model", "d_ff", "h", "d_k", "d_v", "P_drop", "eps_ls", "steps", "PE")] + [
    ("paper", "PPL"), ("paper", "BLEU"), ("paper", "params (M)"), ("paper", "Δ params"),
    ("measured", "PPL"), ("measured", "BLEU"), ("measured", "BLEU sd"), ("measured", "BLEU, paper's metric"),
    ("measured", "seeds"),
    ("measured", "params (M)"),
    ("cost", "train FLOPs"),
    ("run", "state"), ("run", "profile"), ("run", "data / split")]


def table3(runs: Runs, resamples: int | None = None, bootstrap_seed: int | None = None) -> Table:
    specs = {row: c for (_, row), c in paper_configs(TABLE3_SPECS).items()}
    rows, index, shown, states, measured = [], [], [], [], []
    per_seed = {"bleu": [], "dev_ppl": []}  # (paper figure, our figure per seed) per row, for Kendall tau
    for row, group, ppl, bleu, params_m in paper.TABLE3:
        t = runs.pick(3, row)
        cfg = config_of(t) or specs.get(row)
        m = _metrics(t)
        seeds = runs.seeds(t)  # with a seeds axis: mean and spread over the seeds that finished
        our_bleu, bleu_sd, n_seeds = over_seeds(seeds, "bleu")
        our_ppl, _, _ = over_seeds(seeds, "dev_ppl")
        our_paper_bleu = paper_metric(seeds, m)
        ours_params = costs.params_analytic(cfg.model, _vocab(t, cfg)) / 1e6 if m and cfg else None
        # Δ compares like with like: the paper spec at paper scale (its vocabulary) against the printed
        # count; a scaled run's own count has no Δ (it would measure the profile, not a discrepancy)
        ps = specs.get(row)
        spec_params = costs.params_analytic(ps.model, ps.data.vocab_size) / 1e6 if ps else None
        spec = [cfg.model.N, cfg.model.d_model, cfg.model.d_ff, cfg.model.h, cfg.model.d_k, cfg.model.d_v,
                cfg.model.dropout, cfg.train.label_smoothing, cfg.train.steps,
                {"sinusoidal": "sinusoid"}.get(cfg.model.positional_encoding, cfg.model.positional_encoding)] \
            if cfg else [None] * 10
        st = state(t)
        rows.append(spec + [
            ppl, bleu, params_m, 100 * (spec_params - params_m) / params_m if spec_params and params_m else None,
            our_ppl, our_bleu, bleu_sd, our_paper_bleu, n_seeds or None, ours_params,
            flops_done(t, cfg), st, t and t.profile, data_split(t, cfg)])
        index.append((paper.TABLE3_GROUPS[group], row))
        states.append(st)
        if t:
            shown.append((row, t))
        if (our_bleu is not None or our_ppl is not None) and not truncated(t):
            measured.append((group, bleu, our_bleu, ppl, our_ppl))
            for key, ref, out in (("bleu", bleu, per_seed["bleu"]), ("dev_ppl", ppl, per_seed["dev_ppl"])):
                vals = [v for x in seeds if (v := x.result.figure(key)) is not None]
                if vals:
                    out.append((ref, vals))
    frame = _frame(rows, index, T3_COLUMNS)
    sigs = sorted({s for _, t in shown if (m := _metrics(t)) and m.primary and (s := m.primary.bleu_signature)})
    notes = [
        "Paper: Vaswani et al. (2017) Table 3, EN-DE dev set newstest2013, perplexity per word-piece, "
        "BLEU, parameters x 1e6 (blank where the paper prints none). Spec columns: the configuration as "
        "run for rows that ran (their profile applied), else the paper spec as written.",
        "Measured: dev perplexity per word-piece (no label smoothing) and sacreBLEU on the eval split "
        "with the final weights (no checkpoint averaging); with several seeds, their mean, the BLEU "
        "standard deviation over seeds (sd) and the number of seeds. " + _decoding_note(shown) + " "
        + ("sacreBLEU signature: " + "; ".join(sigs) if sigs else "No BLEU measured yet."),
        "Measured params: the compiled count of the model as run (a scaled profile's own size). Δ params: "
        "our compile of the paper spec at paper scale with its vocabulary (37000) against the paper's printed "
        "count; about -3% on every row, since a shared vocabulary of about 41K (not 37K) fits the printed "
        "counts, and the paper's big (213M) is inconsistent with its own C5 (168M) under any vocabulary.",
        PAPER_METRIC_NOTE,
        COUNTING,
        *_profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    claims = claims_section(runs, resamples, bootstrap_seed)
    rank = Section("Rank agreement (Spearman) between measured and paper", spearman_frame(measured), [
        "Spearman's rho between our values and the paper's, across the rows that ran to their planned "
        "steps (a truncated row is shown above but compared with nothing), per group of the "
        "paper and overall; computed where at least 3 rows ran. PPL: lower is better in both, so a "
        "positive rho means the same order. With few rows the p-values are weak evidence.",
        *_kendall_notes(per_seed)])
    return Table("table3", "Table 3: variations on the Transformer architecture",
                 "Each row of the paper's ablation table: the paper's figures beside ours, what it cost, "
                 "and where the run stands.", [Section("", frame), claims, rank], notes, shown, _count(states))


CLAIM_COLUMNS = [("verdict", "verdict"), ("claim", "the paper says"), ("claim", "rows"),
                 ("paper", "Δ"), ("measured", "Δ"), ("measured", "95% interval"), ("measured", "MC error"),
                 ("measured", "p (Holm)"),
                 ("measured", "Δ, paper's BLEU"), ("measured", "seeds")]


def claims_section(runs: Runs, resamples: int | None = None, bootstrap_seed: int | None = None) -> Section:
    """Each of the paper's Table 3 claims (zoo.claims) with our difference, its interval and a verdict."""
    from zoo import claims as C, stats as S
    resamples = resamples or S.RESAMPLES
    bootstrap_seed = S.BOOTSTRAP_SEED if bootstrap_seed is None else bootstrap_seed
    rows = claim_rows(runs)
    resamplers: dict[int, S.Resampler] = {}

    def resampler(n: int) -> S.Resampler:  # one per number of sentences (0: seeds only), shared by all claims
        if n not in resamplers:
            resamplers[n] = S.Resampler(n, resamples, bootstrap_seed + n)
        return resamplers[n]

    verdicts = C.judge([_comparison(runs, rows, c, resampler) for c in C.CLAIMS])
    frame_rows, index, mc = [], [], 0.0
    for v in verdicts:
        c, e = v.claim, v.estimate
        mc = max(mc, e.mc_error if e else 0.0)
        why = f"{v.verdict}: {v.reason}" if v.reason else v.verdict
        unit = "BLEU" if c.metric == "bleu" else "PPL"
        frame_rows.append([
            why, f"{c.group}: {c.text} ({unit})", f"{c.better} {'≈' if c.tie else '>'} {c.worse}",
            round(c.paper_delta, 2), e and e.delta, e and f"[{e.lo:+.2f}, {e.hi:+.2f}]", e and f"±{e.mc_error:.3f}",
            None if v.p_holm is None else f"{v.p_holm:.3g}", _paper_metric_delta(rows, c) if e else None,
            e and "{} / {}".format(*e.seeds)])
        index.append(c.id)
    frame = _frame(frame_rows, index, CLAIM_COLUMNS, names=("claim",))
    tally = C.Tally.of(verdicts)
    tested = [v for v in verdicts if v.p_holm is not None]
    resampled = sorted({v.comparison.sentences for v in verdicts if v.estimate})
    margins = sorted({f"{100 * v.claim.margin:g}%" for v in verdicts if v.claim.tie})
    notes = [
        "Tally: " + tally.text(),
        f"Statistics: {resamples:,} resamples of a hierarchical bootstrap (Multi-Bootstrap, Sellam et al. "
        f"2022; bootstrap seed {bootstrap_seed}, `zoo report --bootstrap-seed N`): each resample draws the "
        "seeds with replacement and the dev sentences with replacement, and recomputes both rows' corpus "
        "BLEU or perplexity on the drawn sentences. Rows run on the same seeds are compared seed by seed "
        "(seed s gives every row the same data order), and both rows always on the same sentences. "
        "Resampled here: " + ("; ".join(resampled) or "nothing yet") + ". The resamples give the standard "
        "error of the difference; the 95% interval is Δ ± t × se, the seed part of the variance unbiased "
        "and the seeds' degrees of freedom (S - 1 for rows compared seed by seed: the seeds are the "
        "independent units) (a percentile bootstrap of 3 seeds covers a "
        "null effect only about 80% of the time). MC error: the Monte Carlo error of each interval end from "
        f"the finite resamples (at most {mc:.3f} here).",
        f"Multiple comparisons: Holm's correction across the {len(tested)} claims tested in this report "
        "(one family), so the chance that any verdict here is a false finding is at most 5%; Holm rather "
        "than Benjamini-Hochberg because each verdict is read on its own. p (Holm) is that adjusted "
        "p-value; the interval is per claim, unadjusted.",
        "Verdicts. A claim that one row is better: held (Holm p < 0.05, Δ on the paper's side), flipped "
        "(Holm p < 0.05, the other side), within noise (no finding either way). A tie (the paper: nearly "
        "identical): equivalent (two one-sided tests show |Δ| is within the margin, "
        + (", ".join(margins) or "none") + " of the second row's figure: closer than the smallest difference "
        "the paper calls real, 0.4 BLEU of 25.8 and 0.1 PPL of 4.91), different (|Δ| beyond the margin), "
        "inconclusive (neither). Untestable at this budget: a precondition written with the claim, from "
        "the paper, before any run (over-fitting for the dropout claim, the paper's 3x steps for big) "
        "is not met by these runs; the measured Δ is still shown, and such a claim is not in the Holm family.",
        "Each claim compares two rows on one metric, written from the paper's text (section 6.2, 5.4) and "
        "its Table 3, never from our results. Δ: how much better the first row is (BLEU higher, PPL "
        "lower), the mean over seeds. Rows stopped early by a time limit (truncated) are excluded."]
    return Section("Claims", frame, notes, verdicts)


def _paper_metric_delta(rows: dict, c):
    """A BLEU claim's difference in the paper's own BLEU, mean over the seeds both rows ran (shown beside
    the verdict, which is on sacreBLEU); n/a for an older store."""
    if c.metric != "bleu":
        return None
    a, b = ({r.seed: r.bleu_paper for r in rows.get(row) or []} for row in c.rows)
    common = [s for s in a if s in b]
    if not common or any(a[s] is None or b[s] is None for s in common):
        return OLDER
    return sum(a[s] - b[s] for s in common) / len(common)


def claim_rows(runs: Runs) -> dict[str, list]:
    """Per Table 3 row, its finished seeds as zoo.claims.RowRun (truncated rows left out)."""
    import numpy as np
    from zoo import claims as C
    out = {}
    for row, *_ in paper.TABLE3:
        t = runs.pick(3, row)
        if not t or not t.finished or truncated(t):
            continue
        got = []
        for x in runs.seeds(t):
            m = x.result
            points = runs.points(x)
            curve = tuple(p.dev_ppl for p in points if p.dev_ppl)
            losses = [p.loss for p in points if p.loss is not None]
            tail = losses[-max(1, len(losses) // 10):]
            stats = m.primary.bleu_stats if m.primary else None
            got.append(C.RowRun(
                seed=x.seed or 0, steps=m.steps_done, dev_ppl=m.dev_ppl,
                bleu_paper=m.primary.bleu_paper if m.primary else None,
                dev_ppl_curve=curve, train_loss_tail=sum(tail) / len(tail) if tail else None,
                bleu_stats=np.asarray(stats, float) if stats else None,
                nll_stats=np.asarray(m.dev_nll_stats, float) if m.dev_nll_stats else None))
        out[row] = got
    return out


def _comparison(runs: Runs, rows: dict, c, resampler):
    from zoo import claims as C
    picked = [runs.pick(3, row) for row in c.rows]
    if not all(t and t.finished for t in picked):
        return C.Comparison(c, missing="not run")
    if any(truncated(t) for t in picked):
        return C.Comparison(c, missing="excluded: truncated")
    if picked[0].profile != picked[1].profile:
        return C.Comparison(c, missing="rows ran under different profiles")
    return C.compare(c, rows, resampler)


def _kendall_notes(per_seed: dict) -> list[str]:
    from zoo import claims as C
    out = []
    for key, label in (("bleu", "BLEU"), ("dev_ppl", "PPL")):
        pairs = per_seed[key]
        if len(pairs) >= 4:
            tau, lo, hi = C.kendall_tau([p for p, _ in pairs], [v for _, v in pairs])
            out.append(f"Kendall tau ({label}, {len(pairs)} rows): {tau:+.2f}, 95% interval [{lo:+.2f}, {hi:+.2f}] "
                       "(bootstrap over rows and seeds); an interval covering 0 is no evidence of agreement.")
    return out


def spearman_frame(measured: list[tuple]) -> pd.DataFrame:
    """measured: (group, paper BLEU, our BLEU, paper PPL, our PPL) per row that ran."""
    def rho(pairs):
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        if len(pairs) < 3:
            return None, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant input: rho is undefined (nan), said in the cell
            r = spearmanr([a for a, _ in pairs], [b for _, b in pairs])
        return float(r.statistic), float(r.pvalue)

    groups = [(title, [x for x in measured if x[0] == g]) for g, title in paper.TABLE3_GROUPS.items()]
    rows, index = [], []
    for title, xs in groups + [("overall", measured)]:
        rb, pb = rho([(x[1], x[2]) for x in xs])
        rp, pp = rho([(x[3], x[4]) for x in xs])
        n = len(xs)
        if n < 3:
            note = f"n = {n}: too few rows ran (needs 3)"
        elif any(v is not None and math.isnan(v) for v in (rb, rp)):
            note = "undefined where one side is constant"
        else:
            note = ""
        rows.append([n, rb, pb, rp, pp, note])
        index.append(title)
    cols = [("", "rows ran"), ("BLEU", "rho"), ("BLEU", "p"), ("PPL", "rho"), ("PPL", "p"), ("", "note")]
    return _frame(rows, index, cols, names=("group",))


# -- Table 2 --------------------------------------------------------------------------------------

def table2(runs: Runs) -> Table:
    specs = paper_configs(TABLE2_SPECS)
    pub_rows, pub_index = [], []
    for model, de, fr, cost_de, cost_fr, ours in paper.TABLE2:
        pub_rows.append([de, fr, cost_de, cost_fr,
                         f"this paper; re-run below ({ours})" if ours else "cited, not re-run"])
        pub_index.append(model)
    published = _frame(pub_rows, pub_index, [("BLEU", "EN-DE"), ("BLEU", "EN-FR"), ("training cost (FLOPs)", "EN-DE"),
                                             ("training cost (FLOPs)", "EN-FR"), ("", "source")], names=("model",))

    paper_bleu = {(ours, "EN-DE"): de for _, de, _, _, _, ours in paper.TABLE2 if ours} | \
                 {(ours, "EN-FR"): fr for _, _, fr, _, _, ours in paper.TABLE2 if ours}
    rows, index, shown, states, peak_notes = [], [], [], [], set()
    for group in ("EN-DE", "EN-FR"):
        for row in ("base", "big"):
            t = runs.pick(2, row, group)
            cfg = config_of(t) or specs.get((group, row))
            m = _metrics(t)
            test = (m and m.split("test")) or SplitScore(eval_split="test")
            spent = flops_done(t, cfg)
            pk = peaks.peak(t.placement, m.hardware, m.provenance) if m else None
            secs = m and m.train_seconds
            util = spent / (secs * pk[0]) if spent and secs and pk else None
            if pk:
                peak_notes.add(pk[1])
            elif m:
                peak_notes.add(f"{group} {row}: no peak known for '{t.hardware or m.hardware.device}' "
                               "(the store does not name the device model or its threads), so no utilization")
            st = state(t)
            rows.append([
                paper_bleu[(row, group)], test.bleu,
                test.bleu_paper if test.bleu_paper is not None else (OLDER if test.bleu is not None else None),
                test.eval_weights or None, test.bleu_final_weights,
                paper.paper_cost_flops(row),
                costs.train_flops_total(cfg, vocab_size=_vocab(t, cfg)) if cfg else None,
                spent, secs, pk[0] if pk else None, util,
                st, t.hardware if t else None, t and t.profile, data_split(t, cfg)])
            index.append((group, row))
            states.append(st)
            if t:
                shown.append((f"{group} {row}", t))
    cols = [("paper", "BLEU"), ("measured", "BLEU (test)"), ("measured", "BLEU (test), paper's metric"),
            ("measured", "weights"),
            ("measured", "BLEU, final weights"),
            ("cost", "paper hardware-time estimate"), ("cost", "analytic FLOPs as specified"),
            ("cost", "FLOPs spent"), ("cost", "wall time"), ("cost", "device peak FLOP/s"),
            ("cost", "utilization"), ("run", "state"), ("run", "hardware"), ("run", "profile"), ("run", "data / split")]
    ours = _frame(rows, index, cols, names=("pair", "row"))

    # The paper's own cost: its hardware-time estimate against the analytic FLOPs of its spec.
    cost_rows = []
    for row in ("base", "big"):
        cfg = specs.get(("EN-DE", row))
        est, ana = paper.paper_cost_flops(row), costs.train_flops_total(cfg) if cfg else None
        cost_rows.append([est, ana, ana / est if est and ana else None])
    paper_cost = _frame(cost_rows, ["base", "big"], [("", "hardware-time estimate"),
                        ("", "analytic FLOPs of the spec"), ("", "implied utilization")], names=("row",))

    sigs = sorted({s for _, t in shown if (m := _metrics(t)) and (x := m.split("test")) and (s := x.bleu_signature)})
    notes = [
        "Paper: Vaswani et al. (2017) Table 2, newstest2014. Literature rows are cited from the paper "
        "(reference numbers as printed there); they are not re-run here.",
        "Measured: sacreBLEU on the test split, with the checkpoint averaging the spec asks (base: the "
        "last 5 checkpoints, big: the last 20; the weights column says what was scored). Beside it, the "
        "same run's final weights at the same step, so averaging is judged against its own run. "
        + ("Signature: " + "; ".join(sigs) if sigs else "No test BLEU measured yet."),
        PAPER_METRIC_NOTE,
        "Three costs, each a different quantity. Paper hardware-time estimate: training time x 8 GPUs x "
        "9.5 TFLOPS (P100), the paper's footnote 5. Analytic FLOPs as specified: our cost model for the "
        "run's config at its planned steps (the paper spec where the row has not run). FLOPs spent: the "
        "analytic FLOPs per step x the steps actually done. Utilization = FLOPs spent / (wall time x "
        "device peak).",
        "Device peaks: " + ("; ".join(sorted(peak_notes)) if peak_notes else "none needed yet")
        + ". Table: " + "; ".join(n for _, _, n in peaks.GPU_PEAKS) + "; " + peaks.CPU_NOTE + ".",
        COUNTING,
        *_profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    sections = [
        Section("Our base and big rows", ours),
        Section("The paper's rows as published", published),
        Section("The paper's cost: hardware-time estimate against analytic model FLOPs", paper_cost, [
            "The analytic FLOPs of the paper spec (100K steps base, 300K big, 25000 + 25000 tokens a step, "
            "vocabulary 37000) divided by the paper's estimate: the share of 8 x 9.5 TFLOPS the paper's "
            "estimate implies the model actually used."]),
    ]
    return Table("table2", "Table 2: translation quality and training cost",
                 "The paper's machine translation results (newstest2014) with the literature it compares "
                 "against, and our runs of the base and big models with three named costs.",
                 sections, notes, shown, _count(states))


# -- Table 4 --------------------------------------------------------------------------------------

def _needs_data(cfg: Config | None) -> str | None:
    """What to place where, when the row's corpus is not in the data directory (else None)."""
    from zoo import data as zdata
    if cfg is None:
        return None
    try:
        row = next(r for r in zdata.list_corpora() if r["name"] == cfg.data.dataset)
    except StopIteration:
        return None
    if row["status"] == "present":
        return None
    return zdata.corpus(cfg.data.dataset).manual or f"run `zoo data fetch {cfg.data.dataset}`"


def parsing_data(t: Trial | None, cfg: Config | None) -> str | None:
    """What a Table 4 figure was measured on, in words: the NLTK sample is not section 23."""
    if cfg is None:
        return None
    m = _metrics(t)
    split = (m and m.eval_split) or cfg.eval.split
    if ((m and m.dataset) or cfg.data.dataset) == "wsj_sample":
        files = {"train": "wsj_0001-0159", "dev": "wsj_0160-0179", "test": "wsj_0180-0199"}.get(split, split)
        return f"NLTK WSJ sample (sections 00-01), {split} {files}; not comparable to section 23"
    return data_split(t, cfg)


def table4(runs: Runs) -> Table:
    specs = {row: c for (_, row), c in paper_configs(TABLE4_SPECS).items()}
    rows, index, shown, states, floor_notes = [], [], [], [], []
    for parser, training, f1, ours in paper.TABLE4:
        t = runs.pick(4, ours) if ours else None
        cfg = config_of(t) or specs.get(ours)
        m = _metrics(t)
        st = state(t) if ours else CITED
        if ours and t is None and (need := _needs_data(cfg)):
            st = State("needs-data", f"needs data: {cfg.data.dataset} (see the notes)")
            floor_notes.append(f"{parser} ({training}) needs data: {need}")
        if ours:
            states.append(st)
        x = (m and m.primary) or SplitScore(eval_split="")
        flat, right = x.f1_flat, x.f1_right_branching
        malformed = None if x.malformed is None else f"{x.malformed} of {x.eval_sentences}"
        rows.append([f1, x.f1, flat, right, malformed, st, t and t.profile, parsing_data(t, cfg)])
        index.append((training, parser))
        if t:
            shown.append((ours, t))
        if x.f1 is not None and flat is not None and x.f1 <= max(flat, right or 0):
            floor_notes.append(f"{parser} ({training}): the measured F1 {x.f1:.2f} does not beat the trivial "
                               f"parsers on the same trees (flat {flat:.2f}, right-branching {right:.2f}): it "
                               "recovers no more structure than they do.")
    cfgs = [c for _, t in shown if (c := config_of(t))]
    ours_parts = [what for what, on in (
        ("the word pointer (model.word_pointer)", any(c.model.word_pointer for c in cfgs)),
        ("tree-constrained beam search (eval.tree_constraint)", any(c.eval.tree_constraint for c in cfgs))) if on]
    if ours_parts:
        floor_notes.append("Not the paper's: our Transformer row adds " + " and ".join(ours_parts) + ".")
    cols = [("paper", "WSJ 23 F1"), ("measured", "F1"), ("measured", "flat tree F1"),
            ("measured", "right-branching F1"), ("measured", "malformed before repair"),
            ("run", "state"), ("run", "profile"), ("run", "data / split")]
    notes = [
        "Paper: Vaswani et al. (2017) Table 4, English constituency parsing, WSJ section 23 F1. Other "
        "parsers are cited from the paper, not re-run.",
        "Measured: EVALB bracketing F1 (zoo evalb, COLLINS.prm, gold POS tags on the words) on the run's "
        "eval split. Beside it, on the same gold trees, two trivial parsers: the flat tree (one S over the "
        "tags) and the right-branching tree (S, then every suffix a VP); a parser must beat both. "
        "Malformed: predictions that were not a well-formed tree with one preterminal per word before "
        "the repair that lets every output score.",
        *floor_notes,
        *_profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    return Table("table4", "Table 4: English constituency parsing",
                 "The paper's parsing results and our 4-layer Transformer rows.",
                 [Section("", _frame(rows, index, cols, names=("training", "parser")))], notes, shown, _count(states))


BUILDERS = {2: table2, 3: table3, 4: table4}
