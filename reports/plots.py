"""The report's figures, as PNG files (matplotlib, Agg: no display needed).

Table 3 scatters put the paper and our runs side by side, never on one axis: a scaled profile's
numbers live at another scale. Per trial: training curves and one attention heat map.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import re
import shutil
from pathlib import Path

import matplotlib
import matplotlib.ticker as mticker
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from zoo.reports.cells import Table
from zoo.result import Attention, Point, Trial
from zoo import paper
from zoo.data import user_cache

_SI = mticker.FuncFormatter(lambda x, _: f"{x / 1e6:.3g}M" if x >= 1e6 else f"{x / 1e3:.3g}k")


@mticker.FuncFormatter
def _SCI(x, _):  # 2e+18 -> 2e18, the paper's style
    m, e = f"{x:.1e}".split("e")
    return f"{float(m):g}e{int(e)}"


GROUP_COLORS = dict(zip(paper.TABLE3_GROUPS, ("#222222", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                             "#9467bd", "#8c564b")))
# Figures are matplotlib.figure.Figure objects drawn straight to PNG (no pyplot, no backend switch) and
# styled inside rc_context: importing this module changes nothing in a user's (or notebook's) matplotlib.
STYLE = {"font.size": 9, "axes.spines.top": False, "axes.spines.right": False}


def _styled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return fn(*args, **kwargs)
    return wrapper


def slug(t: Trial) -> str:
    """A file-name-safe name for one trial: spec stem, trial name, profile."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{Path(t.spec).stem}_{t.trial}_{t.profile}")


