"""Tables 2, 3 and 4 as pandas frames: the paper's figures (zoo.paper) beside the measured ones (the
results store), with the analytic costs (zoo.costs). What their rows share is in cells.py; Table 3's
claims and rank agreement in verdicts.py.
"""
from __future__ import annotations

from zoo import costs, paper
from zoo.reports import peaks
from zoo.reports.cells import (CITED, COUNTING, OLDER, PAPER_METRIC_NOTE, ScatterRow, Section, State, Table, _count,
                               _decoding_note, _frame, _metrics, _profile_notes, _vocab, data_split, flops_done,
                               over_seeds, paper_metric, provenance_flags, state, truncated)
from zoo.reports.runs import TABLE2_SPECS, TABLE3_SPECS, TABLE4_SPECS, Runs, config_of, paper_configs
from zoo.reports.verdicts import _kendall_notes, claims_section, spearman_frame
from zoo.result import SplitScore, Trial
from zoo.config import Config


# -- Table 3 --------------------------------------------------------------------------------------

T3_COLUMNS = [("spec", c) for c in ("N", "d_model", "d_ff", "h", "d_k", "d_v", "P_drop", "eps_ls", "steps", "PE")] + [
    ("paper", "PPL"), ("paper", "BLEU"), ("paper", "params (M)"), ("paper", "Δ params"),
    ("measured", "PPL"), ("measured", "BLEU"), ("measured", "BLEU sd"), ("measured", "BLEU, paper's metric"),
    ("measured", "seeds"),
    ("measured", "params (M)"),
    ("cost", "train FLOPs"),
    ("run", "provenance differs"), ("run", "state"), ("run", "profile"), ("run", "data / split")]


def table3(runs: Runs, resamples: int | None = None, bootstrap_seed: int | None = None) -> Table:
    specs = {row: c for (_, row), c in paper_configs(TABLE3_SPECS).items()}
    rows, index, shown, states, measured = [], [], [], [], []
    per_seed = {"bleu": [], "dev_ppl": []}  # (paper figure, our figure per seed) per row, for Kendall tau
    deltas = []  # (Δ params in %, row) where the paper prints a count
    scatter = []  # the same rows, typed, for the figures
    picked = []  # each row's trial (None: not run), for the provenance column
    for row, group, ppl, bleu, params_m in paper.TABLE3:
        t = runs.pick(3, row)
        picked.append(t)
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
        d_params = 100 * (spec_params - params_m) / params_m if spec_params and params_m else None
        if d_params is not None:
            deltas.append((d_params, row))
        flops = flops_done(t, cfg)
        rows.append(spec + [
            ppl, bleu, params_m, d_params,
            our_ppl, our_bleu, bleu_sd, our_paper_bleu, n_seeds or None, ours_params,
            flops, st, t and t.profile, data_split(t, cfg)])
        scatter.append(ScatterRow(
            row, group, printed=params_m is not None,
            paper_params=params_m * 1e6 if params_m else ps and costs.params_analytic(ps.model, 37000),
            paper_flops=ps and costs.train_flops_total(ps), paper_bleu=bleu,
            params=ours_params and ours_params * 1e6, flops=flops, bleu=our_bleu))
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
    flags, differ_note = provenance_flags(picked)
    for r, flag in zip(rows, flags):
        r.insert(len(r) - 3, flag)  # before the run's state, profile and data
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
        "count" + (f"; from {min(deltas)[0]:+.1f}% ({min(deltas)[1]}) to {max(deltas)[0]:+.1f}% ({max(deltas)[1]}), "
                   if deltas else "; ") +
        "mostly near -3%: a shared vocabulary of about 41K (not 37K) fits most printed counts, and the "
        "paper's big (213M) is inconsistent with its own C5 (168M) under any vocabulary.",
        PAPER_METRIC_NOTE,
        COUNTING,
        *_profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    if differ_note:
        notes.insert(0, differ_note)
    claims = claims_section(runs, resamples, bootstrap_seed)
    rank = Section("Rank agreement (Spearman) between measured and paper", spearman_frame(measured), [
        "Spearman's rho between our values and the paper's, across the rows that ran to their planned "
        "steps (a truncated row is shown above but compared with nothing), per group of the "
        "paper and overall; computed where at least 3 rows ran. PPL: lower is better in both, so a "
        "positive rho means the same order. With few rows the p-values are weak evidence.",
        *_kendall_notes(per_seed)])
    return Table("table3", "Table 3: variations on the Transformer architecture",
                 "Each row of the paper's ablation table: the paper's figures beside ours, what it cost, "
                 "and where the run stands.", [Section("", frame), claims, rank], notes, shown, _count(states),
                 scatter=scatter, verdicts=claims.data)


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
    picked = []  # each row's trial (None: not run), for the provenance column
    for group in ("EN-DE", "EN-FR"):
        for row in ("base", "big"):
            t = runs.pick(2, row, group)
            picked.append(t)
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
            ("cost", "utilization"), ("run", "provenance differs"), ("run", "state"), ("run", "hardware"),
            ("run", "profile"), ("run", "data / split")]
    flags, differ_note = provenance_flags(picked)
    for r, flag in zip(rows, flags):
        r.insert(len(r) - 4, flag)  # before the run's state, hardware, profile and data
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
    if differ_note:
        notes.insert(0, differ_note)
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


# Our variants of a paper row, shown beneath it with no paper figure: (label, the variant's row name)
TABLE4_EXTENSIONS = {"wsj_only": [("Transformer (4 layers) + word pointer (ours, not the paper's)", "wsj_only_pointer")]}


def _table4_rows():
    for parser, training, f1, ours in paper.TABLE4:
        yield parser, training, f1, ours
        for label, row in TABLE4_EXTENSIONS.get(ours, []):
            yield label, training, None, row


def table4(runs: Runs) -> Table:
    specs = {row: c for (_, row), c in paper_configs(TABLE4_SPECS).items()}
    rows, index, shown, states, floor_notes = [], [], [], [], []
    for parser, training, f1, ours in _table4_rows():
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
    pointer = [label for label, t in shown if (c := config_of(t)) and c.model.word_pointer]
    constrained = [label for label, t in shown if (c := config_of(t)) and c.eval.tree_constraint]
    if pointer:
        floor_notes.append(f"Not the paper's: the word pointer (model.word_pointer) in {', '.join(pointer)}: each "
                           "decoder input also gets the encoder's state of the word the next preterminal covers.")
    if constrained:
        floor_notes.append(f"Not the paper's: tree-constrained beam search (eval.tree_constraint) in "
                           f"{'every measured row' if len(constrained) == len(shown) else ', '.join(constrained)}: "
                           "the beam only emits well-formed trees with one preterminal per word.")
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
