"""Tables -> markdown and HTML pages through the Jinja2 templates in reports/templates/.

Both formats render the same `grid` (header groups, rows, group headers, formatted cells). The HTML
site is static and self-contained: CSS and the one small script are inline, images are PNG files in
img/ next to the pages, nothing is fetched from a network.
"""
from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path

import jinja2
import markupsafe
import pandas as pd

from zoo.reports.cells import Table, state
from zoo.paths import atomic_write_text
from zoo.result import Trial
from zoo.text import duration

TEMPLATES = Path(__file__).parent / "templates"
PAGES = {"table2": "Table 2", "table3": "Table 3", "table4": "Table 4"}

# Everything on a page can come from someone else's spec, store or machine (a spec file named
# `<svg onload=...>.yaml`, an error text, a host name): HTML pages escape every value (the templates
# are *.html.j2, which select_autoescape(["html"]) does not match), and markdown pages pass every
# value through `md`, which keeps it one table cell of plain text.
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                          autoescape=lambda name: (name or "").endswith(".html.j2"),
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def md(s) -> str:
    """A value as markdown text: no HTML tag (< > as entities), no cell break (|), one line."""
    return (str(s).replace("\\", "\\\\").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
            .replace("\r", " ").replace("\n", " "))


_env.filters["md"] = md
_env.filters["slug"] = lambda s: re.sub(r"[^a-z0-9]+", "-", str(s).lower()).strip("-")


# -- cell formatting ------------------------------------------------------------------------------

def _sci(v: float) -> str:
    """3.28e18 -> '3.3e18': two significant digits, the paper's style."""
    m, e = f"{v:.1e}".split("e")
    return f"{m}e{int(e)}"


def _pct(v: float) -> str:
    return f"{100 * v:.2g}%" if v < 0.1 else f"{100 * v:.0f}%"


FLOPS = ("FLOPs", "estimate", "peak FLOP/s")
FORMATS = {  # by column label; paper values print as published, ours to fixed decimals
    "PPL": "{:.2f}", "BLEU": "{:.2f}", "BLEU sd": "{:.2f}", "Δ": "{:+.2f}", "seeds": "{:d}", "BLEU (test)": "{:.2f}", "BLEU, final weights": "{:.2f}", "F1": "{:.2f}",
    "BLEU, paper's metric": "{:.2f}", "BLEU (test), paper's metric": "{:.2f}", "Δ, paper's BLEU": "{:+.2f}",
    "flat tree F1": "{:.2f}", "right-branching F1": "{:.2f}", "params (M)": "{:.3g}",
    "Δ params": "{:+.1f}%", "steps": "{:,}", "rho": "{:.2f}", "p": lambda v: "<1e-4" if v < 1e-4 else f"{v:.2g}",
    "utilization": _pct, "implied utilization": _pct, "wall time": duration,
}


PAPER_FORMATS = {"PPL": "{:.2f}", "BLEU": "{:.1f}", "params (M)": "{:g}", "WSJ 23 F1": "{:.1f}"}  # as printed


