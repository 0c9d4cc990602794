"""Peak throughput per device and compute dtype, to turn "FLOPs spent in wall time" into a utilization.

A run is judged against the peak of the dtype its matmuls ran in (`Hardware.compute_dtype`): a bf16
run against the fp32 peak would read up to ~4x too well on a CPU with bf16 instructions, an fp32 GPU
run against the bf16 tensor-core peak ~15x too badly. Dense figures (no structured sparsity); GPU
numbers are NVIDIA's datasheet values, the CPU figures assumptions, named.
"""
from __future__ import annotations

from zoo.result import Hardware, Placement, Provenance  # noqa: F401 (the types peak() reads)

# (substring of the device name, {dtype: peak FLOP/s per device}, what it is and where it comes from).
# fp32 is plain fp32 (torch leaves TF32 off for matmuls by default).
GPU_PEAKS = [
    ("h200", {"bf16": 989e12, "fp32": 67e12}, "H200 bf16 dense 989, fp32 67 TFLOPS (NVIDIA H200 datasheet)"),
    ("h100", {"bf16": 989e12, "fp32": 67e12},
     "H100 SXM bf16 dense 989, fp32 67 TFLOPS (NVIDIA H100 datasheet; PCIe card: 756, 51)"),
    ("a100", {"bf16": 312e12, "fp32": 19.5e12}, "A100 bf16 dense 312, fp32 19.5 TFLOPS (NVIDIA A100 datasheet)"),
    ("l4", {"bf16": 121e12, "fp32": 30.3e12}, "L4 bf16 dense 121, fp32 30.3 TFLOPS (NVIDIA L4 datasheet)"),
    ("p100", {"fp32": 9.5e12}, "P100 fp32, 9.5 TFLOPS (the paper's footnote 5; no bf16)"),
]
# Assumed: 2.8 GHz x FLOP/cycle per thread. fp32: 32 (two 256-bit FMA pipes, AVX2-class). bf16: 128
# with AVX512-BF16 (512-bit lanes, a dot product of bf16 pairs per FMA slot: 4x), 1024 with AMX tiles.
# A 2-core AMD EPYC VM measured ~50 GFLOP/s in a torch fp32 2048^2 matmul while shared: these are
# stated yardsticks, not measurements.
GHZ = 2.8e9
CPU_FLOP_PER_CYCLE = {"fp32": 32, "bf16": 128, "bf16+amx": 1024}
CPU_NOTE = ("CPU assumed 2.8 GHz per thread x FLOP/cycle: fp32 32 (AVX2-class FMA, 90 GFLOP/s), bf16 128 "
            "(AVX512-BF16, 358 GFLOP/s), bf16 with AMX 1024")


def peak(p: "Placement | None", hw: "Hardware | None",
         prov: "Provenance | None" = None) -> tuple[float, str] | None:
    """(peak FLOP/s of everything the trial ran on, at its compute dtype, how it was obtained), or None
    when unknown.

    `p` is the store's structured record of where the trial ran (threads, workers, gpu_ids); `hw`
    the run result's hardware (torch device, GPU model name, compute dtype); `prov` its provenance
    (the CPU's instruction sets; None for older stores). All zoo.result models."""
    n_workers = (p.workers if p else None) or (hw.workers if hw else 1)
    gpu_ids = p.gpu_ids if p else []
    dtype = hw.compute_dtype if hw else "fp32"
    name = f"{hw.device_name} {hw.device}".lower() if hw else ""
    if gpu_ids or "cuda" in name or (hw and hw.device_name != "cpu"):
        n = len(gpu_ids) or n_workers
        for key, flops, note in GPU_PEAKS:
            if key in name:
                return (flops[dtype] * n, f"{n} x {note}, at {dtype}") if dtype in flops else None
        return None  # the GPU model is not recorded: no honest peak to divide by
    if p and p.threads:
        n = p.threads * n_workers
        kind = "bf16+amx" if dtype == "bf16" and prov and "amx_bf16" in prov.cpu_flags else dtype
        per_cycle = CPU_FLOP_PER_CYCLE.get(kind, CPU_FLOP_PER_CYCLE["fp32"])
        return GHZ * per_cycle * n, f"{n} threads x 2.8 GHz x {per_cycle} {kind} FLOP/cycle"
    return None  # a store from before placements were kept: the threads are not known
