"""Commands that train, fetch data, run sweeps and write reports. Their modules import torch/ray,
so each handler imports what it needs when it runs, never at `zoo --help`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from zoo.errors import UserError


def cmd_data(args) -> int:
    from zoo import data
    root = data.data_dir(args.data_dir)
    if args.action == "list":
        rows = data.list_corpora(root)
        if args.json:
            print(json.dumps(rows, indent=2, default=str))
        else:
            print(f"data directory: {root}")
            for r in rows:
                print(f"  {r['name']:<15} {r['status']:<8} splits: {', '.join(r['splits'])}")
        return 0
    if not args.name:
        raise UserError(f"zoo data {args.action} needs a corpus name; see `zoo data list`")
    if args.action == "fetch":
        paths = data.fetch(args.name, root, base_url=args.base_url)
        print(f"{args.name}: {len(paths)} files verified in {root}")
        return 0
    results = data.verify(args.name, root)
    bad = [r for r in results if not r[1]]
    for rel, ok, why in results:
        print(f"{'ok  ' if ok else 'FAIL'}  {rel}  {why}")
    return 2 if bad else 0


def cmd_evalb(args) -> int:
    from zoo.evidence import evalb_main
    print(evalb_main(args.gold, args.test, args.params), end="")
    return 0


def register(sub) -> None:
    s = sub.add_parser("data", help="corpora: list, fetch from origin, verify sha256",
                       description="Corpora: where they are, download from their public origin, check sha256.")
    s.add_argument("action", choices=["list", "fetch", "verify"])
    s.add_argument("name", nargs="?", help="corpus name (see `zoo data list`)")
    s.add_argument("--data-dir", help="data directory (default $ZOO_DATA_DIR or the user cache)")
    s.add_argument("--base-url", help="fetch from this mirror instead of the public origin")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_data)

    s = sub.add_parser("evalb", help="EVALB-exact bracket scoring of two tree files",
                       description="Score TEST trees against GOLD trees exactly as EVALB does.")
    s.add_argument("gold")
    s.add_argument("test")
    s.add_argument("--params", help="EVALB parameter file (default: COLLINS.prm rules)")
    s.set_defaults(fn=cmd_evalb)
    register_train(sub)
    try:  # runner/ and reports/ exist as zoo.runner and zoo.reports only once installed (pyproject's package-dir)
        from zoo.reports import cli as reports_cli  # zoo report, in reports/cli.py
        from zoo.reports import compare as compare_cli  # zoo compare, in reports/compare.py
        from zoo.runner import cli as runner_cli  # zoo run / status, in runner/cli.py
    except ModuleNotFoundError as e:
        if e.name not in ("zoo.reports", "zoo.runner"):
            raise
        raise NotInstalled() from None
    reports_cli.register(sub)
    compare_cli.register(sub)
    runner_cli.register(sub)


class NotInstalled(UserError):
    """zoo run from a plain checkout: the folders runner/ and reports/ are not yet zoo.runner, zoo.reports."""

    def __init__(self):
        super().__init__("zoo is not installed: run `pip install -e .` in the repository (runner/ and reports/ "
                         "become zoo.runner and zoo.reports when installed), then run zoo again")


# -- training and translation -----------------------------------------------------------------

class Progress:
    """A live one-line progress display for `zoo train` (a line every 50 steps when not a TTY)."""

    def __init__(self, stream=None):
        stream = stream or sys.stderr  # the stderr of now, not of the first import (a notebook or test swaps it)
        self.stream, self.tty, self.t0, self.s0 = stream, stream.isatty(), None, None
        self.done = None  # the RunResult of train()'s "done" event

    def __call__(self, e) -> None:
        """One of train()'s events (zoo.result.Event), as typed as train() sent it."""
        from zoo.result import BadCheckpoint, ConfigChanged, Done, LogPoint, NoOptimizerState, Resumed
        if isinstance(e, ConfigChanged):
            print(f"the checkpoints in this folder were trained under another config ({'; '.join(e.changes)}): "
                  "training goes on under this one (--out elsewhere to start afresh)", file=self.stream)
        elif isinstance(e, Resumed):
            print(f"resumed from the checkpoint at step {e.step}", file=self.stream)
        elif isinstance(e, BadCheckpoint):
            print(f"checkpoint {e.path} cannot be loaded ({e.error}); set aside as {e.moved_to}, "
                  "trying the one before it", file=self.stream)
        elif isinstance(e, NoOptimizerState):
            print(f"resumed from {e.path}, an older checkpoint with weights only: Adam's moments start afresh",
                  file=self.stream)
        elif isinstance(e, Done) and e.result is not None:
            self.done = e.result  # printed by cmd_train once the progress line is closed
        elif isinstance(e, LogPoint):
            self._point(e)

    def _point(self, pt) -> None:
        import math
        import time
        from zoo.text import duration
        now, step, steps = time.time(), pt.step, pt.steps or pt.step
        if self.t0 is None:
            self.t0, self.s0 = now, step - 1
        rate = (step - self.s0) / max(now - self.t0, 1e-9)
        eta = (steps - step) / rate if rate > 0 else float("nan")
        parts = [f"step {step}/{steps}"]
        if pt.loss is not None:
            parts += [f"loss {pt.loss:.3f}", f"lr {pt.lr:.2e}", f"{pt.tokens_per_s:.0f} tok/s"]
        if pt.dev_ppl is not None:
            parts.append(f"dev ppl {pt.dev_ppl:.2f}")
        parts.append(f"ETA {duration(eta) if math.isfinite(eta) else '-'}")
        text = "  ".join(parts)
        if self.tty:
            print("\r" + text.ljust(100), end="", file=self.stream, flush=True)
        elif step % 50 == 0 or step == steps or pt.dev_ppl is not None:
            print(text, file=self.stream, flush=True)


