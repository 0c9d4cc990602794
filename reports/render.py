"""Tables -> markdown and HTML pages through the Jinja2 templates in reports/templates/.

Both formats render the same `grid` (header groups, rows, group headers, formatted cells). The HTML
site is static and self-contained: CSS and the one small script are inline, images are PNG files in
img/ next to the pages, nothing is fetched from a network.
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import jinja2
import markupsafe

from zoo.reports import latex, pages
from zoo.reports.cells import Section, State, Table, shown_path, state
from zoo.paths import atomic_write_text
from zoo.result import Trial
from zoo.text import duration

TEMPLATES = Path(__file__).parent / "templates"

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


def wbr(s) -> markupsafe.Markup:
    """A value as HTML text that may break after an underscore: a user's long_variant_name wraps in its cell
    rather than pushing the columns after it (Δ, interval) out of the window."""
    return markupsafe.Markup("_<wbr>").join(markupsafe.escape(str(s)).split("_"))


_env.filters["wbr"] = wbr

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
        "\u0394": r"\ensuremath{\Delta}", "\u00b1": r"\ensuremath{\pm}", "\u00d7": r"\ensuremath{\times}",
        "\u2212": r"\ensuremath{-}", "\u2264": r"\ensuremath{\leq}", "\u2265": r"\ensuremath{\geq}",
        "\u2248": r"\ensuremath{\approx}", "\u03b5": r"\ensuremath{\varepsilon}"}


def tex(s) -> str:
    """A value as LaTeX text: its special characters escaped, the symbols a report prints (Delta, +-, x, ...)
    in math mode, so a page compiles with plain pdflatex and booktabs; one line."""
    return "".join(_TEX.get(ch, ch) for ch in str(s).replace("\r", " ").replace("\n", " "))


_env.filters["tex"] = tex
_env.filters["tex_parts"] = latex.parts
_env.filters["slug"] = lambda s: re.sub(r"[^a-z0-9]+", "-", str(s).lower()).strip("-")


# -- one table as the templates draw it -----------------------------------------------------------

def grid(section: Section) -> dict:
    """What a template needs to draw one table: header groups, labels, rows with group headers; every
    cell printed by its Column."""
    cols = section.columns
    top, labels = [], []
    for c in cols:
        if top and top[-1][0] == c.group:
            top[-1][1] += 1
        else:
            top.append([c.group, 1])
        labels.append(c.header)
    rows, last = [], object()
    for r in section.rows:
        if r.group is not None and r.group != last:
            rows.append({"group": r.group})
            last = r.group
        cells, row_state = [], ""
        for c in cols:
            v = c.value(r)
            # a number in a numbers column aligns right; a word there (n/a) wraps as text
            cls = "num" if c.align == "num" and isinstance(v, (int, float)) else "text"
            if isinstance(v, State):
                row_state = v.key
                cls = f"state {v.key}"
            cells.append({"text": c.text(v), "cls": cls, "section": c.group})
        rows.append({"name": r.name, "cells": cells, "state": row_state})
    # markdown has one header row: name the group where the label alone would be ambiguous
    shared = {c.header for c in cols if sum(d.header == c.header for d in cols) > 1}
    md_labels = [f"{c.group} {c.header}" if c.group and (c.header in shared or c.group in ("paper", "measured"))
                 else c.header for c in cols]
    firsts = [i == 0 or cols[i - 1].group != c.group for i, c in enumerate(cols)]  # a group starts here
    return {"index": section.index, "top": top, "labels": labels, "md_labels": md_labels, "rows": rows,
            "has_top": any(c.group for c in cols), "firsts": firsts, "align": [c.align for c in cols],
            "has_state": any(c.key == "state" for c in cols)}


# -- pages ----------------------------------------------------------------------------------------

def trial_view(label: str, t: Trial, files: dict) -> dict:
    """One run's card: its key facts and its figures."""
    m = t.result
    x = m and m.primary
    p = t.provenance
    facts = [("spec", shown_path(t.spec)), ("trial", t.trial), ("profile", t.profile),
             ("state", t.status.value), ("hardware", t.hardware_text or (m and m.hardware.device) or ""),
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
    return {"meta": meta, "nav": nav, "pages": pages.titles(), "table": table}


def write_table(table: Table, out: Path, formats: list[str], meta: dict, figures: list, trials: list,
                nav: list) -> list[Path]:
    ctx = _context(table, meta, nav) | {
        "sections": [{"heading": s.heading, "grid": grid(s), "notes": s.notes} for s in table.sections],
        "figures": figures, "trials": trials, "page": table.name}
    return _write(out, table.name, formats, ctx, pages.page_of(table.name).template)


def write_index(tables: list[Table], out: Path, formats: list[str], meta: dict, figures: list,
                nav: list) -> list[Path]:
    ctx = _context(None, meta, nav) | {"tables": tables, "figures": figures, "page": pages.INDEX}
    return _write(out, pages.INDEX, [f for f in formats if f != pages.LATEX], ctx, "index")  # LaTeX: tables only


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
    return {"store": shown_path(runs_path), "profile": profile or "all (most recent finished run per row)",
            "trials": n_trials, "note": note, "generated": now}
