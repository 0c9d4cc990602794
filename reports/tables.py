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

from reports import peaks
from reports.runs import (TABLE2_SPECS, TABLE3_SPECS, TABLE4_SPECS, Runs, config_of, paper_configs)
from zoo import costs, paper
from zoo.errors import UserError
from zoo.spec import Config, profile_description


@dataclass
class Section:
    heading: str
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)


@dataclass
class Table:
    name: str                       # file stem: table2, table3, table4
    title: str
    intro: str
    sections: list[Section]
    notes: list[str]
    trials: list[tuple[str, dict]]  # (row label, trial) shown on the page, for curves and attention
    counts: dict                    # state -> number of paper rows in it, for the index


# -- shared cell helpers --------------------------------------------------------------------------

def state(t: dict | None) -> str:
    if t is None:
        return "not run"
    s = t["status"]
    if s == "running":
        return f"running: step {t.get('step') or 0} of {t.get('steps') or '?'}"
    if s == "failed":
        reason = (t.get("error") or "no reason recorded").strip().splitlines()
        reason = reason[-1] if reason else "no reason recorded"  # a traceback's last line is the error
        return "failed: " + (reason if len(reason) <= 120 else reason[:117] + "...")
    if s == "finished":
        done, planned = (t.get("metrics") or {}).get("steps_done"), t.get("steps")
        if done and planned and done < planned:  # a time-limited profile stops early: say so
            limit = ((t.get("config") or {}).get("train") or {}).get("time_limit_minutes")
            return f"done (stopped at step {done} of {planned}" + (f": {limit:g}-minute limit)" if limit else ")")
        return "done"
    return s  # pending


def state_key(text: str) -> str:
    """The state's one word (for CSS classes and counts): done, running, pending, failed, not-run, cited."""
    if text.startswith(("not run", "needs data")):
        return "-".join(text.split()[:2]).rstrip(":")
    return re.split(r"[:, (]", text)[0]


def _metrics(t: dict | None) -> dict:
    """A finished trial's metrics; nothing for the others (a running trial's figures are not final)."""
    return (t.get("metrics") or {}) if t and t["status"] == "finished" else {}


def _vocab(t: dict | None, cfg: Config) -> int:
    return _metrics(t).get("vocab_size_actual") or cfg.data.vocab_size


def flops_done(t: dict | None, cfg: Config | None) -> float | None:
    """Analytic training FLOPs of the steps actually done (per step x steps done, so far if running)."""
    if t is None or cfg is None:
        return None
    steps = _metrics(t).get("steps_done") if t["status"] == "finished" else t.get("step")
    if not steps:
        return None
    return costs.train_flops_per_step(cfg, vocab_size=_vocab(t, cfg)) * steps


def data_split(t: dict | None, cfg: Config | None) -> str | None:
    """'dataset / eval split' the trial used (from its metrics once finished, else its config)."""
    if t is None or cfg is None:
        return None
    m = _metrics(t)
    return f"{m.get('dataset') or cfg.data.dataset} / {m.get('eval_split') or cfg.eval.split}"


def _frame(rows: list[list], index: list, columns: list[tuple], names=("group", "row")) -> pd.DataFrame:
    idx = pd.MultiIndex.from_tuples(index, names=names) if index and isinstance(index[0], tuple) \
        else pd.Index(index, name=names[-1])
    return pd.DataFrame(rows, index=idx, columns=pd.MultiIndex.from_tuples(columns), dtype=object)


def _count(labels: list[str]) -> dict:
    out: dict = {}
    for s in labels:
        out[state_key(s)] = out.get(state_key(s), 0) + 1
    return out


