"""A reference's findings block: the figures its README quotes that its pages only summarise (each row's
dev perplexity and BLEU seed by seed, training times, the worst trial, the data's own baselines, a scale
trend's power at the store's own noise), computed from its stores, so the prose can quote them.

    python results/findings.py results/REF          # rewrite the block in results/REF/README.md
    python results/findings.py results/REF --check  # exit 1 when the block is not what the stores give now

The block sits between `<!-- findings:begin -->` and `<!-- findings:end -->`; each reference's
`commands.sh report` stage rewrites it after the pages, and tests/test_reference_readmes.py checks it.
"""
from __future__ import annotations

import math
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

BEGIN, END = "<!-- findings:begin -->", "<!-- findings:end -->"
UNIGRAM_CORPORA = {"multi30k"}  # small enough to count in seconds; WMT's millions of pairs are not
TREND_SLOPES = (0.03, 0.05)     # nats a doubling: the sizes the README's power statement is about


def _store(path: Path):
    from zoo.reports.runs import load
    return load(path.with_suffix("") if path.suffix == ".xz" else path)  # a .db.xz opens as its .db


def _seconds(xs) -> str:
    s = [x for x in xs if x is not None]
    return "-" if not s else f"{statistics.median(s):.0f} s" + (f" ({min(s):.0f}-{max(s):.0f} s)" if len(s) > 1 else "")


def _natural(name: str) -> list:
    """trend_32 before trend_128."""
    return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"(\d+)", name)]


def _lowest(t) -> str:
    """A trial's lowest logged dev perplexity and its step, where that was before its last step."""
    b = t.best
    if b.dev_ppl is None or b.dev_ppl_step is None or b.dev_ppl_step >= (t.result.steps_done or 0):
        return "last"
    return f"{b.dev_ppl:.2f} ({b.dev_ppl_step})"


def rows_section(runs) -> list[str]:
    """Per row and profile: its seeds' dev PPL and BLEU, training seconds; per profile its extremes."""
    done = [t for t in runs.trials if t.finished and t.result]
    groups = defaultdict(list)
    for t in done:
        groups[(t.profile, re.sub(r"-seed\d+$", "", t.trial))].append(t)  # a sweep's points apart
    out = []
    for profile in sorted({p for p, _ in groups}, key=_natural):
        ts = [t for t in done if t.profile == profile]
        ppl = [t for t in ts if t.result.dev_ppl is not None]
        bleu = [t for t in ts if t.result.primary and t.result.primary.bleu is not None]
        hours = lambda xs: sum(x or 0 for x in xs) / 3600
        line = (f"- Profile {profile}: {len(ts)} finished trial{'s' if len(ts) != 1 else ''}, training time median {_seconds(t.train_seconds for t in ts)}, "
                f"{hours(t.train_seconds for t in ts):.2f} trial-hours in all "
                f"({hours(t.result.total_seconds for t in ts):.2f} with decoding and scoring)")
        if ppl:
            w = max(ppl, key=lambda t: t.result.dev_ppl)
            line += f"; the worst dev PPL {w.result.dev_ppl:.2f} ({w.variant}, seed {w.seed})"
        if bleu:
            w = min(bleu, key=lambda t: t.result.primary.bleu)
            line += f"; the lowest dev BLEU {w.result.primary.bleu:.2f} ({w.variant}, seed {w.seed})"
        out.append(line + ".")
    out += ["", "| row | profile | seeds | dev PPL by seed | dev BLEU by seed | lowest dev PPL (step) by seed | "
            "training time, median (range) |", "|---|---|---|---|---|---|---|"]
    for (profile, row), ts in sorted(groups.items(), key=lambda kv: (_natural(kv[0][0]), kv[0][1])):
        ts = sorted(ts, key=lambda t: (t.seed or 0, t.trial))
        f = lambda v: "-" if v is None else f"{v:.2f}"
        out.append(f"| {row} | {profile} | {', '.join(str(t.seed) for t in ts)} | "
                   f"{' / '.join(f(t.result.dev_ppl) for t in ts)} | "
                   f"{' / '.join(f(t.result.primary and t.result.primary.bleu) for t in ts)} | "
                   f"{' / '.join(_lowest(t) for t in ts)} | "
                   f"{_seconds(t.train_seconds for t in ts)} |")
    return out