def cmd_train(args) -> int:
    from zoo.paths import inside
    from zoo.spec import SpecError, auto_profile, profile_description, resolve
    profile = auto_profile(args.profile)
    try:
        cfgs = resolve(args.spec, args.variant, profile, args.set, data_dir=args.data_dir)
    except SpecError:  # --variant may name one trial of a seeds axis or sweep (base-seed2)
        if args.variant is None:
            raise
        cfgs = [c for c in resolve(args.spec, None, profile, args.set, data_dir=args.data_dir)
                if c.trial == args.variant]
        if not cfgs:
            raise
    if len(cfgs) > 1:
        names = ", ".join(c.trial for c in cfgs[:8]) + (", ..." if len(cfgs) > 8 else "")
        raise UserError(f"{args.spec} makes {len(cfgs)} trials under profile {profile} ({names}); choose one "
                        "with --variant, which takes a variant or a trial name (or use `zoo run` to run them all)")
    cfg = cfgs[0]
    # --out is the run folder itself; by default it is named after the spec, variant and profile,
    # and must stay inside runs/train/ (zoo.paths.inside refuses a name that leads elsewhere)
    out = Path(args.out) if args.out else inside(Path("runs") / "train", Path(args.spec).stem,
                                                 f"{cfg.variant}-{cfg.profile}")
    from zoo.runner.storefile import refuse_shadowing
    refuse_shadowing(out, "--out")  # a run folder named zoo.db would hide a compressed store beside it
    done = _finished(out, cfg)
    if done is not None:  # said first, so an old summary never passes for a run just trained
        print(f"already finished at step {done.steps_done}: nothing trained; --out elsewhere to train again\n"
              f"({out} holds this config's finished run: train.compile and train.checkpoint_minutes change how a "
              "run goes, not what it computes, so they do not make another run.) Its summary:")
        print(_summary_text(done, cfg))
        return 0
    print(f"zoo train {cfg.variant} from {args.spec}\nprofile {profile_description(profile, Path(args.spec))}\n"
          f"output {out}", file=sys.stderr)
    from zoo.train import train
    progress = Progress()
    s = train(cfg, out, args.data_dir, report=progress)
    print(file=sys.stderr)
    # the "done" event's result; train() sends none when it finds the run already finished
    print(_summary_text(progress.done or s, cfg))
    # exit 0 as `zoo run` does for a trial cut short: the run is whole and says so (its summary records
    # time_limited); a failure's code would make a script discard a budget the user set on purpose
    return 0


