"""The `zoo` command. Heavy imports (torch, ray, pandas) happen inside the commands that need them,
so `zoo --help` and `zoo validate` start in a fraction of a second."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from zoo.errors import Interrupted, Terminated, UserError, on_sigterm


def _table(rows: list[dict], cols: list[str]) -> str:
    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):  # as many decimals as it carries (63.0, 0.604), at most 4; huge or tiny: 2 figures
            if abs(v) >= 1e5 or (v and abs(v) < 1e-2):
                return f"{v:.2g}"
            text = f"{v:.4f}".rstrip("0")
            return text + "0" if text.endswith(".") else text
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10_000:
            return f"{v:,}"  # 63,045,632
        return str(v)
    from zoo.text import text_table
    cells = [[fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) if cells else len(c) for i, c in enumerate(cols)]
    return text_table([cols, ["-" * w for w in widths], *cells], right=tuple(range(1, len(cols))))


def _emit(args, rows: list[dict], cols: list[str], title: str | None = None):
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        if title:
            print(title)
        print(_table(rows, cols))


def _configs(args):
    from zoo.spec import resolve
    return resolve(args.spec, getattr(args, "variant", None), getattr(args, "profile", "paper") or "paper",
                   getattr(args, "set", None))


# -- spec commands ------------------------------------------------------------------------------

def cmd_validate(args) -> int:
    from zoo.spec import SpecError, resolve, spec_files
    files = spec_files(args.paths)
    if not files:
        raise UserError(f"no spec files (*.yaml) found in {' '.join(args.paths)}")
    bad = 0
    for f in files:
        try:
            cfgs = resolve(f, profile=args.profile, sets=args.set)  # a --set mistake shows here, not at `zoo run`
            names = ", ".join(c.trial for c in cfgs)  # a grid's or seeds' trials by their own names
            nv = len({c.variant for c in cfgs})
            what = f"{nv} variant{'s' * (nv != 1)}" if nv == len(cfgs) else f"{len(cfgs)} trials of {nv} variant{'s' * (nv != 1)}"
            print(f"ok    {f}  ({what}: {names})")
        except SpecError as e:
            bad += 1
            print("\n".join(f"FAIL  {x}" for x in e.paragraphs()))  # every mistake of the file, one line each
    print(f"{len(files) - bad} valid, {bad} invalid")
    return 2 if bad else 0


def cmd_show(args) -> int:
    import yaml
    from zoo.config import param_matched_d_ff
    from zoo.model import GATED_FFN
    from zoo.spec import profile_description
    cfgs = _configs(args)
    if args.json:
        print(json.dumps([c.model_dump(mode="json") for c in cfgs], indent=2))
        return 0
    print(f"profile {profile_description(args.profile, Path(args.spec))}")
    for c in cfgs:
        d = c.model_dump(mode="json")
        print(f"--- variant {c.variant}  (config hash {c.config_hash()})")
        print(yaml.safe_dump({k: d[k] for k in ("paper", "model", "data", "train", "eval", "resources")},
                             sort_keys=False, default_flow_style=None).rstrip())
        m = c.model
        print(f"# heads: h {m.h} x d_k {m.d_k} (d_v {m.d_v}) at d_model {m.d_model}"
              + (f", {m.h_kv} key/value heads" if m.h_kv is not None else ""))
        if m.ffn in ("relu", "gelu", *GATED_FFN):  # so a user can match a gated FFN's parameters to the paper's
            matched = param_matched_d_ff(m.d_ff)
            print(f"# ffn {m.ffn}: 3 matrices of d_model x d_ff (each gate {m.d_ff} wide); d_ff {matched} matches "
                  f"the parameters of relu at d_ff {m.d_ff}" if m.ffn in GATED_FFN else
                  f"# ffn {m.ffn}: 2 matrices; a gated FFN (swiglu, geglu) matches its parameters at d_ff {matched}")
        print(f"# budget: {budget(c)}")
        sch = c.train.schedule
        peak = max(sch.lr(s, m.d_model, c.train.steps) for s in {min(sch.warmup_steps, c.train.steps), 1})
        print(f"# schedule: peak learning rate {peak:.2g} at step {min(sch.warmup_steps, c.train.steps):,}; at most "
              f"{sch.times_paper(m.d_model, c.train.steps):.2g}x the paper's rate at the same step")
    return 0


def _no_size(name: str) -> str:
    from zoo.data import list_corpora
    present = any(r["name"] == name and r["status"] == "present" for r in list_corpora())
    return (f"epochs not counted ({name}'s training split is built from other files, such as trees)" if present
            else f"{name}'s training data is not here")


def budget(c) -> str:
    """A trial's training budget in the corpus's epochs, and the share of the run its averaged (or kept)
    checkpoints span: what a profile's scaling means for this corpus."""
    from zoo.data import train_size
    t = c.train
    tokens = t.steps * t.batch_tokens
    size = train_size(c.data.dataset)
    if size and c.data.max_train_pairs:
        size = (min(size[0], c.data.max_train_pairs), round(size[1] * min(1, c.data.max_train_pairs / size[0])))
    epochs = (f"about {tokens / size[1]:.1f} epochs of {c.data.dataset} ({size[0]:,} pairs, ~{size[1] / 1e6:.2f}M "
              "word-pieces a pass on its longer side, from its words)") if size else _no_size(c.data.dataset)
    k = c.eval.average_checkpoints
    span = (k or t.keep_checkpoints) * t.checkpoint_every
    window = (f"averages the last {k} checkpoints, every {t.checkpoint_every} steps: the last {100 * min(1, span / t.steps):.0f}% "
              "of the run" if k else f"no averaging; the {t.keep_checkpoints} kept checkpoints span the last "
              f"{100 * min(1, span / t.steps):.0f}%")
    total = f"{tokens / 1e6:.1f}M" if tokens >= 1e6 else f"{tokens:,}"  # a smoke budget is 18,000, not 0.0M
    return f"{t.steps:,} steps x {t.batch_tokens:,} tokens = {total} tokens, {epochs}; {window}"