def _save(fig, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path.name


# The per-trial figures' version, part of their file names: committed reports link every curve by name, so
# it changes with their drawing (curves, attention, slug, _save, STYLE), not with every edit of this module.
# tests/test_user_page.py holds the hash of that drawing code and says when to change this.
_CODE = "27be59cab66192a89707d8344091e03147175847bb9c4e5b7ccc47fdb9886906"


def figure_name(kind: str, stem: str, payload) -> str:
    """A per-trial figure's file name: its kind, its trial's slug and a hash of what it is drawn from."""
    key = hashlib.sha256((_CODE + json.dumps(payload, sort_keys=True, default=str)).encode()).hexdigest()[:10]
    return f"{kind}_{stem}_{key}.png"


def _cached(img: Path, kind: str, stem: str, payload, draw) -> str:
    """Draw only when the figure's inputs (or its drawing code) changed: a finished trial's figures are
    drawn once, so regenerating a report stays a matter of seconds. Older versions are removed. A figure
    drawn for any report on this machine is copied from the machine's cache (`shared_figures`), so a report
    into a new folder (another --out, a colleague's copy of the store, CI) draws only what is new."""
    name = figure_name(kind, stem, payload)
    if not (img / name).exists():
        for old in img.glob(f"{kind}_{stem}_*.png"):
            old.unlink()
        _through_cache(shared_figures() / name, img / name, draw)
    return name


def _through_cache(cached: Path, path: Path, draw) -> None:
    """`path` copied from the machine's cache file `cached`, or drawn there and kept in the cache."""
    if _copy(cached, path):
        with contextlib.suppress(OSError):
            os.utime(cached)  # recently used: pruned last
    else:
        _save(draw(), path)
        if _copy(path, cached):
            _prune(cached.parent)


# A report's own figures (Table 3's scatters, a claims plot) keep fixed names; the machine's cache holds them by
# what they are drawn from, this module's source and matplotlib's version, so any edit here draws them afresh.
_SOURCE = hashlib.sha256(Path(__file__).read_bytes() + matplotlib.__version__.encode()).hexdigest()


def _cached_as(path: Path, payload, draw) -> str:
    """A report figure at its fixed `path`: copied from the machine's figure cache when one was drawn from the
    same payload before (a Table 3 report's two scatters took 3 s of its 20), else drawn and kept there."""
    key = hashlib.sha256((_SOURCE + json.dumps(payload, sort_keys=True, default=str)).encode()).hexdigest()[:16]
    _through_cache(shared_figures() / f"report_{path.stem}_{key}.png", path, draw)
    return path.name


SHARED_FIGURES = 5000  # files in the machine's figure cache (~40 KB each): past it, the least recently used go


def shared_figures() -> Path:
    return user_cache() / "figures"


def _copy(src: Path, dst: Path) -> bool:
    """src to dst, atomically (a reader sees the whole file or none); False when there is no src or dst
    cannot be written (a read-only home: the cache is only ever a shortcut)."""
    tmp = dst.with_name(f".{dst.name}.tmp{os.getpid()}")
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
        return True
    except OSError:
        with contextlib.suppress(OSError):  # no such file, or no such folder
            tmp.unlink()
        return False


def _prune(folder: Path) -> None:
    try:
        if len(os.listdir(folder)) <= SHARED_FIGURES:  # the common case: one listing, no stat
            return
        files = sorted(folder.glob("*.png"), key=lambda f: f.stat().st_mtime)
        for f in files[:max(0, len(files) - SHARED_FIGURES)]:
            f.unlink(missing_ok=True)
    except OSError:  # another report pruning at the same time
        pass


def _scatter(r) -> dict:
    """One Table 3 row (tables.T3Row) as the scatters draw it: counts, not millions; the paper side
    falls back on our count of the paper spec where the paper prints none."""
    return {"row": r.name, "group": r.letter, "printed": r.paper_params is not None,
            "paper_params": r.paper_params * 1e6 if r.paper_params else r.spec_params, "paper_flops": r.spec_flops,
            "paper_bleu": r.paper_bleu, "paper_ppl": r.paper_ppl, "params": r.params and r.params * 1e6,
            "flops": r.flops, "bleu": r.bleu, "ppl": r.ppl}


MARKERS = "osD^vP*Xph"  # a row's marker: its place in its group (colour: the group), said by the key


@_styled  # the whole figure, its save included: ticks are made as it is drawn, under the style's font size
def table3_scatters(t3: Table, img: Path) -> list[tuple[str, str]]:
    """Dev perplexity and BLEU against parameters and against training FLOPs: paper (left) and measured
    (right). A row is its group's colour and its own marker, named in the key below: no label is drawn
    beside a point, where rows of one size would print over each other."""
    pts = [_scatter(r) for r in t3.rows]
    out = []
    for name in ("params", "flops"):
        caption = f"Dev perplexity and BLEU against {'parameters' if name == 'params' else 'training FLOPs'}"
        out.append((caption, _cached_as(img / f"table3_bleu_vs_{name}.png", [name, pts, GROUP_COLORS],
                                        lambda: _draw_scatters(pts, name))))
    return out


def _draw_scatters(pts: list[dict], name: str) -> Figure:
    order: dict[str, list[str]] = {}
    for p in pts:
        order.setdefault(p["group"], []).append(p["row"])
    marker = {row: MARKERS[i % len(MARKERS)] for rows in order.values() for i, row in enumerate(rows)}
    xlabel, note = {
        "params": ("parameters", "Paper panels: printed counts (filled), our count of the paper spec "
                                 "where the paper prints none (hollow)."),
        "flops": ("training FLOPs (analytic)", "Paper panels: analytic FLOPs of the paper spec (100K "
                                               "steps, 300K for big); measured: per step x steps done.")}[name]
    fig = Figure(figsize=(10, 7))
    axes = fig.subplots(2, 2)
    drawn: set[str] = set()
    for i, (metric, ylabel) in enumerate((("ppl", "dev perplexity"), ("bleu", "BLEU (dev)"))):
        for j, (side, title) in enumerate((("paper", "paper (Table 3)"), ("ours", "measured (this store)"))):
            ax = axes[i, j]
            xk, yk = (f"paper_{name}", f"paper_{metric}") if side == "paper" else (name, metric)
            shown = [(x, y, p) for p in pts if (x := p[xk]) and (y := p[yk]) is not None]
            for x, y, p in shown:
                c = GROUP_COLORS[p["group"]]
                hollow = side == "paper" and name == "params" and not p["printed"]
                ax.scatter(x, y, s=30, marker=marker[p["row"]], color=c, facecolors="none" if hollow else c,
                           zorder=3)
                drawn.add(p["row"])
            _scatter_axes(ax, [x for x, _, _ in shown], name)
            ax.set(title=title if i == 0 else "", xlabel=xlabel if i == 1 else "", ylabel=ylabel)
    handles = [Line2D([], [], marker=marker[row], ls="", color=GROUP_COLORS[g], label=row)
               for g, rows in order.items() for row in rows if row in drawn]
    fig.legend(handles=handles, loc="upper center", ncol=min(10, max(len(handles), 1)), frameon=False,
               fontsize=7, bbox_to_anchor=(0.5, 0.02), title="rows (colour: group, marker: row)",
               title_fontsize=7)
    fig.text(0.01, -0.01 - 0.025 * math.ceil(len(handles) / 10) - 0.04, note, fontsize=7, color="#555")
    fig.tight_layout()
    return fig


def _scatter_axes(ax, xs: list, name: str) -> None:
    """A log x axis with readable ticks over the points drawn, or a note that there are none."""
    if not xs:
        ax.text(0.5, 0.5, "no finished runs yet", ha="center", va="center", transform=ax.transAxes, color="#777")
        ax.set(xticks=[], yticks=[])
        return
    ax.set_xscale("log")
    if max(xs) / min(xs) < 1.5:  # one point (or a tight cluster): a readable span around it
        ax.set_xlim(min(xs) / 2, max(xs) * 2)
    lo, hi = ax.get_xlim()
    decades = math.log10(hi / lo)
    subs = (1, 2, 3, 4, 5, 7) if decades < 0.8 else (1, 2, 5) if decades < 2.5 else (1,)
    ax.xaxis.set_major_locator(mticker.LogLocator(subs=subs))
    ax.xaxis.set_major_formatter(_SI if name == "params" else _SCI)
    ax.xaxis.set_minor_formatter(mticker.NullFormatter())
    ax.grid(alpha=0.3)


# one colour per verdict: a finding (held, equivalent) is green or teal, its opposite red or magenta, no finding
# grey (within noise) or violet (inconclusive: a tie neither shown nor refuted), a claim not tested orange
VERDICT_COLORS = {"held": "#1f8a3d", "equivalent": "#13807d", "within noise": "#8a919b",
                  "inconclusive": "#8a5cc2", "flipped": "#c62828", "different": "#c2187a",
                  "untestable at this budget": "#d98c00"}


@_styled
def claims(t3: Table, img: Path, title: str = "Table 3 claims") -> list[tuple[str, str]]:
    """A forest plot: one line per claim (our difference with its 95% interval, coloured by verdict,
    the paper's difference marked where it has one), BLEU and PPL in their own panels, since their units differ."""
    # what it is drawn from: each measured claim's id, metric, paper's difference, verdict and interval
    measured = [(v.claim.id, v.claim.metric, v.claim.paper_delta, v.verdict, v.estimate.delta, v.estimate.lo,
                 v.estimate.hi) for v in t3.verdicts if v.estimate is not None]
    papers = any(not math.isnan(x[2]) for x in measured)
    return [("Claims: our difference with its 95% interval, coloured by verdict"
             + ("; the paper's as an open diamond" if papers else ""),
             _cached_as(img / f"{t3.name}_claims.png", [title, measured], lambda: _draw_claims(measured, title)))]


def _draw_claims(measured: list[tuple], title: str) -> Figure:
    panels = [(m, [v for v in measured if v[1] == m]) for m in ("bleu", "ppl")]
    panels = [(m, vs) for m, vs in panels if vs] or [("bleu", [])]
    papers = any(not math.isnan(v[2]) for v in measured)
    heights = [max(len(vs), 1) + 1.5 for _, vs in panels]
    fig = Figure(figsize=(7, 0.28 * sum(heights) + 1.2))
    axes = fig.subplots(len(panels), 1, gridspec_kw={"height_ratios": heights}, squeeze=False)[:, 0]
    for ax, (metric, vs) in zip(axes, panels):
        ax.axvline(0, color="#555", lw=0.8)
        for y, (_, _, paper_delta, verdict, delta, lo, hi) in enumerate(reversed(vs)):
            col = VERDICT_COLORS.get(verdict, "#555")
            ax.errorbar(delta, y, xerr=[[delta - lo], [hi - delta]], fmt="o", ms=4, capsize=3, color=col)
            ax.plot(paper_delta, y, marker="D", ms=4, mfc="none", mec="#111", ls="")
        ax.set_yticks(range(len(vs)), [v[0] for v in reversed(vs)], fontsize=7)
        ax.set_ylim(-0.8, max(len(vs), 1) - 0.2)
        unit = "BLEU" if metric == "bleu" else "perplexity"
        better = "the paper's better row" if papers else "the claim's first row"
        ax.set_xlabel(f"difference in {unit} (positive: {better} is better here)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        if not vs:
            ax.text(0.5, 0.5, "no claim measured yet", ha="center", va="center", transform=ax.transAxes, color="#777")
    used = {v[3] for v in measured}
    handles = [Line2D([], [], marker="o", ls="", color=col, label=k) for k, col in VERDICT_COLORS.items() if k in used]
    if papers:
        handles.append(Line2D([], [], marker="D", ls="", mfc="none", mec="#111", label="paper's difference"))
    axes[0].legend(handles=handles, frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    axes[0].set_title(f"{title}: our difference (95% interval)" + (" and the paper's" if papers else ""), fontsize=9)
    fig.tight_layout()
    return fig


@_styled
def trend(table: Table, img: Path) -> list[tuple[str, str]]:
    """The scale trend (zoo.evidence.trend): per comparison, its relative difference against d_model (log scale)
    with each width's 95% interval, the fitted line, and the paper's difference as a dashed line."""
    slopes = table.sections[0].data
    if not slopes:
        return []
    cols = min(3, len(slopes))
    rows = math.ceil(len(slopes) / cols)
    fig = Figure(figsize=(3.2 * cols, 2.6 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, s in zip(axes, slopes):
        pts = [(w.d_model, w.estimate) for w in s.widths if w.estimate is not None]
        if not pts:
            ax.text(0.5, 0.5, "not run yet", ha="center", va="center", transform=ax.transAxes, color="#777")
        for d, e in pts:
            col = VERDICT_COLORS.get(next(w.verdict for w in s.widths if w.d_model == d), "#555")
            ax.errorbar(d, e.delta, yerr=[[e.delta - e.lo], [e.hi - e.delta]], fmt="o", ms=4, capsize=3, color=col)
        if s.slope is not None:
            x = np.log2([d for d, _ in pts])
            xs = np.linspace(x.min(), x.max(), 20)
            ax.plot(2 ** xs, s.centre + s.slope * (xs - x.mean()), color="#333", lw=1)
        ax.axhline(s.paper_delta, color="#111", ls="--", lw=0.9)
        ax.axhline(0, color="#999", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(mticker.ScalarFormatter())
        ax.set_xticks([w.d_model for w in s.widths if w.d_model])
        ax.set_title(f"{s.name}: {s.better} {'≈' if s.tie else '>'} {s.worse}\n{s.verdict}", fontsize=8)
        ax.set_xlabel("d_model", fontsize=8)
        ax.set_ylabel("Δ log PPL (nats)", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(slopes):]:
        ax.set_visible(False)
    fig.tight_layout()
    return [("Scale trend: each comparison's Δ log PPL at each width (95% interval, coloured by that width's "
             "verdict), the fitted line over log2(d_model), and the paper's Δ dashed", _save(fig, img / "trend.png"))]


@_styled
def curves(t: Trial, points: list[Point], img: Path) -> str | None:
    """Training loss and dev perplexity against step; None when the trial logged nothing."""
    loss = [(p.step, p.loss) for p in points if p.loss is not None]
    ppl = [(p.step, p.dev_ppl) for p in points if p.dev_ppl is not None]
    if not loss and not ppl:
        return None
    return _cached(img, "curves", slug(t), [loss, ppl], lambda: _draw_curves(loss, ppl))


def _draw_curves(loss: list, ppl: list):
    fig = Figure(figsize=(9, 3))
    axes = fig.subplots(1, 2)
    for ax, data, label in ((axes[0], loss, "training loss (label-smoothed)"), (axes[1], ppl, "dev perplexity")):
        if data:
            ax.plot(*zip(*data), marker="o" if len(data) < 30 else None, ms=3, lw=1.2)
        else:
            ax.text(0.5, 0.5, "not logged yet", ha="center", va="center", transform=ax.transAxes, color="#777")
        ax.set_xlabel("step")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    if ppl and max(v for _, v in ppl) / max(min(v for _, v in ppl), 1e-9) > 20:
        axes[1].set_yscale("log")
    return fig


@_styled
def attention(t: Trial, img: Path) -> str | None:
    """Each head of the stored layer on one sentence, with its word-pieces; None without a map."""
    a = t.attention
    if a is None or not a.weights:
        return None
    return _cached(img, "attention", slug(t), a.model_dump(), lambda: _draw_attention(t, a))


def _draw_attention(t: Trial, a: "Attention"):
    # All heads tiled into one image on one axes: dozens of small subplots cost seconds to lay out.
    heads, tokens = np.asarray(a.weights, dtype=float), list(a.tokens)
    h, n = heads.shape[0], heads.shape[-1]
    cols = min(h, 4 if h <= 8 else 8)
    rows = math.ceil(h / cols)
    gap = max(1, n // 6)
    canvas = np.full((rows * (n + gap) - gap, cols * (n + gap) - gap), np.nan)
    for i in range(h):
        r, c = divmod(i, cols)
        canvas[r * (n + gap): r * (n + gap) + n, c * (n + gap): c * (n + gap) + n] = heads[i]
    cell = 2.4 if h <= 8 else 1.5
    fig = Figure(figsize=(cell * cols + 0.8, cell * rows + 0.9))
    ax = fig.subplots()
    im = ax.imshow(canvas, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    for i in range(h):
        r, c = divmod(i, cols)
        ax.text(c * (n + gap) + n / 2 - 0.5, r * (n + gap) - 0.8, f"head {i + 1}", ha="center", fontsize=7)
    labelled = len(tokens) == n and n * max(cols, rows) <= 160  # past that the labels would overlap
    if labelled:
        size = 6.5 if h <= 8 else 5
        ax.set_xticks([c * (n + gap) + j for c in range(cols) for j in range(n)], tokens * cols,
                      rotation=90, fontsize=size)
        ax.set_yticks([r * (n + gap) + j for r in range(rows) for j in range(n)], tokens * rows, fontsize=size)
        ax.tick_params(length=0)
    else:
        ax.set(xticks=[], yticks=[])
    for side in ax.spines.values():
        side.set_visible(False)
    fig.colorbar(im, ax=ax, fraction=0.025, pad=0.02)
    ax.set_title(f"{t.trial} ({t.profile}): {a.layer} self-attention, "
                 f"{h} head{'s' * (h != 1)}, one eval sentence; rows are queries, columns keys", fontsize=8, pad=14)
    return fig


# a row against its reference on the spec's page: better (p < 0.05), worse (p < 0.05), no difference found
VERSUS_COLORS = {"better": VERDICT_COLORS["held"], "worse": VERDICT_COLORS["flipped"],
                 "no difference found (p >= 0.05)": VERDICT_COLORS["within noise"]}
METRICS = (("ppl", "dev perplexity"), ("bleu", "BLEU"))


def _file(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "_".join(parts)) + ".png"


@_styled
def sweep(t: Table, img: Path) -> list[tuple[str, str]]:
    """A spec's page: each row's Δ against its reference (dev perplexity and BLEU, 95% intervals), its claims,
    and with a `sweep:` block each measured figure (mean over seeds, sd as error bars) against each swept
    field. Row names are tick labels and a legend says the colours: no label is drawn over another."""
    fields, label, against = t.sweep
    out = []
    rows = [r for r in against if r.estimates]
    if rows:
        out.append(("Each row's Δ against its reference (positive: the row is better), 95% interval, on dev "
                    "perplexity and BLEU", _save(_draw_against(t.title, rows), img / _file("against", t.name))))
    if any(v.estimate is not None for v in t.verdicts):
        out += claims(t, img, title=f"{t.title}: claims")
    for f in fields:
        pts = [p for p in t.rows if p.values.get(f) is not None and (p.ppl is not None or p.mean is not None)]
        if pts:
            out.append((f"dev perplexity and {label} against {f}",
                        _save(_draw_field(t.title, f, label, pts), img / _file("sweep", t.name, f))))
    return out


def _draw_against(title: str, rows: list) -> Figure:
    metrics = [(m, unit) for m, unit in METRICS if any(m in r.estimates for r in rows)]
    fig = Figure(figsize=(4.2 * len(metrics) + 1.6, 0.32 * len(rows) + 1.6))
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for i, (ax, (m, unit)) in enumerate(zip(axes, metrics)):
        ax.axvline(0, color="#555", lw=0.8)
        for y, r in enumerate(reversed(rows)):
            if m not in r.estimates:
                continue
            d, lo, hi, p = r.estimates[m]
            kind = "no difference found (p >= 0.05)" if p >= 0.05 else "better" if d > 0 else "worse"
            ax.errorbar(d, y, xerr=[[d - lo], [hi - d]], fmt="o", ms=4, capsize=3, color=VERSUS_COLORS[kind])
        ax.set_yticks(range(len(rows)), [f"{r.name} vs {r.vs}" for r in reversed(rows)] if i == 0 else [], fontsize=7)
        ax.set_ylim(-0.8, len(rows) - 0.2)
        ax.set_xlabel(f"Δ {unit} (positive: the row is better)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(unit, fontsize=9)
    handles = [Line2D([], [], marker="o", ls="", color=c, label=k) for k, c in VERSUS_COLORS.items()]
    fig.legend(handles=handles, frameon=False, fontsize=7, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(f"{title}: each row against its reference (95% interval)", fontsize=9)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def _draw_field(title: str, f: str, label: str, pts: list) -> Figure:
    fig = Figure(figsize=(9, 3.4))
    axes = fig.subplots(1, 2)
    xs = [str(p.values[f]) for p in pts]
    numeric = all(_is_number(v) for v in xs)
    pos = [float(v) for v in xs] if numeric else [sorted(set(xs)).index(v) for v in xs]
    for ax, (key, sd, name) in zip(axes, (("ppl", "ppl_sd", "dev perplexity"), ("mean", "sd", label))):
        got = [(x, getattr(p, key), getattr(p, sd) or 0.0) for x, p in zip(pos, pts) if getattr(p, key) is not None]
        if got:  # a figure is never below 0: the lower bar stops there
            ax.errorbar([g[0] for g in got], [g[1] for g in got], yerr=[[min(g[2], g[1]) for g in got],
                        [g[2] for g in got]], fmt="o", capsize=3)
        if not numeric:
            ax.set_xticks(range(len(set(xs))), sorted(set(xs)))
        ax.set(xlabel=f, ylabel=f"{name} (mean over seeds, sd)", title=name)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{title}: against {f}", fontsize=9)
    fig.tight_layout()
    return fig


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False
