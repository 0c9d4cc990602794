"""One trial's training, the paper's way (section 5), then its decoding and scores.

The parts:
1. zoo.train.recipe: Adam, the learning rate of equation (3), label-smoothed cross-entropy;
2. zoo.train.compiled_loss: the same loss as compiled per-chunk kernels (train.compile on);
3. zoo.train.checkpointing: checkpoints written atomically, listed, loaded and averaged;
   zoo.train.writer: the process that writes them beside training;
4. zoo.train.device: rank, device, GPU share, compute dtype and the memory check of a trial;
5. zoo.train.loop: one trial: data preparation, the loop (resume, accumulation, data parallel), evaluation.
This door serves their public names to outsiders (`from zoo.train import train`; `zoo.fit` is `train`).
"""
from zoo._door import door

__getattr__, __dir__ = door(__name__, {
    "recipe": "LOSS_CHUNK make_optimizer smoothed_loss",
    "checkpointing": "average_checkpoints checkpoints load_checkpoint",
    "device": "NoGPU autocast autocast_dtype available_memory check_memory cpu_has_bf16 cuda_seen gpu_share "
              "keep_freed_memory",
    "loop": "GPUOutOfMemoryError NonFiniteLoss Prepared attention_map build compiled data_parallel dev_perplexity "
            "dev_sentence_nll evaluate load_for_eval prepare rank_parts read_stats target_vocab train",
}, moved={"zoo.config": "noam_lr"})
