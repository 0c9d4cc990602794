"""train.compile on: the whole model on a GPU for a run long enough to repay its longer warm-up, the layers
otherwise (zoo.train.step.whole_model; docs/benchmarks.md says the rule and its prediction)."""
import torch

from zoo import spec as zspec
from zoo.model import build_model
from zoo.train import WHOLE_FROM_STEPS, compiled, whole_model


def _cfg(steps: int):
    return zspec.resolve("base", profile="smoke", sets=["train.compile=on", f"train.steps={steps}"])[0]


def test_whole_model_on_a_gpu_for_a_long_run_only():
    gpu, cpu = torch.device("cuda"), torch.device("cpu")
    assert whole_model(_cfg(100_000), gpu)  # the paper's 100k steps on a GPU: the whole model's step time
    assert whole_model(_cfg(WHOLE_FROM_STEPS), gpu)
    assert not whole_model(_cfg(WHOLE_FROM_STEPS - 1), gpu)  # a short run: the layers' short warm-up
    assert not whole_model(_cfg(100_000), cpu)  # a CPU: compile does not pay there, the warm-up is what counts


def test_a_long_cpu_run_compiles_its_layers_and_stays_itself():
    cfg = _cfg(100_000)
    model = build_model(cfg.model, cfg.data.vocab_size)
    assert compiled(model, cfg, backend="aot_eager") is model and model._compiled  # regional: the model itself
    assert compiled(model, cfg, backend="aot_eager", whole=True) is not model  # asked for: one graph, a wrapper