def _profile_notes(trials: list[dict]) -> list[str]:
    """Say what each profile in use means, and its schedule (warmup, peak learning rate)."""
    notes = []
    for prof in sorted({t["profile"] for t in trials if t}):
        try:
            text = profile_description(prof)
        except (UserError, OSError):  # a profile file that is gone: say so rather than fail the report
            text = f"{prof}: (profile description not found)"
        cfg = next((c for t in trials if t and t["profile"] == prof and (c := config_of(t))), None)
        if cfg is not None:
            s = cfg.train.schedule
            lr = s.lr_scale * cfg.model.d_model ** -0.5 * s.warmup_steps ** -0.5
            text += (f" Schedule: linear warmup over {s.warmup_steps} steps, then inverse square root decay; "
                     f"lr_scale {s.lr_scale:g}, peak learning rate {lr:.2g} at d_model {cfg.model.d_model}.")
        if prof != "paper":
            text += (f" Numbers from the {prof} profile are not comparable in absolute terms to the paper's "
                     "(another model scale, data set or training budget, as described): compare the rank "
                     "order of rows, not the values.")
        notes.append("Profile " + text)
    return notes


def _decoding_note(shown: list[tuple[str, dict]]) -> str:
    """How the finished rows decoded (the paper: beam 4, alpha 0.6, input + 50); profiles may differ."""
    ways: dict[str, list[str]] = {}
    for label, t in shown:
        if (cfg := config_of(t)) and t["status"] == "finished":
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


# -- Table 3 --------------------------------------------------------------------------------------

T3_COLUMNS = [("spec", c) for c in ("N", "d_model", "d_ff", "h", "d_k", "d_v", "P_drop", "eps_ls", "steps", "PE")] + [
    ("paper", "PPL"), ("paper", "BLEU"), ("paper", "params (M)"),
    ("measured", "PPL"), ("measured", "BLEU"), ("measured", "params (M)"), ("measured", "Δ params"),
    ("cost", "train FLOPs"),
    ("run", "state"), ("run", "profile"), ("run", "data / split")]


