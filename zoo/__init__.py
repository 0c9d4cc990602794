"""zoo: a declarative model zoo and ablation runner for the Transformer of "Attention Is All You Need".

The public Python API does from a notebook what the CLI does:

    import zoo
    cfg = zoo.load("specs/table3_A.yaml", variant="A1", profile="smoke")[0]   # validated Config
    model = zoo.build_model(cfg.model, cfg.data.vocab_size)                   # a torch Transformer
    result = zoo.fit(cfg, out="runs/notebook/A1")    # train + score one variant: a zoo.result.RunResult
    runs = zoo.results("runs/zoo.db")       # what `zoo run` stored: runs.trials are zoo.result.Trial records

Names resolve lazily (PEP 562) so `import zoo` and the CLI start without importing torch or ray.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import warnings

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

_API = {  # public name -> (module, attribute): one home per fact, these are re-exports
    "Config": ("zoo.config", "Config"),
    "load": ("zoo.spec", "resolve"),
    "build_model": ("zoo.model", "build_model"),
    "fit": ("zoo.train", "train"),  # not `train`: that is the package zoo.train
    "results": ("zoo.reports.runs", "load"),
    "table": ("zoo.reports.frames", "table"),  # a page's table of those results, as a DataFrame
}
__all__ = sorted(_API)

# Modules that moved into a package keep their old names, with a DeprecationWarning naming their home.
MOVED = {f"zoo.{m}": f"zoo.{pkg}.{m}" for pkg, ms in {
    "model": "components costs decode", "evidence": "evalb_params evalb metrics stats claims sequential analysis trend",
}.items() for m in ms.split()}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import zoo.claims` gives zoo.evidence.claims itself (one module, not a copy), and says where it lives."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec):
        warnings.warn(f"{spec.name} moved: import it from {MOVED[spec.name]}", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(MOVED[spec.name])
        self.home_spec = module.__spec__  # the import system stamps the old name's spec on it next
        return module

    def exec_module(self, module):
        module.__spec__ = self.home_spec


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())


def __getattr__(name: str):
    if f"zoo.{name}" in MOVED:
        return importlib.import_module(f"zoo.{name}")
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
