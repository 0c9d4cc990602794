"""Peak throughput per device, to turn "FLOPs spent in wall time" into a utilization.

Dense figures (no structured sparsity) at the precision our training uses: bf16 autocast on CUDA,
fp32 on CPU. GPU numbers are NVIDIA's datasheet values; the CPU figure is an assumption, named.
"""
from __future__ import annotations

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


def peak(placement: dict | None, device: str | None) -> tuple[float, str] | None:
    """(peak FLOP/s of everything the trial ran on, how it was obtained), or None when unknown.

    `placement` is the store's structured record of where the trial ran (threads, workers, gpu_ids;
    for several workers, each worker's threads); `device` the trial's torch device or GPU model name."""
    p = placement or {}
    n_workers = p.get("workers") or 1
    name = (device or "").lower()
    if p.get("gpu_ids") or any(k in name for k in ("gpu", "cuda", "nvidia")):
        n = len(p.get("gpu_ids") or []) or n_workers
        for key, flops, note in GPU_PEAKS:
            if key in name:
                return flops * n, f"{n} x {note}"
        return None  # the GPU model is not recorded: no honest peak to divide by
    if p.get("threads"):
        n = p["threads"] * n_workers
        return CPU_PEAK_PER_THREAD * n, f"{n} threads x {CPU_NOTE}"
    return None  # a store from before placements were kept: the threads are not known
