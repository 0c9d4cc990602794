"""One trial's training, the paper's way (section 5), then its decoding and scores: a typed pipeline.

The parts:
1. zoo.train.prepared: the trial's corpus encoded with its vocabularies (`prepare` -> `Prepared`), its model (`build`);
2. zoo.train.recipe: Adam, label-smoothed cross-entropy; zoo.train.compiled_loss: the loss as compiled
   per-chunk kernels (train.compile on); zoo.train.step: one optimizer step, as the loop, the bench and the plan take it;
3. zoo.train.checkpointing: the checkpoint's one home: the loop's `State`, a `Checkpoint`'s contents, file
   names, written atomically, listed, loaded, resumed and averaged; zoo.train.writer: the process that writes them;
4. zoo.train.device: rank, device, GPU share, compute dtype and the memory check of a trial;
5. zoo.train.loop: one trial, `train`: prepare, resume, the step loop (accumulation, data parallel), typed events;
   zoo.train.stacked: K runs that differ only in shape-keeping values trained side by side, each as alone;
6. zoo.train.evaluation: dev perplexity, decoding, scores and the attention map of the trained model;
7. zoo.train.learning: whether a run is learning: its training NLL against the unigram and uniform levels.
This door serves their public names to outsiders (`from zoo.train import train`; `zoo.fit` is `train`).
"""
from zoo._door import door

__getattr__, __dir__ = door(__name__, __file__, ["prepared", "recipe", "compiled_loss", "step", "checkpointing", "writer",
                                                "device", "loop", "stacked", "evaluation", "learning"],
                            moved={"zoo.config": "noam_lr"})
