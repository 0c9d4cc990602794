"""Tables 2, 3 and 4 as typed rows: the paper's figures (zoo.paper) beside the measured ones (the
results store), with the analytic costs (zoo.model.costs). What their rows share is in cells.py; Table 3's
claims and rank agreement in verdicts.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from zoo import paper
from zoo.model import params_analytic, train_flops_total
from zoo.config import Config
from zoo.reports import peaks
from zoo.reports.cells import (CITED, COUNTING, PAPER_METRIC_NOTE, Run, Section, State, Table, col, columns, count,
                               decoding_note, paper_metric, pct, profile_notes, provenance_flags, run_columns, sci,
                               text_col)
from zoo.reports.runs import Runs, paper_configs, table_specs, whose
from zoo.reports.verdicts import claims_section, rank_section, reference, shared_resampler, versus
from zoo.text import duration


# -- Table 3 --------------------------------------------------------------------------------------
AGAINST = "yours against"  # the column group of a user's row against its reference row (shown only when one is there)

@dataclass
@run_columns("provenance", "state", "profile", "data")
class T3Row:
    """One row of the paper's Table 3 beside our run of it. Measured figures: the mean over its seeds."""
    name: str = ""
    group: str | None = None          # the paper's group title (the group header)
    letter: str = ""                  # the group's key in zoo.paper.TABLE3_GROUPS (the figures' colours)
    run: Run | None = None
    whose: str | None = text_col("", "whose")  # "paper", "yours: SPEC", or "beyond the paper: SPEC" (zoo's own)
    spec_params: float | None = None  # our count of the paper spec at paper scale (its vocabulary)
    spec_flops: float | None = None   # the paper spec's analytic training FLOPs (its planned steps)
    bleu_tokenized: float | None = None  # mean over seeds (model-index.yml)
    # the configuration as run (the paper spec where the row has not run)
    N: int | None = col("spec", "N")
    d_model: int | None = col("spec", "d_model")
    d_ff: int | None = col("spec", "d_ff")
    h: int | None = col("spec", "h")
    d_k: int | None = col("spec", "d_k")
    d_v: int | None = col("spec", "d_v")
    P_drop: float | None = col("spec", "P_drop")
    eps_ls: float | None = col("spec", "eps_ls")
    steps: int | None = col("spec", "steps", "{:,}")
    PE: str | None = text_col("spec", "PE")
    paper_ppl: float | None = col("paper", "PPL", "{:.2f}")  # as printed
    paper_bleu: float | None = col("paper", "BLEU", "{:.1f}")
    paper_params: float | None = col("paper", "params (M)", "{:g}")
    d_params: float | None = col("paper", "Δ params", "{:+.1f}%")
    ppl: float | None = col("measured", "PPL", "{:.2f}")
    bleu: float | None = col("measured", "BLEU", "{:.2f}")
    bleu_sd: float | None = col("measured", "BLEU sd", "{:.2f}")
    bleu_paper: float | str | None = col("measured", "BLEU, paper's metric", "{:.2f}")
    seeds: int | None = col("measured", "seeds", "{:d}")
    params: float | None = col("measured", "params (M)", "{:.3g}")
    flops: float | None = col("cost", "train FLOPs", sci)
    vs: str | None = text_col(AGAINST, "against")              # a user's row: its reference row
    d_ppl: str | None = text_col(AGAINST, "Δ PPL [95%]")     # how much better than the reference (claims' sign)
    d_bleu: str | None = text_col(AGAINST, "Δ BLEU [95%]")

    @property
    def yours(self) -> bool:
        """A row that is not the paper's (a user's, or zoo's own beyond the paper)."""
        return self.whose is not None and self.whose != "paper"


def _shape(cfg: Config | None) -> dict:
    """The spec columns of a config."""
    if cfg is None:
        return {}
    m = cfg.model
    return dict(N=m.N, d_model=m.d_model, d_ff=m.d_ff, h=m.h, d_k=m.d_k, d_v=m.d_v, P_drop=m.dropout,
                eps_ls=cfg.train.label_smoothing, steps=cfg.train.steps,
                PE={"sinusoidal": "sinusoid"}.get(m.positional_encoding, m.positional_encoding))