def _finished(out: Path, cfg):
    """The RunResult of `out` when it holds this config's finished run (train() would return it
    untrained), else None (no summary, an unreadable one, or another config's)."""
    from zoo.result import RunResult
    try:
        done = RunResult.model_validate_json((out / "summary.json").read_text())
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
    return done if done.config_hash == cfg.config_hash() else None


def _summary_text(r, cfg=None) -> str:
    """What `zoo train` prints at the end, from its zoo.result.RunResult (and its config: a run its time limit
    cut short says so first)."""
    from zoo.text import duration
    cut = cfg is not None and (r.time_limited or r.steps_done < cfg.train.steps)
    lines = [f"cut short: stopped at step {r.steps_done} of {cfg.train.steps} by train.time_limit_minutes "
             f"({cfg.train.time_limit_minutes:g} min); a comparison gives a run cut short no Δ and no verdict"
             if cut and cfg.train.time_limit_minutes else "",
             f"variant {r.variant} ({r.profile}): {r.steps_done} steps, {r.tokens_seen} target tokens in "
             f"{duration(r.train_seconds)} ({r.tokens_per_s:.0f} tok/s) on {r.hardware.device}"
             f"{' (bf16 autocast)' if r.hardware.compute_dtype == 'bf16' else ''}; "
             f"{100 * r.checkpoint_share:.1f}% of it waiting on checkpoints",
             f"dev perplexity (per word-piece): {r.dev_ppl:.2f}" if r.dev_ppl else ""]
    for x in r.splits.values():
        if x.bleu is not None:
            lines += [f"{x.eval_split} sacreBLEU {x.bleu:.2f} ({x.eval_sentences} sentences, {x.eval_weights})",
                      f"  signature: {x.bleu_signature}",
                      f"  {x.bleu_tokenized_label or 'tokenized BLEU'}: {x.bleu_tokenized:.2f}"]
            if x.bleu_final_weights is not None:
                lines.append(f"  final weights, same step: {x.bleu_final_weights:.2f}")
        if x.f1 is not None:
            nan = float("nan")
            lines.append(f"{x.eval_split} bracketing F1 {x.f1:.2f} (EVALB, {x.eval_sentences} sentences; "
                         f"flat tree {x.f1_flat if x.f1_flat is not None else nan:.2f}, right-branching "
                         f"{x.f1_right_branching if x.f1_right_branching is not None else nan:.2f}; malformed "
                         f"before repair {x.malformed if x.malformed is not None else '?'}, decoded in "
                         f"{x.decode_seconds or 0:.0f} s)")
    return "\n".join(x for x in lines if x)


