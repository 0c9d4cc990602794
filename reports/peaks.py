"""Peak throughput per device, to turn "FLOPs spent in wall time" into a utilization.

Dense figures (no structured sparsity) at the precision our training uses: bf16 autocast on CUDA,
fp32 on CPU. GPU numbers are NVIDIA's datasheet values; the CPU figure is an assumption, named.
"""
from __future__ import annotations

from zoo.result import Hardware, Placement  # noqa: F401 (the types peak() reads)

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


def peak(p: "Placement | None", hw: "Hardware | None") -> tuple[float, str] | None:
    """(peak FLOP/s of everything the trial ran on, how it was obtained), or None when unknown.

    `p` is the store's structured record of where the trial ran (threads, workers, gpu_ids); `hw`
    the run result's hardware (torch device and GPU model name). Both zoo.result models."""
    n_workers = (p.workers if p else None) or (hw.workers if hw else 1)
    gpu_ids = p.gpu_ids if p else []
    name = f"{hw.device_name} {hw.device}".lower() if hw else ""
    if gpu_ids or "cuda" in name or (hw and hw.device_name != "cpu"):
        n = len(gpu_ids) or n_workers
        for key, flops, note in GPU_PEAKS:
            if key in name:
                return flops * n, f"{n} x {note}"
        return None  # the GPU model is not recorded: no honest peak to divide by
    if p and p.threads:
        n = p.threads * n_workers
        return CPU_PEAK_PER_THREAD * n, f"{n} threads x {CPU_NOTE}"
    return None  # a store from before placements were kept: the threads are not known