def table3_rows(runs: Runs, resampler=None) -> list[T3Row]:
    """Every Table 3 row, in the paper's order, each group followed by the user's rows that name it (from
    specs that are not the paper's): what the page, the figures and model-index.yml show. `resampler`:
    the report's shared one, for the user's rows' differences (default: zoo.evidence.stats's)."""
    specs = {row: c for (_, row), c in paper_configs(table_specs(3)).items()}
    resampler = resampler or shared_resampler()
    yours: dict[str, list] = {}
    for t in runs.user_rows(3):
        letter = t.paper_group if t.paper_group in paper.TABLE3_GROUPS else "big"  # a group of its own: at the end
        yours.setdefault(letter, []).append(t)
    rows = []
    for i, (row, letter, ppl, bleu, params_m) in enumerate(paper.TABLE3):
        rows.append(_paper_t3_row(runs, specs, row, letter, ppl, bleu, params_m))
        if i + 1 == len(paper.TABLE3) or paper.TABLE3[i + 1][1] != letter:  # the group's last paper row
            rows += [_user_t3_row(runs, t, letter, resampler) for t in yours.get(letter, [])]
    for r, flag in zip(rows, provenance_flags([r.run.trial for r in rows])[0]):
        r.provenance = flag
    return rows


def _user_t3_row(runs: Runs, t, letter: str, resampler) -> T3Row:
    """A user's row in its group: its measured cells and its difference from its reference row."""
    run = Run.of(t, None, runs.seeds(t))
    cfg, b = run.config, run.over_seeds("bleu")
    name, ref = reference(runs, t)
    diffs = {}
    for metric in ("ppl", "bleu"):
        comp = versus(runs, t, ref, metric, resampler)
        e = comp.estimate
        if e is None:
            diffs[metric] = comp.missing
            continue
        # how much better this row is (BLEU higher, PPL lower): the claims' sign, one sign on the page
        diffs[metric] = f"{e.delta:+.2f} [{e.lo:+.2f}, {e.hi:+.2f}]"
    return T3Row(
        t.variant, paper.TABLE3_GROUPS.get(t.paper_group or "", t.paper_group or "yours"), letter=letter, run=run,
        whose=f"{whose(t)}: {t.spec}", **_shape(cfg),
        ppl=run.over_seeds("dev_ppl").mean, bleu=b.mean, bleu_sd=b.sd, bleu_paper=paper_metric(run, b.mean),
        seeds=b.n or None, params=params_analytic(cfg.model, run.vocab) / 1e6 if run.result and cfg else None,
        flops=run.flops_done(), state=run.state, profile=run.profile, data=run.data_split(),
        vs=name if ref is not None else f"{name} (not run)", d_ppl=diffs["ppl"], d_bleu=diffs["bleu"])


def _paper_t3_row(runs: Runs, specs: dict, row: str, letter: str, ppl, bleu, params_m) -> T3Row:
    """A paper row beside our run of it (the paper spec as written where it has not run)."""
    t, ps = runs.pick(3, row), specs.get(row)
    run = Run.of(t, ps, runs.seeds(t))  # with a seeds axis: mean and spread over the seeds that finished
    cfg, b = run.config, run.over_seeds("bleu")
    # Δ compares like with like: the paper spec at paper scale (its vocabulary) against the printed
    # count; a scaled run's own count has no Δ (it would measure the profile, not a discrepancy)
    spec_params = params_analytic(ps.model, ps.data.vocab_size) if ps else None
    return T3Row(
        row, paper.TABLE3_GROUPS[letter], letter=letter, run=run, whose="paper", spec_params=spec_params,
        spec_flops=ps and train_flops_total(ps), bleu_tokenized=run.over_seeds("bleu_tokenized").mean,
        **_shape(cfg), paper_ppl=ppl, paper_bleu=bleu, paper_params=params_m,
        d_params=100 * (spec_params / 1e6 - params_m) / params_m if spec_params and params_m else None,
        ppl=run.over_seeds("dev_ppl").mean, bleu=b.mean, bleu_sd=b.sd, bleu_paper=paper_metric(run, b.mean),
        seeds=b.n or None, params=params_analytic(cfg.model, run.vocab) / 1e6 if run.result and cfg else None,
        flops=run.flops_done(), state=run.state, profile=run.profile, data=run.data_split())


