"""bench/bench_train.py, every mode, on tiny shapes, as a subprocess: each prints and writes its figures (their
values mean nothing at these sizes; the benchmarks themselves are run by hand, docs/benchmarks.md)."""
import json
import os
import subprocess
import sys

import pytest
import torch

FAST = ["--rounds", "1", "--steps", "1", "--base-steps", "1", "--peak-seconds", "0.02", "--check-steps", "1"]


def _bench(repo, data_root, tmp_path, *args):
    out = tmp_path / "figures.json"
    r = subprocess.run([sys.executable, str(repo / "bench" / "bench_train.py"), *args, *FAST, "--json", str(out)],
                       cwd=repo, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "ZOO_DATA_DIR": str(data_root), "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout, json.loads(out.read_text())


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_default_run_compares_zoo_with_nn_transformer(repo, data_root, tmp_path):
    """The default mode (the docstring's command) on the smoke profile's shapes: zoo beside nn.Transformer,
    the second model, the MFU lines and the ratio."""
    out, fig = _bench(repo, data_root, tmp_path, "--profile", "smoke", "--reference-init", "zoo", "--malloc-default")
    assert "ratio zoo / nn.Transformer: " in out and "MFU cpu-profile base (of the measured fp32 peak): " in out
    assert "target tokens/s" in out and "paper base: d_model" in out
    assert {"zoo", "nn.Transformer", "paper base"} <= set(fig["models"]) and fig["threads"] == 1
    assert all(row["tokens_per_s"] > 0 and row["step_ms"] > 0 for row in fig["models"].values())


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_tiny_trains_both_paper_models_on_this_device(repo, data_root, tmp_path):
    out, fig = _bench(repo, data_root, tmp_path, "--tiny", "--no-bf16")
    assert "MFU paper base (cpu " in out and "MFU paper big (cpu " in out and "ms a step" in out
    assert set(fig["models"]) == {"base", "big"} and fig["batch_tokens"] == 600


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_predict_checks_itself_and_predicts_each_gpu_and_the_calibrated_h100(repo, data_root, tmp_path):
    out, fig = _bench(repo, data_root, tmp_path, "--predict", "--tiny")
    assert "roofline self-check error: " in out
    for gpu in ("H100 SXM", "H200 SXM", "A100 SXM", "H100 SXM (calibrated)"):
        assert f"predicted {gpu} paper base" in out and f"predicted {gpu} paper big" in out, gpu
        assert len(fig["models"]["base"][gpu]["eager"]["ms"]) == 3
    assert fig["cpu_check"] and "this CPU (fp32)" in fig["models"]["base"]


def test_the_paper_models_default_to_the_gpu_profiles_batch(repo):
    sys.path.insert(0, str(repo / "bench"))
    try:
        import bench_train
    finally:
        sys.path.remove(str(repo / "bench"))
    assert bench_train.gpu_profile_batch_tokens() == 25000  # specs/profiles/gpu.yaml's set: train.batch_tokens


@pytest.mark.slow  # inductor builds C++ for the CPU: a minute or more on a busy 2-core machine
def test_compile_mode_compares_eager_with_compiled(repo, data_root, tmp_path):
    out, fig = _bench(repo, data_root, tmp_path, "--compile", "--profile", "smoke")
    assert "compile on this CPU: " in out and fig["gain"] > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_cuda_trains_both_paper_models(repo, data_root, tmp_path):
    out, fig = _bench(repo, data_root, tmp_path, "--device", "cuda", "--tiny")
    assert "MFU paper base (cuda " in out and "peak memory" in out and set(fig["models"]) == {"base", "big"}
