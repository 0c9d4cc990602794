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

__getattr__, __dir__ = door(__name__, __file__, ["recipe", "checkpointing", "device", "loop", "step", "writer", "compiled_loss"],
                            moved={"zoo.config": "noam_lr"})