def table3(runs: Runs, resamples: int | None = None, bootstrap_seed: int | None = None, plan=None) -> Table:
    rows = table3_rows(runs, shared_resampler(resamples or (plan.resamples if plan else None),
                                              (plan.bootstrap_seed if plan else None) if bootstrap_seed is None
                                              else bootstrap_seed))
    ours = [r for r in rows if not r.yours]
    shown = [(r.name, r.run.trial) for r in rows if r.run.trial]
    deltas = sorted((r.d_params, r.name) for r in rows if r.d_params is not None)
    sigs = sorted({s for _, t in shown if t.finished and (x := t.result.primary) and (s := x.bleu_signature)})
    notes = [
        "Paper: Vaswani et al. (2017) Table 3, EN-DE dev set newstest2013, perplexity per word-piece, "
        "BLEU, parameters x 1e6 (blank where the paper prints none). Spec columns: the configuration as "
        "run for rows that ran (their profile applied), else the paper spec as written.",
        "Measured: dev perplexity per word-piece (no label smoothing) and sacreBLEU on the eval split "
        "with the final weights (no checkpoint averaging); with several seeds, their mean, the BLEU "
        "standard deviation over seeds (sd) and the number of seeds. " + decoding_note(shown) + " "
        + ("sacreBLEU signature: " + "; ".join(sigs) if sigs else "No BLEU measured yet."),
        "Measured params: the compiled count of the model as run (a scaled profile's own size). Δ params: "
        "our compile of the paper spec at paper scale with its vocabulary (37000) against the paper's printed "
        "count" + (f"; from {deltas[0][0]:+.1f}% ({deltas[0][1]}) to {deltas[-1][0]:+.1f}% ({deltas[-1][1]}), "
                   if deltas else "; ") +
        "mostly near -3%: a shared vocabulary of about 41K (not 37K) fits most printed counts, and the "
        "paper's big (213M) is inconsistent with its own C5 (168M) under any vocabulary.",
        PAPER_METRIC_NOTE,
        COUNTING,
        *profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    if differ_note := provenance_flags([r.run.trial for r in rows])[1]:
        notes.insert(0, differ_note)
    claims = claims_section(runs, resamples, bootstrap_seed, plan)
    if any(r.yours for r in rows):
        notes.insert(0, "Your rows: a spec that is not the paper's (not built in, no `paper_row: true`) shows its "
                     "rows after the paper's rows of the group its `paper:` names, never in their place; 'yours "
                     "against' is how much better the row is than its reference row (`paper: {compare_to: ROW}`, default "
                     "base, of the same profile; positive: better, BLEU higher or PPL lower, as in the claims), mean "
                     "over the seeds both ran, with its 95% interval (the claims' "
                     "statistics: paired by seed, plus the test-set noise the seeds share).")
    for row, *_ in paper.TABLE3:  # two specs that both say they are the paper's row: which one shows
        specs = sorted({t.spec for t in runs.claimants(3, row)})
        if len(specs) > 1:
            notes.insert(0, f"Row {row}: shown from {runs.pick(3, row).spec} (the most recent finished run); "
                         f"also the paper's row in {', '.join(s for s in specs if s != runs.pick(3, row).spec)}.")
    cols = [c for c in columns(T3Row) if any(r.yours for r in rows) or (c.key != "whose" and c.group != AGAINST)]
    return Table("table3", "Table 3: variations on the Transformer architecture",
                 "Each row of the paper's ablation table: the paper's figures beside ours, what it cost, "
                 "and where the run stands.", [Section("", cols, rows), claims, rank_section(ours)],
                 notes, shown, count([r.state for r in ours]) | ({"your-rows": n} if (n := sum(r.yours for r in rows)) else {}),
                 verdicts=claims.data)  # the index counts the paper's rows by state, and the user's beside them


# -- Table 2 --------------------------------------------------------------------------------------

@dataclass
@run_columns("provenance", "state", "hardware", "profile", "data")
class T2Row:
    """Our run of the paper's base or big model on one language pair. Its BLEU figures: the mean over
    its seeds; its weights, costs and run columns: the trial shown."""
    name: str = ""                    # base or big
    group: str | None = None          # the language pair
    run: Run | None = None
    ppl: float | None = None          # dev perplexity, mean over seeds (model-index.yml)
    bleu_tokenized: float | None = None
    peak_note: str | None = None      # where the device peak comes from (or why there is none)
    split: str = "test"               # what its BLEU figures score
    paper_bleu: float | None = col("paper", "BLEU", "{:.1f}")
    bleu: float | None = col("measured", "BLEU (test)", "{:.2f}")
    bleu_sd: float | None = col("measured", "BLEU sd", "{:.2f}")
    bleu_paper: float | str | None = col("measured", "BLEU (test), paper's metric", "{:.2f}")
    weights: str | None = text_col("measured", "weights")
    bleu_final: float | None = col("measured", "BLEU, final weights", "{:.2f}")
    seeds: int | None = col("measured", "seeds", "{:d}")
    estimate: float | None = col("cost", "paper hardware-time estimate", sci)
    flops_planned: float | None = col("cost", "analytic FLOPs as specified", sci)
    flops_spent: float | None = col("cost", "FLOPs spent", sci)
    wall: float | None = col("cost", "wall time", duration)
    peak: float | None = col("cost", "device peak FLOP/s", sci)
    utilization: float | None = col("cost", "utilization", pct)


@dataclass
class PublishedRow:
    name: str = ""                    # the model, as the paper names it
    group: str | None = None
    de: float | None = col("BLEU", "EN-DE")
    fr: float | None = col("BLEU", "EN-FR")
    cost_de: float | None = col("training cost (FLOPs)", "EN-DE", sci)
    cost_fr: float | None = col("training cost (FLOPs)", "EN-FR", sci)
    source: str = text_col("", "source")


@dataclass
class PaperCostRow:
    name: str = ""
    group: str | None = None
    estimate: float | None = col("", "hardware-time estimate", sci)
    analytic: float | None = col("", "analytic FLOPs of the spec", sci)
    implied: float | None = col("", "implied utilization", pct)


def table2_rows(runs: Runs) -> list[T2Row]:
    """Our base and big rows per language pair: what the page and model-index.yml show."""
    specs = paper_configs(table_specs(2))
    printed = {(ours, "EN-DE"): de for _, de, _, _, _, ours in paper.TABLE2 if ours} | \
              {(ours, "EN-FR"): fr for _, _, fr, _, _, ours in paper.TABLE2 if ours}
    rows = []
    for group in ("EN-DE", "EN-FR"):
        for row in ("base", "big"):
            t = runs.pick(2, row, group)
            run = Run.of(t, specs.get((group, row)), runs.seeds(t))
            m, cfg = run.result, run.config
            test = m and m.split("test")
            spent = run.flops_done()
            pk = peaks.peak(t.placement, m.hardware, m.provenance) if m else None
            secs = m and m.train_seconds
            peak_note = pk[1] if pk else m and (
                f"{group} {row}: no peak known for '{t.hardware or m.hardware.device}' (the store does not name "
                "the device model or its threads), so no utilization")
            b = run.over_seeds("bleu", "test")
            rows.append(T2Row(
                row, group, run=run, ppl=run.over_seeds("dev_ppl").mean, peak_note=peak_note,
                bleu_tokenized=run.over_seeds("bleu_tokenized", "test").mean, paper_bleu=printed[(row, group)], bleu=b.mean, bleu_sd=b.sd,
                bleu_paper=paper_metric(run, b.mean, "test"), weights=(test and test.eval_weights) or None,
                bleu_final=run.over_seeds("bleu_final_weights", "test").mean, seeds=b.n or None,
                estimate=paper.paper_cost_flops(row),
                flops_planned=train_flops_total(cfg, vocab_size=run.vocab) if cfg else None,
                flops_spent=spent, wall=secs, peak=pk[0] if pk else None,
                utilization=spent / (secs * pk[0]) if spent and secs and pk else None,
                state=run.state, hardware=t.hardware_text if t else None, profile=run.profile, data=run.data_split()))
    for r, flag in zip(rows, provenance_flags([r.run.trial for r in rows])[0]):
        r.provenance = flag
    return rows


def table2(runs: Runs) -> Table:
    specs = paper_configs(table_specs(2))
    rows = table2_rows(runs)
    shown = [(f"{r.group} {r.name}", r.run.trial) for r in rows if r.run.trial]
    published = [PublishedRow(model, de=de, fr=fr, cost_de=cost_de, cost_fr=cost_fr,
                              source=f"this paper; re-run below ({ours})" if ours else "cited, not re-run")
                 for model, de, fr, cost_de, cost_fr, ours in paper.TABLE2]
    # The paper's own cost: its hardware-time estimate against the analytic FLOPs of its spec.
    paper_cost = []
    for row in ("base", "big"):
        cfg = specs.get(("EN-DE", row))
        est, ana = paper.paper_cost_flops(row), train_flops_total(cfg) if cfg else None
        paper_cost.append(PaperCostRow(row, estimate=est, analytic=ana, implied=ana / est if est and ana else None))
    sigs = sorted({s for _, t in shown if t.finished and (x := t.result.split("test")) and (s := x.bleu_signature)})
    peak_notes = sorted({r.peak_note for r in rows if r.peak_note})
    notes = [
        "Paper: Vaswani et al. (2017) Table 2, newstest2014. Literature rows are cited from the paper "
        "(reference numbers as printed there); they are not re-run here.",
        "Measured: sacreBLEU on the test split, with the checkpoint averaging the spec asks (base: the "
        "last 5 checkpoints, big: the last 20; the weights column says what was scored). Beside it, the "
        "same run's final weights at the same step, so averaging is judged against its own run. With "
        "several seeds, each BLEU figure is the mean over the seeds that finished, with the BLEU standard "
        "deviation (sd) and the number of seeds; the weights, costs and run columns are the trial shown. "
        + ("Signature: " + "; ".join(sigs) if sigs else "No test BLEU measured yet."),
        PAPER_METRIC_NOTE,
        "Three costs, each a different quantity. Paper hardware-time estimate: training time x 8 GPUs x "
        "9.5 TFLOPS (P100), the paper's footnote 5. Analytic FLOPs as specified: our cost model for the "
        "run's config at its planned steps (the paper spec where the row has not run). FLOPs spent: the "
        "analytic FLOPs per step x the steps actually done. Utilization = FLOPs spent / (wall time x "
        "device peak).",
        "Device peaks: " + ("; ".join(peak_notes) if peak_notes else "none needed yet")
        + ". Table: " + "; ".join(n for _, _, n in peaks.GPU_PEAKS) + "; " + peaks.CPU_NOTE + ".",
        COUNTING,
        *profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    if differ_note := provenance_flags([r.run.trial for r in rows])[1]:
        notes.insert(0, differ_note)
    sections = [
        Section("Our base and big rows", columns(T2Row), rows),
        Section("The paper's rows as published", columns(PublishedRow), published, index="model"),
        Section("The paper's cost: hardware-time estimate against analytic model FLOPs", columns(PaperCostRow),
                paper_cost, [
                    "The analytic FLOPs of the paper spec (100K steps base, 300K big, 25000 + 25000 tokens a step, "
                    "vocabulary 37000) divided by the paper's estimate: the share of 8 x 9.5 TFLOPS the paper's "
                    "estimate implies the model actually used."]),
    ]
    return Table("table2", "Table 2: translation quality and training cost",
                 "The paper's machine translation results (newstest2014) with the literature it compares "
                 "against, and our runs of the base and big models with three named costs.",
                 sections, notes, shown, count([r.state for r in rows]))


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


def parsing_data(run: Run) -> str | None:
    """What a Table 4 figure was measured on, in words: the NLTK sample is not section 23."""
    if run.config is None:
        return None
    m = run.result
    split = (m and m.eval_split) or run.config.eval.split
    if ((m and m.dataset) or run.config.data.dataset) == "wsj_sample":
        files = {"train": "wsj_0001-0159", "dev": "wsj_0160-0179", "test": "wsj_0180-0199"}.get(split, split)
        return f"NLTK WSJ sample (sections 00-01), {split} {files}; not comparable to section 23"
    return run.data_split()


# Our variants of a paper row, shown beneath it with no paper figure: (label, the variant's row name)
TABLE4_EXTENSIONS = {"wsj_only": [("Transformer (4 layers) + word pointer (ours, not the paper's)", "wsj_only_pointer")]}


def _table4_rows():
    for parser, training, f1, ours in paper.TABLE4:
        yield parser, training, f1, ours
        for label, row in TABLE4_EXTENSIONS.get(ours, []):
            yield label, training, None, row


@dataclass
@run_columns("state", "profile", "data")
class T4Row:
    """A parser of the paper's Table 4: cited, or our run of it."""
    name: str = ""                    # the parser
    group: str | None = None          # its training data
    ours: str | None = None           # our row's name (None: cited, not re-run)
    run: Run | None = None
    paper_f1: float | None = col("paper", "WSJ 23 F1", "{:.1f}")
    f1: float | None = col("measured", "F1", "{:.2f}")
    flat: float | None = col("measured", "flat tree F1", "{:.2f}")
    right: float | None = col("measured", "right-branching F1", "{:.2f}")
    malformed: str | None = text_col("measured", "malformed before repair")


def table4(runs: Runs) -> Table:
    specs = {row: c for (_, row), c in paper_configs(table_specs(4)).items()}
    rows, floor_notes = [], []
    for parser, training, f1, ours in _table4_rows():
        if not ours:
            rows.append(T4Row(parser, training, paper_f1=f1, state=CITED))
            continue
        t = runs.pick(4, ours)
        run = Run.of(t, specs.get(ours), [])
        st = run.state
        if t is None and (need := _needs_data(run.config)):
            st = State("needs-data", f"needs data: {run.config.data.dataset} (see the notes)")
            floor_notes.append(f"{parser} ({training}) needs data: {need}")
        x = run.result and run.result.primary
        rows.append(T4Row(parser, training, ours=ours, run=run, paper_f1=f1, state=st, profile=run.profile, data=parsing_data(run)))
        if x:
            r = rows[-1]
            r.f1, r.flat, r.right = x.f1, x.f1_flat, x.f1_right_branching
            r.malformed = None if x.malformed is None else f"{x.malformed} of {x.eval_sentences}"
            if x.f1 is not None and r.flat is not None and x.f1 <= max(r.flat, r.right or 0):
                floor_notes.append(f"{parser} ({training}): the measured F1 {x.f1:.2f} does not beat the trivial "
                                   f"parsers on the same trees (flat {r.flat:.2f}, right-branching {r.right:.2f}): it "
                                   "recovers no more structure than they do.")
    shown = [(r.ours, r.run.trial) for r in rows if r.run and r.run.trial]
    pointer = [label for label, t in shown if t.config and t.config.model.word_pointer]
    constrained = [label for label, t in shown if t.config and t.config.eval.tree_constraint]
    if pointer:
        floor_notes.append(f"Not the paper's: the word pointer (model.word_pointer) in {', '.join(pointer)}: each "
                           "decoder input also gets the encoder's state of the word the next preterminal covers.")
    if constrained:
        floor_notes.append(f"Not the paper's: tree-constrained beam search (eval.tree_constraint) in "
                           f"{'every measured row' if len(constrained) == len(shown) else ', '.join(constrained)}: "
                           "the beam only emits well-formed trees with one preterminal per word.")
    notes = [
        "Paper: Vaswani et al. (2017) Table 4, English constituency parsing, WSJ section 23 F1. Other "
        "parsers are cited from the paper, not re-run.",
        "Measured: EVALB bracketing F1 (zoo evalb, COLLINS.prm, gold POS tags on the words) on the run's "
        "eval split. Beside it, on the same gold trees, two trivial parsers: the flat tree (one S over the "
        "tags) and the right-branching tree (S, then every suffix a VP); a parser must beat both. "
        "Malformed: predictions that were not a well-formed tree with one preterminal per word before "
        "the repair that lets every output score.",
        *floor_notes,
        *profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    return Table("table4", "Table 4: English constituency parsing",
                 "The paper's parsing results and our 4-layer Transformer rows.",
                 [Section("", columns(T4Row), rows, index="parser")], notes, shown,
                 count([r.state for r in rows if r.run]))