def table3(runs: Runs) -> Table:
    specs = {row: c for (_, row), c in paper_configs(TABLE3_SPECS).items()}
    rows, index, shown, states, measured = [], [], [], [], []
    for row, group, ppl, bleu, params_m in paper.TABLE3:
        t = runs.pick(3, row)
        cfg = config_of(t) or specs.get(row)
        m = _metrics(t)
        ours_params = costs.params_analytic(cfg.model, _vocab(t, cfg)) / 1e6 if m and cfg else None
        spec = [cfg.model.N, cfg.model.d_model, cfg.model.d_ff, cfg.model.h, cfg.model.d_k, cfg.model.d_v,
                cfg.model.dropout, cfg.train.label_smoothing, cfg.train.steps,
                {"sinusoidal": "sinusoid"}.get(cfg.model.positional_encoding, cfg.model.positional_encoding)] \
            if cfg else [None] * 10
        st = state(t)
        rows.append(spec + [
            ppl, bleu, params_m,
            m.get("dev_ppl"), m.get("bleu"), ours_params,
            100 * (ours_params - params_m) / params_m if ours_params and params_m else None,
            flops_done(t, cfg), st, t and t["profile"], data_split(t, cfg)])
        index.append((paper.TABLE3_GROUPS[group], row))
        states.append(st)
        if t:
            shown.append((row, t))
        if m.get("bleu") is not None or m.get("dev_ppl") is not None:
            measured.append((group, bleu, m.get("bleu"), ppl, m.get("dev_ppl")))
    frame = _frame(rows, index, T3_COLUMNS)
    sigs = sorted({s for _, t in shown if (s := _metrics(t).get("bleu_signature"))})
    notes = [
        "Paper: Vaswani et al. (2017) Table 3, EN-DE dev set newstest2013, perplexity per word-piece, "
        "BLEU, parameters x 1e6 (blank where the paper prints none). Spec columns: the configuration as "
        "run for rows that ran (their profile applied), else the paper spec as written.",
        "Measured: dev perplexity per word-piece (no label smoothing) and sacreBLEU on the eval split "
        "with the final weights (no checkpoint averaging). " + _decoding_note(shown) + " "
        + ("sacreBLEU signature: " + "; ".join(sigs) if sigs else "No BLEU measured yet."),
        "Δ params: measured compiled count against the paper's count; under a scaled profile it measures "
        "the scaling, not a discrepancy.",
        COUNTING,
        *_profile_notes([t for _, t in shown]),
    ]
    if runs.note:
        notes.insert(0, runs.note + ".")
    rank = Section("Rank agreement (Spearman) between measured and paper", spearman_frame(measured), [
        "Spearman's rho between our values and the paper's, across the rows that ran, per group of the "
        "paper and overall; computed where at least 3 rows ran. PPL: lower is better in both, so a "
        "positive rho means the same order. With few rows the p-values are weak evidence."])
    return Table("table3", "Table 3: variations on the Transformer architecture",
                 "Each row of the paper's ablation table: the paper's figures beside ours, what it cost, "
                 "and where the run stands.", [Section("", frame), rank], notes, shown, _count(states))


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
            test = (m.get("splits") or {}).get("test") or (m if m.get("eval_split") == "test" else {})
            spent = flops_done(t, cfg)
            pk = peaks.peak(t.get("hardware"), m.get("device_name") or m.get("device"), m.get("workers")) if m else None
            secs = m.get("train_seconds")
            util = spent / (secs * pk[0]) if spent and secs and pk else None
            if pk:
                peak_notes.add(pk[1])
            elif m:
                peak_notes.add(f"{group} {row}: no peak known for '{t.get('hardware') or m.get('device')}' "
                               "(the store does not name the device model), so no utilization")
            st = state(t)
            rows.append([
                paper_bleu[(row, group)], test.get("bleu"), test.get("eval_weights"),
                paper.paper_cost_flops(row),
                costs.train_flops_total(cfg, vocab_size=_vocab(t, cfg)) if cfg else None,
                spent, secs, pk[0] if pk else None, util,
                st, t.get("hardware") if t else None, t and t["profile"], data_split(t, cfg)])
            index.append((group, row))
            states.append(st)
            if t:
                shown.append((f"{group} {row}", t))
    cols = [("paper", "BLEU"), ("measured", "BLEU (test)"), ("measured", "weights"),
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

    sigs = sorted({s for _, t in shown if (s := ((_metrics(t).get("splits") or {}).get("test") or {}).get("bleu_signature"))})
    notes = [
        "Paper: Vaswani et al. (2017) Table 2, newstest2014. Literature rows are cited from the paper "
        "(reference numbers as printed there); they are not re-run here.",
        "Measured: sacreBLEU on the test split, with the checkpoint averaging the spec asks (base: the "
        "last 5 checkpoints, big: the last 20; the weights column says what was scored). "
        + ("Signature: " + "; ".join(sigs) if sigs else "No test BLEU measured yet."),
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


def parsing_data(t: dict | None, cfg: Config | None) -> str | None:
    """What a Table 4 figure was measured on, in words: the NLTK sample is not section 23."""
    if cfg is None:
        return None
    m = _metrics(t)
    split = m.get("eval_split") or cfg.eval.split
    if (m.get("dataset") or cfg.data.dataset) == "wsj_sample":
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
        st = state(t) if ours else "cited, not re-run"
        if ours and t is None and (need := _needs_data(cfg)):
            st = f"needs data: {cfg.data.dataset} (see the notes)"
            floor_notes.append(f"{parser} ({training}) needs data: {need}")
        if ours:
            states.append(st)
        flat, right = m.get("f1_flat"), m.get("f1_right_branching")
        malformed = None if m.get("malformed") is None else f"{m['malformed']} of {m.get('eval_sentences')}"
        rows.append([f1, m.get("f1"), flat, right, malformed, st, t and t["profile"], parsing_data(t, cfg)])
        index.append((training, parser))
        if t:
            shown.append((ours, t))
        if m.get("f1") is not None and flat is not None and m["f1"] <= max(flat, right or 0):
            floor_notes.append(f"{parser} ({training}): the measured F1 {m['f1']:.2f} does not beat the trivial "
                               f"parsers on the same trees (flat {flat:.2f}, right-branching {right:.2f}): it "
                               "recovers no more structure than they do.")
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
