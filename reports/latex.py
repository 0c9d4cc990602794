"""A page's tables as LaTeX that fits a page (`zoo report --format latex`): at most MAX_COLS columns beside the
row names per tabular (a wider table continues in the next one, split where its column groups meet), and no
cell longer than MAX_CELL characters: a longer one (a claim's sentence, a verdict's reason) is a numbered
reference in its cell, its text in a numbered list below the table."""
from __future__ import annotations

MAX_COLS = 8    # columns beside the row names: a booktabs tabular of short cells across a text width
MAX_CELL = 24   # characters: longer cells move to the list below the table


def _chunks(top: list, width: int) -> list[list[int]]:
    """Column indices in runs of at most `width`, keeping each header group whole where it fits."""
    out, start = [[]], 0
    for _, n in top:
        group = list(range(start, start + n))
        start += n
        while group:
            if len(out[-1]) + min(len(group), width) > width:
                out.append([])
            room = width - len(out[-1])
            out[-1] += group[:room]
            group = group[room:]
    return [c for c in out if c]


def parts(g: dict) -> list[dict]:
    """One grid (zoo.reports.render.grid) as tabulars of short cells, each with the long cells it lists below."""
    out, k = [], 0
    for cols in _chunks(g["top"], MAX_COLS):
        top, notes, rows = [], [], []
        for i in cols:
            group = next(name for name, lo, hi in _spans(g["top"]) if lo <= i < hi)
            if top and top[-1][0] == group:
                top[-1][1] += 1
            else:
                top.append([group, 1])
        for r in g["rows"]:
            if "group" in r:
                rows.append(r)
                continue
            cells = []
            for i in cols:
                text = r["cells"][i]["text"]
                if len(text) > MAX_CELL:
                    k += 1
                    notes.append((k, f"{r['name']}, {g['labels'][i]}: {text}"))
                    text = f"({k})"
                cells.append({"text": text})
            rows.append({"name": r["name"], "cells": cells})
        out.append({"index": g["index"], "top": top, "labels": [g["labels"][i] for i in cols], "rows": rows,
                     "align": [g["align"][i] for i in cols], "has_top": g["has_top"], "notes": notes})
    return out


def _spans(top: list) -> list[tuple[str, int, int]]:
    spans, start = [], 0
    for name, n in top:
        spans.append((name, start, start + n))
        start += n
    return spans
