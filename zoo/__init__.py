"""zoo: a declarative model zoo and ablation runner for the Transformer of "Attention Is All You Need".

The public Python API does from a notebook what the CLI does:

    import zoo
    cfg = zoo.load("specs/table3_A.yaml", variant="A1", profile="smoke")[0]   # validated Config
    model = zoo.build_model(cfg.model, cfg.data.vocab_size)                   # a torch Transformer
    result = zoo.fit(cfg, out="runs/notebook/A1")    # train + score one variant: a zoo.result.RunResult
    runs = zoo.results("runs/zoo.db")       # what `zoo run` stored: runs.trials are zoo.result.Trial records

Each name is imported on first use (PEP 562), so `import zoo` and the CLI start without importing torch or
ray; the imports under TYPE_CHECKING name the same homes for editors and type checkers (tests/test_structure.py
checks that the two agree).
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

# Large CPU tensors on transparent huge pages. torch reads this once, at its first CPU allocation,
# so it is set here, before any. A training step allocates and frees logits-sized buffers (100+ MB)
# every step: on 2 MB pages they fault in 512x fewer times and fragment the heap less (a cpu-profile
# run under bf16 autocast, whose half- and full-size buffers interleave, grew to 9 GB resident after
# 500 steps on 4 KB pages and holds about 4 GB on these; a step is ~10% faster). Off: THP_MEM_ALLOC_ENABLE=0.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
# The CUDA caching allocator reads this once, at its first allocation: with expandable segments, the
# ever-changing batch shapes reuse one growing segment instead of fragmenting the GPU (or the trial's
# share of it, resources.gpus < 1) into blocks of each step's sizes. A user's own setting is kept.
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

if TYPE_CHECKING:
    from zoo.config import Config
    from zoo.model import build_model
    from zoo.reports.frames import table
    from zoo.reports.runs import load as results
    from zoo.spec import resolve as load
    from zoo.train import train as fit

_API = {  # public name -> (module, attribute): one home per fact, these are re-exports
    "Config": ("zoo.config", "Config"),
    "load": ("zoo.spec", "resolve"),
    "build_model": ("zoo.model", "build_model"),
    "fit": ("zoo.train", "train"),  # not `train`: that is the package zoo.train
    "results": ("zoo.reports.runs", "load"),
    "table": ("zoo.reports.frames", "table"),  # a page's table of those results, as a DataFrame
}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'zoo' has no attribute {name!r}")
    module, attr = _API[name]
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:  # a plain checkout: reports/ is zoo.reports only once installed
        if e.name not in ("zoo.reports", "zoo.runner"):
            raise
        raise ImportError(f"zoo.{name} needs zoo installed: run `pip install -e .` in the repository") from None


def __dir__():
    return sorted(set(globals()) | set(_API))