def parsing_section(runs) -> list[str]:
    """Per parsing trial and scored split: EVALB's figures beside the trivial parsers', and what it trained on."""
    ts = [t for t in runs.trials if t.finished and t.result and any(x.f1 is not None for x in t.result.splits.values())]
    if not ts:
        return []
    f = lambda v: "-" if v is None else f"{v:.2f}"
    out = ["", "| row | profile | seed | split | trees | F1 | precision | recall | flat tree F1 | right-branching F1 | "
           "malformed before repair | decoding s | training trees | target tokens seen |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t in sorted(ts, key=lambda t: (t.profile, t.trial)):
        for name, x in t.result.splits.items():
            if x.f1 is not None:
                out.append(f"| {t.variant} | {t.profile} | {t.seed} | {name} | {x.eval_sentences} | {f(x.f1)} | "
                           f"{f(x.precision)} | {f(x.recall)} | {f(x.f1_flat)} | {f(x.f1_right_branching)} | "
                           f"{'-' if x.malformed is None else x.malformed} | {f(x.decode_seconds)} | "
                           f"{t.result.train_pairs:,} | {t.result.tokens_seen / 1e6:.2f}M |")
    return out


def baselines(runs) -> list[str]:
    """What the data alone scores: an add-one unigram model of the target pieces (counted on the training
    targets, EOS once a sentence) and copying the source, on dev and on the splits the claims pool."""
    import sacrebleu
    from zoo import data
    out = []
    seen = {(t.config.data.dataset, t.config.data.vocab_size, tuple(dict.fromkeys(
        [t.config.eval.split, *t.config.eval.extra_splits, *t.config.eval.ppl_splits])))
        for t in runs.trials if t.config and t.config.data.dataset in UNIGRAM_CORPORA and t.paper_table != 4}
    for corpus, vocab, splits in sorted(seen):
        sp = data.load_sp(data.bpe_model(corpus, vocab))
        counts = Counter()
        targets = [tgt for _, tgt in data.load_pairs(corpus, "train")]
        for ids in sp.encode(targets):  # the corpus in one call: the same pieces, 5x faster than a call a sentence
            counts.update(ids)
        counts[3] += len(targets)  # EOS once a sentence (zoo.tokens)
        total, size = sum(counts.values()), sp.get_piece_size()

        def ppl(pairs):
            ids = [i for pieces in sp.encode([tgt for _, tgt in pairs]) for i in [*pieces, 3]]
            return math.exp(-sum(math.log((counts[i] + 1) / (total + size)) for i in ids) / len(ids))
        dev = data.load_pairs(corpus, "dev")
        pooled = [p for s in splits for p in data.load_pairs(corpus, s)]
        copy = sacrebleu.corpus_bleu([s for s, _ in dev], [[t for _, t in dev]]).score
        out.append(f"- Baselines of {corpus} ({vocab} BPE), no model: a unigram model of the target pieces has "
                   f"dev PPL {ppl(dev):.1f} and {ppl(pooled):.1f} on {' + '.join(splits)} ({len(pooled):,} sentences); "
                   f"copying the source scores dev sacreBLEU {copy:.2f}.")
    return out


def power_section(path: Path, ref: Path) -> list[str]:
    """The seeds each paper claim needs at this store's own seed and sentence noise (reports/power.py, as
    `zoo run SPEC --plan --power --pilot STORE` prints it per spec), where 2+ seeds of a claim's rows ran."""
    import io
    from zoo.reports import power
    from zoo.reports.runs import load
    runs = _store(path)
    profiles = Counter(t.profile for t in runs.trials if t.paper_table == 3 and t.finished)
    if not profiles:
        return []
    profile = profiles.most_common(1)[0][0]
    got = power.plan(load(path.with_suffix(""), profile=profile))
    if not any(n.source.startswith("pilot") for n in got.needs):
        return []
    out = io.StringIO()
    power.print_plan(got, out)
    return ["", f"Seeds per claim at this store's own noise, profile {profile} (`zoo run SPEC --plan --power --pilot "
            f"{ref.as_posix()}/zoo.db --profile {profile}` for each Table 3 spec):", "", "```", out.getvalue().rstrip(), "```"]


def trend_section(runs, ref: Path) -> list[str]:
    from zoo import evidence as E
    from zoo.reports import power
    plan_file = ref / "plan.yaml"
    plan = E.load_plan(plan_file) if plan_file.is_file() else None
    if plan is None or plan.trend is None:
        return []
    table = power.power_table(power.trend_slopes(runs, plan), plan, TREND_SLOPES)
    return ["", f"Power of the slope test at this store's own noise (`python -m zoo.reports.power --runs "
            f"{ref}/zoo.db --analysis {plan_file}`):", "", "```", table, "```"]


def block(ref: Path) -> str:
    ref = Path(ref)
    lines = [BEGIN, f"<!-- generated by `python results/findings.py {ref.as_posix()}` from the stores; not edited by hand -->"]
    for store in sorted(ref.rglob("*.db.xz")):
        runs = _store(store)
        lines += ["", f"**{store.relative_to(ref).as_posix()}**", ""] + rows_section(runs) + parsing_section(runs)
        if store.parent == ref and store.name == "zoo.db.xz":
            more = baselines(runs)
            lines += [""] + more if more else []
            trend = trend_section(runs, ref)
            lines += trend or power_section(store, ref)
    return "\n".join(lines + ["", END])


def rewrite(readme: str, new: str) -> str:
    if BEGIN not in readme:
        from zoo.errors import UserError
        raise UserError(f"no {BEGIN} ... {END} in the README: put the two markers where the block goes")
    return re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: new, readme, count=1, flags=re.S)


def main(argv: list[str]) -> int:
    from zoo.errors import UserError
    if not argv or not (Path(argv[0]) / "README.md").is_file():
        raise UserError(f"{argv[0] if argv else '(none)'} is not a reference folder with a README.md: "
                        "usage: python results/findings.py results/REF [--check]")
    ref = Path(argv[0].rstrip("/"))
    readme = ref / "README.md"
    text = readme.read_text()
    new = rewrite(text, block(ref))
    if "--check" in argv[1:]:
        if new != text:
            print(f"{readme}: its findings block is not what the stores give now: run python results/findings.py {ref}")
            return 1
        return 0
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    from zoo.errors import UserError
    try:
        sys.exit(main(sys.argv[1:]))
    except UserError as e:  # a DataError too: the baselines need the corpora: one paragraph, not a traceback
        print(f"results/findings.py: {e}", file=sys.stderr)
        sys.exit(2)
