"""The report's figures, as PNG files (matplotlib, Agg: no display needed).

Table 3 scatters put the paper and our runs side by side, never on one axis: a scaled profile's
numbers live at another scale. Per trial: training curves and one attention heat map.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from reports.runs import TABLE3_SPECS, paper_configs  # noqa: E402
from reports.tables import Table  # noqa: E402
from zoo import costs, paper  # noqa: E402

GROUP_COLORS = dict(zip(paper.TABLE3_GROUPS, ("#222222", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                             "#9467bd", "#8c564b")))
plt.rcParams.update({"font.size": 9, "axes.spines.top": False, "axes.spines.right": False})


def slug(t: dict) -> str:
    """A file-name-safe name for one trial: spec stem, variant, profile."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{Path(t['spec']).stem}_{t['variant']}_{t['profile']}")


def _save(fig, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path.name


def table3_scatters(t3: Table, img: Path) -> list[tuple[str, str]]:
    """BLEU against parameters and against training FLOPs: paper (left) and measured (right)."""
    frame = t3.sections[0].frame
    specs = {row: c for (_, row), c in paper_configs(TABLE3_SPECS).items()}
    group_of = {row: g for row, g, *_ in paper.TABLE3}
    pts = []
    for (_, row), r in frame.iterrows():
        spec, printed, ours = specs.get(row), r[("paper", "params (M)")], r[("measured", "params (M)")]
        pts.append({
            "row": row, "group": group_of[row], "printed": printed is not None,
            "paper_params": printed * 1e6 if printed else spec and costs.params_analytic(spec.model, 37000),
            "paper_flops": spec and costs.train_flops_total(spec), "paper_bleu": r[("paper", "BLEU")],
            "params": ours and ours * 1e6, "flops": r[("cost", "train FLOPs")], "bleu": r[("measured", "BLEU")]})
    out = []
    for name, xlabel, note in (
            ("params", "parameters", "Paper panel: printed counts (filled), our count of the paper spec "
                                     "where the paper prints none (hollow)."),
            ("flops", "training FLOPs (analytic)", "Paper panel: analytic FLOPs of the paper spec (100K "
                                                   "steps, 300K for big); measured: per step x steps done.")):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, side, title in zip(axes, ("paper", "ours"), ("paper (Table 3)", "measured (this store)")):
            xk, yk = (f"paper_{name}", "paper_bleu") if side == "paper" else (name, "bleu")
            shown = [p for p in pts if p[xk] and p[yk] is not None]
            for p in shown:
                c = GROUP_COLORS[p["group"]]
                hollow = side == "paper" and name == "params" and not p["printed"]
                ax.scatter(p[xk], p[yk], s=28, color=c, facecolors="none" if hollow else c, zorder=3)
                ax.annotate(p["row"], (p[xk], p[yk]), fontsize=7, xytext=(3, 3), textcoords="offset points")
            if shown:
                ax.set_xscale("log")
                ax.grid(alpha=0.3)
            else:
                ax.text(0.5, 0.5, "no finished runs yet", ha="center", va="center", transform=ax.transAxes,
                        color="#777")
                ax.set_xticks([]), ax.set_yticks([])
            ax.set(title=title, xlabel=xlabel, ylabel="BLEU (dev)")
        handles = [plt.Line2D([], [], marker="o", ls="", color=c, label=paper.TABLE3_GROUPS[g])
                   for g, c in GROUP_COLORS.items()]
        fig.legend(handles=handles, loc="lower center", ncol=4, frameon=False, bbox_to_anchor=(0.5, -0.12))
        fig.text(0.01, -0.17, note, fontsize=7, color="#555")
        caption = "BLEU against parameters" if name == "params" else "BLEU against training FLOPs"
        out.append((caption, _save(fig, img / f"table3_bleu_vs_{name}.png")))
    return out


def curves(t: dict, points: list[dict], img: Path) -> str | None:
    """Training loss and dev perplexity against step; None when the trial logged nothing."""
    loss = [(p["step"], p["loss"]) for p in points if p.get("loss") is not None]
    ppl = [(p["step"], p["dev_ppl"]) for p in points if p.get("dev_ppl") is not None]
    if not loss and not ppl:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3))
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
    return _save(fig, img / f"curves_{slug(t)}.png")


def attention(t: dict, img: Path) -> str | None:
    """Each head of the stored layer on one sentence, with its word-pieces; None without a map."""
    a = t.get("attention") or {}
    heads, tokens = a.get("weights") or [], a.get("tokens") or []
    if not heads:
        return None
    n = len(heads)
    cols = min(n, 4 if n <= 8 else 8)
    rows = math.ceil(n / cols)
    size = 2.2 if n <= 8 else 1.6
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows + 0.4), squeeze=False)
    labels = n <= 8 and len(tokens) <= 30  # with many small panels token labels would be unreadable
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        ax.imshow(heads[i], cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"head {i + 1}", fontsize=7)
        if labels and len(tokens) == len(heads[i]):
            ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=5)
            ax.set_yticks(range(len(tokens)), tokens, fontsize=5)
        else:
            ax.set_xticks([]), ax.set_yticks([])
    fig.suptitle(f"{t['variant']} ({t['profile']}): {a.get('layer', 'layer ?')} self-attention, "
                 f"one eval sentence; rows are queries", fontsize=8)
    fig.tight_layout()
    return _save(fig, img / f"attention_{slug(t)}.png")