def cmd_params(args) -> int:
    import torch
    from zoo import paper
    from zoo.model import params_analytic
    from zoo.model import build_model, count_params
    rows = []
    for c in _configs(args):
        with torch.device("meta"):  # count without allocating: big models cost nothing here
            n = count_params(build_model(c.model, c.data.vocab_size))
        ref = paper.table3_row(c.paper.row) if c.paper.table == 3 else None
        pm = ref["params_m"] if ref else None
        if pm is None and c.paper.table == 2 and c.data.dataset == "wmt14_en_de":  # Table 3 counts are EN-DE
            ref3 = paper.table3_row(c.paper.row)
            pm = ref3["params_m"] if ref3 else None
        rows.append({"variant": c.variant, "params": n, "params_analytic": params_analytic(c.model, c.data.vocab_size),
                     "paper_params_m": pm, "params_m": round(n / 1e6, 1),
                     "diff_pct": None if pm is None else round(100 * (n / 1e6 - pm) / pm, 1),
                     "vocab_size": c.data.vocab_size})
    _emit(args, rows, ["variant", "params", "params_m", "paper_params_m", "diff_pct", "params_analytic", "vocab_size"],
          "compiled parameter count (numel, shared embedding/pre-softmax counted once) vs the paper's Table 3")
    return 0


def cmd_flops(args) -> int:
    from zoo.model import SEQ_LEN, cost_row
    rows = [cost_row(c) for c in _configs(args)]
    title = (f"analytic FLOPs (2 per multiply-add, training = 3 x forward, sentences of {SEQ_LEN} word-pieces); "
             "paper_cost_flops = the paper's estimate: training time x 8 GPUs x 9.5 TFLOPS (P100)")
    _emit(args, rows, ["variant", "forward_flops_per_token", "train_flops_per_step", "steps",
                       "train_flops_total", "paper_cost_flops"], title)
    return 0


