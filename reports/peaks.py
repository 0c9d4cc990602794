"""Peak throughput per device, to turn "FLOPs spent in wall time" into a utilization.

Dense figures (no structured sparsity) at the precision our training uses: bf16 autocast on CUDA,
fp32 on CPU. GPU numbers are NVIDIA's datasheet values; the CPU figure is an assumption, named.
"""
from __future__ import annotations

import re

# (substring of the hardware/device name, peak FLOP/s per device, what it is and where it comes from)
GPU_PEAKS = [
    ("h200", 989e12, "H200 bf16 dense, 989 TFLOPS (NVIDIA H200 datasheet)"),
    ("h100", 989e12, "H100 SXM bf16 dense, 989 TFLOPS (NVIDIA H100 datasheet; PCIe card: 756)"),
    ("a100", 312e12, "A100 bf16 dense, 312 TFLOPS (NVIDIA A100 datasheet)"),
    ("l4", 121e12, "L4 bf16 dense, 121 TFLOPS (NVIDIA L4 datasheet)"),
    ("p100", 9.5e12, "P100 fp32, 9.5 TFLOPS (the paper's footnote 5)"),
]
# Assumed: 2.8 GHz x 32 fp32 FLOP/cycle (two 256-bit FMA pipes) per thread. This 2-core AMD EPYC VM
# could reach about twice that with AVX-512; a torch fp32 2048^2 matmul measured ~50 GFLOP/s while
# the machine was shared. The figure is a stated yardstick, not a measurement.
CPU_PEAK_PER_THREAD = 90e9
CPU_NOTE = "CPU fp32, assumed 90 GFLOP/s per thread (2.8 GHz x 32 FLOP/cycle, AVX2-class FMA)"


def peak(hardware: str | None, device: str | None, workers: int | None = 1) -> tuple[float, str] | None:
    """(peak FLOP/s of everything the trial ran on, how it was obtained), or None when unknown.

    `hardware` is the store's column, e.g. "cpu, 1 thread on HOST (...)", "cpu, 2 threads, 3 workers on
    HOST (...)" (older stores: "cpu x2 threads x3 workers"),
    "GPU 0,1 on HOST (...)" or "NVIDIA H100 x1"; `device` the trial's torch device or its name."""
    hw = (hardware or "").split(" on ")[0].lower()  # never match a host name
    name = f"{hw} {(device or '').lower()}"
    n_workers = int(m.group(1)) if (m := re.search(r"(\d+) workers", hw)) else (workers or 1)
    if any(k in name for k in ("gpu", "cuda", "nvidia")):
        ids = re.search(r"gpu ([\d,]+)", hw)
        count = re.search(r"x\s*(\d+)(?! threads)", hw)
        n = len(ids.group(1).split(",")) if ids else int(count.group(1)) if count else n_workers
        for key, flops, note in GPU_PEAKS:
            if key in name:
                return flops * n, f"{n} x {note}"
        return None  # the GPU model is not recorded: no honest peak to divide by
    if "cpu" in name:
        threads = int(m.group(1)) if (m := re.search(r"(\d+) threads?\b", hw)) else 2  # this 2-core machine
        n = threads * n_workers
        return CPU_PEAK_PER_THREAD * n, f"{n} threads x {CPU_NOTE}"
    return None
