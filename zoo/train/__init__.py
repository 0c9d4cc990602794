"""One trial's training, the paper's way (section 5), then its decoding and scores: a typed pipeline.

The parts:
1. zoo.train.prepared: the trial's corpus encoded with its vocabularies (`prepare` -> `Prepared`), its model (`build`);
2. zoo.train.recipe: Adam, label-smoothed cross-entropy; zoo.train.compiled_loss: the loss as compiled
   per-chunk kernels (train.compile on); zoo.train.step: one optimizer step, as the loop, the bench and the plan take it;
3. zoo.train.checkpointing: the checkpoint's one home: the loop's `State`, a `Checkpoint`'s contents, file
   names, written atomically, listed, loaded, resumed and averaged; zoo.train.writer: the process that writes them;
4. zoo.train.device: rank, device, GPU share, compute dtype and the memory check of a trial;
5. zoo.train.loop: one trial, `train`: prepare, resume, the step loop (accumulation, data parallel), typed events;
6. zoo.train.evaluation: dev perplexity, decoding, scores and the attention map of the trained model;
7. zoo.train.learning: whether a run is learning: its training NLL against the unigram and uniform levels;
8. zoo.train.stacked: seeds side by side, K runs trained as one stacked model (`train_stacked`).
This door serves their public names to outsiders (`from zoo.train import train`; `zoo.fit` is `train`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import door

# The door, written by scripts/doors.py from the parts' __all__ (tests/test_structure.py checks it).
if TYPE_CHECKING:
    from .checkpointing import atomic_save, average_checkpoints, checkpoints, load_checkpoint, optim_file
    from .device import (GPUOutOfMemoryError, NoGPU, autocast, autocast_dtype, available_memory, check_memory,
        cpu_has_bf16, cuda_seen, gpu_share, keep_freed_memory, train_device)
    from .evaluation import attention_map, dev_perplexity, dev_sentence_nll, evaluate, load_for_eval, score
    from .learning import Levels, NotLearningError, check_from, levels
    from .loop import NonFiniteLoss, rank_parts, train
    from .prepared import Prepared, build, check_kept, prepare, target_vocab, training_batch
    from .recipe import LOSS_CHUNK, make_optimizer, smoothed_loss, smoothed_rows
    from .stacked import Seat, Stack, pad_batches, stack_problem, stack_size, stacked_step, train_stacked
    from .step import (WHOLE_FROM_STEPS, batch_loss, compiled, data_parallel, draws_key, read_stats, step_setup,
        train_step, whole_model)
    from .writer import Writer

_PART = {  # name -> the part that lends it
    "atomic_save": "checkpointing", "average_checkpoints": "checkpointing", "checkpoints": "checkpointing",
    "load_checkpoint": "checkpointing", "optim_file": "checkpointing", "GPUOutOfMemoryError": "device",
    "NoGPU": "device", "autocast": "device", "autocast_dtype": "device", "available_memory": "device",
    "check_memory": "device", "cpu_has_bf16": "device", "cuda_seen": "device", "gpu_share": "device",
    "keep_freed_memory": "device", "train_device": "device", "attention_map": "evaluation",
    "dev_perplexity": "evaluation", "dev_sentence_nll": "evaluation", "evaluate": "evaluation",
    "load_for_eval": "evaluation", "score": "evaluation", "Levels": "learning", "NotLearningError": "learning",
    "check_from": "learning", "levels": "learning", "NonFiniteLoss": "loop", "rank_parts": "loop", "train": "loop",
    "Prepared": "prepared", "build": "prepared", "check_kept": "prepared", "prepare": "prepared",
    "target_vocab": "prepared", "training_batch": "prepared", "LOSS_CHUNK": "recipe", "make_optimizer": "recipe",
    "smoothed_loss": "recipe", "smoothed_rows": "recipe", "Seat": "stacked", "Stack": "stacked",
    "pad_batches": "stacked", "stack_problem": "stacked", "stack_size": "stacked", "stacked_step": "stacked",
    "train_stacked": "stacked", "WHOLE_FROM_STEPS": "step", "batch_loss": "step", "compiled": "step",
    "data_parallel": "step", "draws_key": "step", "read_stats": "step", "step_setup": "step", "train_step": "step",
    "whole_model": "step", "Writer": "writer",
}
# End of the door.
__all__ = list(_PART)
__getattr__, __dir__ = door(__name__, _PART)