def cmd_schema(args) -> int:
    from zoo.spec import profile_schema, spec_schema
    print(json.dumps(profile_schema() if args.profile_file else spec_schema(), indent=2))
    return 0


# -- argument parsing -------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo", description="A declarative model zoo and ablation runner for "
                                "the Transformer of 'Attention Is All You Need'.")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    def spec_cmd(name, help, fn, variant=True, profile_default="paper"):
        s = sub.add_parser(name, help=help, description=help)
        s.add_argument("spec", help="spec file (specs/table3_A.yaml) or built-in spec name (table3_A)")
        if variant:
            s.add_argument("--variant", help="only this variant (a paper row name such as A1)")
        s.add_argument("--profile", default=profile_default,
                       help=f"scale preset: smoke, quick, cpu, gpu, paper or a profile file (default {profile_default})")
        s.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override, e.g. model.dropout=0.2")
        s.add_argument("--json", action="store_true", help="print a JSON array")
        s.set_defaults(fn=fn)
        return s

    s = sub.add_parser("validate", help="validate spec files or folders",
                       description="Validate spec files or folders; one line per file.")
    s.add_argument("paths", nargs="+")
    s.add_argument("--profile", default="paper", help="also check the specs under this profile")
    s.add_argument("--set", action="append", metavar="FIELD=VALUE", help="check with this override, as `zoo run --set`")
    s.set_defaults(fn=cmd_validate)
    spec_cmd("show", "print the fully resolved config of each variant", cmd_show)
    spec_cmd("params", "compiled and analytic parameter counts beside the paper's", cmd_params)
    spec_cmd("flops", "analytic FLOPs per token, per training step and per run", cmd_flops)
    s = sub.add_parser("schema", help="print the JSON Schema of spec files (for an editor's YAML language server)",
                       description="Print the JSON Schema of spec files (or, with --profile-file, of profile "
                       "files), derived from the validator's own models.")
    s.add_argument("--profile-file", action="store_true", help="the schema of specs/profiles/*.yaml instead")
    s.set_defaults(fn=cmd_schema)

    _more_commands(sub)
    return p


def _more_commands(sub):
    """Commands that live in other modules; each registers itself lazily (no heavy imports here)."""
    from zoo import commands
    commands.register(sub)


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
    except UserError as e:  # zoo.commands.NotInstalled: one line, not a ModuleNotFoundError
        print(f"zoo: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        parser.print_help()
        return 0
    if getattr(args, "no_download", False):
        os.environ["ZOO_DOWNLOAD"] = "0"  # an environment variable: `zoo run` passes ZOO_* on to every trial
    # SIGTERM (what a cluster scheduler or `kill` sends) ends zoo as Ctrl-C does: checkpoints are written
    # atomically, so the same message and the same resume apply
    before = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if getattr(args, "spec", None):  # a file, or a built-in spec by name (`zoo run table3_A`)
            from zoo.spec import spec_path
            args.spec = str(spec_path(args.spec))
        return int(args.fn(args) or 0)
    except UserError as e:
        print(f"zoo: error: {e}", file=sys.stderr)
        return 2
    except PermissionError as e:  # a file or folder of the user's this user may not read or write
        print(f"zoo: error: permission denied: {e.filename or e}; make it readable (and writable, for "
              "output folders) by this user, or point zoo at another path", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        how = " by SIGTERM" if isinstance(e, Terminated) else ""
        again = "; run the same command again to resume from the last checkpoint" \
            if getattr(args, "fn", None) and args.fn.__name__ in ("cmd_train", "cmd_run") else ""
        if not isinstance(e, Interrupted):  # a `zoo run` has said it already, with its rerun
            print(f"zoo: interrupted{how}{again}", file=sys.stderr)
        if argv is not None and not how:  # main() called from Python (pytest, a notebook): Ctrl-C stops the caller
            raise                         # too; the console script (argv None) exits 130
        return 143 if how else 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        signal.signal(signal.SIGTERM, before)  # main() called from Python (tests, notebooks) leaves no trace


if __name__ == "__main__":
    sys.exit(main())