def cmd_translate(args) -> int:
    from zoo import data as zdata
    from zoo.model import translate
    from zoo.config import Config
    from zoo.result import RunResult
    from zoo.train import average_checkpoints, build, checkpoints, load_checkpoint, target_vocab
    path = Path(args.checkpoint)
    run_dir = path if path.is_dir() else path.parent.parent
    cfg_file = run_dir / "config.json"
    summary = run_dir / "summary.json"
    if not cfg_file.exists() or not summary.exists() and not path.is_file():
        raise UserError(f"{path} is not a finished zoo run directory or checkpoint (need config.json and "
                        "checkpoints/step_*.pt, as written by `zoo train` or `zoo run`)")
    try:  # a folder of someone else's config.json / summary.json is a mistake, not a traceback
        cfg = Config.model_validate_json(cfg_file.read_bytes())
        done = RunResult.model_validate_json(summary.read_bytes()) if summary.exists() else None
    except (ValueError, OSError) as e:
        bad = cfg_file if "cfg" not in locals() else summary
        first = next((l.strip() for l in str(e).splitlines() if l.strip()), type(e).__name__)[:200]
        raise UserError(f"{bad} is not a zoo run's file ({first}); point zoo translate at a run folder (or one of "
                        "its checkpoints) written by `zoo train` or `zoo run`") from None
    tgt = target_vocab(cfg)
    sp_path = done.bpe_model if done is not None else \
        zdata.bpe_model(cfg.data.dataset, cfg.data.vocab_size, zdata.data_dir(None), source_only=tgt is not None)
    sp = zdata.load_sp(Path(sp_path))
    model = build(cfg, sp, tgt)
    if path.is_file():
        use = [path]
    elif not checkpoints(run_dir):
        raise UserError(f"{run_dir} has no checkpoints")
    else:
        use = checkpoints(run_dir)[-(cfg.eval.average_checkpoints or 1):]
    try:  # weights only: a shared checkpoint cannot run code here
        model.load_state_dict(average_checkpoints(use) if len(use) > 1 else load_checkpoint(use[0])["model"])
    except Exception as e:
        first = next((l.strip() for l in str(e).splitlines() if l.strip()), type(e).__name__)[:300]
        raise UserError(f"cannot load the checkpoint {', '.join(map(str, use))}: {first}. zoo loads weights "
                        "only (tensors and plain values; pickled objects are refused, so a checkpoint cannot "
                        "run code); use a checkpoint written by `zoo train` or `zoo run`") from None
    lines = _stdin_lines()
    limit = cfg.model.max_len - 1  # the model embeds max_len positions; the source ends with eos
    for i, n in enumerate(len(x) for x in sp.encode(lines)):
        if n > limit:
            print(f"zoo translate: warning: line {i + 1} has {n} word-pieces, more than the model's max_len "
                  f"{cfg.model.max_len} holds: only its first {limit} are translated", file=sys.stderr)
    for hyp in translate(model.eval(), sp, lines, cfg.eval, tgt=tgt):
        print(hyp)
    return 0


def _stdin_lines() -> list[str]:
    """stdin as UTF-8 text lines; binary input is a clear error naming the line."""
    data = sys.stdin.buffer.read()
    for i, raw in enumerate(data.split(b"\n")):
        try:
            if b"\0" in raw:
                raise UnicodeDecodeError("utf-8", raw, raw.index(b"\0"), raw.index(b"\0") + 1, "NUL byte")
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"stdin line {i + 1} is not UTF-8 text ({e.reason} at byte {e.start}): "
                            "`zoo translate` reads one sentence per line of UTF-8 text") from None
    return data.decode("utf-8").splitlines()


def register_train(sub) -> None:
    s = sub.add_parser("train", help="train one variant in this process (no Ray)",
                       description="Train, decode and score one variant in-process, with a live progress line.")
    s.add_argument("spec")
    s.add_argument("--variant", help="the variant (a paper row name); required when the spec has several")
    s.add_argument("--profile", default="auto", help="smoke, quick, cpu, gpu, paper, auto (default: gpu if one, else cpu)")
    s.add_argument("--set", action="append", metavar="FIELD=VALUE")
    s.add_argument("--out", help="run directory (default runs/train/SPEC/VARIANT-PROFILE)")
    s.add_argument("--data-dir", help="data directory (default $ZOO_DATA_DIR or the user cache)")
    s.add_argument("--no-download", action="store_true",
                   help="never fetch a missing corpus on first use (also: ZOO_DOWNLOAD=0)")
    s.set_defaults(fn=cmd_train)
    s = sub.add_parser("translate", help="translate stdin to stdout with beam search",
                       description="Translate stdin to stdout with a trained run (or one checkpoint).")
    s.add_argument("checkpoint", help="a run directory or a checkpoints/step_*.pt file")
    s.set_defaults(fn=cmd_translate)