def cell(section: str, label: str, v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "undefined" if label == "rho" and v is not None else ""
    if isinstance(v, str):
        return v
    if any(k in label for k in FLOPS) or section == "training cost (FLOPs)":
        return _sci(v)
    if section == "paper" and label in PAPER_FORMATS:
        return PAPER_FORMATS[label].format(v)
    if (section == "paper" and label != "Δ params") or label in ("EN-DE", "EN-FR"):
        return f"{v:g}"  # the published figures, as printed
    f = FORMATS.get(label)
    if f is None:
        return f"{v:g}" if isinstance(v, float) else str(v)
    return f(v) if callable(f) else f.format(v)


def grid(frame: pd.DataFrame) -> dict:
    """What a template needs to draw one table: header groups, labels, rows with group headers."""
    cols = list(frame.columns)
    top, labels = [], []
    for sec, label in cols:
        if top and top[-1][0] == sec:
            top[-1][1] += 1
        else:
            top.append([sec, 1])
        labels.append(label)
    rows, last = [], object()
    two_level = frame.index.nlevels == 2
    for key, r in frame.iterrows():
        group, name = key if two_level else (None, key)
        if two_level and group != last:
            rows.append({"group": group})
            last = group
        cells = []
        row_state = ""
        for (sec, label), v in zip(cols, r.tolist()):
            text = cell(sec, label, v)
            kind = "num" if isinstance(v, (int, float)) and not isinstance(v, bool) else "text"
            if label == "state":
                row_state = getattr(v, "key", "")
                kind = f"state {row_state}"
            cells.append({"text": text, "cls": kind, "section": sec})
        rows.append({"name": name, "cells": cells, "state": row_state})
    # markdown has one header row: name the section where the label alone would be ambiguous
    shared = {label for _, label in cols if sum(l == label for _, l in cols) > 1}
    md_labels = [f"{sec} {label}" if sec and (label in shared or sec in ("paper", "measured")) else label
                 for sec, label in cols]
    firsts = [i == 0 or cols[i - 1][0] != sec for i, (sec, _) in enumerate(cols)]  # a section starts here
    body = [r["cells"] for r in rows if "cells" in r]
    # a column is numeric when every filled cell is a number
    align = ["num" if any(c[i]["cls"] == "num" for c in body)
             and all(c[i]["cls"] == "num" or not c[i]["text"] for c in body) else "text" for i in range(len(cols))]
    return {"index": frame.index.names[-1], "top": top, "labels": labels, "md_labels": md_labels,
            "rows": rows, "has_top": any(sec for sec, _ in cols), "firsts": firsts, "align": align,
            "has_state": any(label == "state" for _, label in cols)}


# -- pages ----------------------------------------------------------------------------------------

def trial_view(label: str, t: Trial, files: dict) -> dict:
    """One run's card: its key facts and its figures."""
    m = t.result
    x = m and m.primary
    p = t.provenance
    facts = [("spec", t.spec), ("trial", t.trial), ("profile", t.profile),
             ("state", t.status.value), ("hardware", t.hardware or (m and m.hardware.device) or ""),
             ("steps", f"{m.steps_done if m else t.step or 0} of {t.steps or '?'}"),
             ("target tokens seen", f"{t.tokens_seen:,}" if t.tokens_seen else ""),
             ("train time", duration(t.train_seconds) if t.train_seconds else ""),
             ("provenance", "; ".join(f"{k} {v}" for k, v in p.compared().items()) if p else ""),
             ("BLEU signature", (x and x.bleu_signature) or ""),
             ("tokenized BLEU", f"{x.bleu_tokenized:.2f} ({x.bleu_tokenized_label or 'not sacreBLEU'})"
              if x and x.bleu_tokenized is not None else ""),
             ("error", t.error or "")]
    return {"label": label, "facts": [(k, v) for k, v in facts if v], "curves": files.get("curves"),
            "attention": files.get("attention"), "sentence": t.attention.sentence if t.attention else None,
            "state": state(t).key}


def _context(table: Table | None, meta: dict, nav: list) -> dict:
    return {"meta": meta, "nav": nav, "pages": PAGES, "table": table}


def write_table(table: Table, out: Path, formats: list[str], meta: dict, figures: list, trials: list,
                nav: list) -> list[Path]:
    ctx = _context(table, meta, nav) | {
        "sections": [{"heading": s.heading, "grid": grid(s.frame), "notes": s.notes} for s in table.sections],
        "figures": figures, "trials": trials, "page": table.name}
    return _write(out, table.name, formats, ctx, "table")


def write_index(tables: list[Table], out: Path, formats: list[str], meta: dict, figures: list,
                nav: list) -> list[Path]:
    ctx = _context(None, meta, nav) | {"tables": tables, "figures": figures, "page": "index"}
    return _write(out, "index", formats, ctx, "index")


def _write(out: Path, name: str, formats: list[str], ctx: dict, template: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        css = markupsafe.Markup((TEMPLATES / "style.css").read_text())  # ours: inlined as written
        text = _env.get_template(f"{template}.{fmt}.j2").render(**ctx, fmt=fmt, css=css)
        written.append(atomic_write_text(out / f"{name}.{fmt}", text))
    return written


def meta(runs_path: Path, profile: str | None, n_trials: int, note: str) -> dict:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return {"store": str(runs_path), "profile": profile or "all (most recent finished run per row)",
            "trials": n_trials, "note": note, "generated": now}
