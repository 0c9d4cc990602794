"""Is the run learning? A model that has learned nothing of the source predicts each target piece about as
well as the pieces' own frequencies do: a unigram model, whose cross-entropy on the training targets is their
entropy H_1 (nats a piece). A model that predicts worse than a uniform guess over the vocabulary (ln V) is
past even that. On an H100 the paper's post-LN base under a 240-step warm-up sat at the unigram level for
1,200 steps and scored BLEU 0.00, and nothing said so; this check says so.

After warm-up (2 x train.schedule.warmup_steps: the peak rate and as many steps again), at each log point,
a training NLL above ln V stops the run with `NotLearningError`: exit 2 in `zoo train`, a failed trial whose
error says why in `zoo run`; so does one not below CLEARLY x H_1 once the run has had UNIGRAM_STEPS steps to
get there (a seconds-long smoke run is still at the unigram level after its 30: it learns the frequencies
first). `train.stop_if_not_learning: false` lets a run go on.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from zoo.config import Config
from zoo.errors import UserError
from zoo.tokens import EOS

__all__ = ["Levels", "NotLearningError", "check_from", "levels"]

# "clearly below" the unigram level: at least 2% fewer nats a piece than the frequencies alone. A collapsed run sits
# at or above it (the H100's base: 7.75 against 7.50 after 1,200 steps); a slow learner is under it and falling
# (the smoke profile's one-layer model lengthened to 400 steps: 5.0 at step 220 against 5.62; 10% was too close)
CLEARLY = 0.98
MIN_STEPS = 20  # judged no sooner: a few log intervals even for a seconds-long run
# an untrained model scores about ln V + 0.5 (its random logits): a slow learner (a tiny learning rate) may still
# be above ln V after warm-up, a diverged one is far above it (the smoke base at lr_scale 30: 78 against 6.91)
ABOVE = 1.0
UNIGRAM_STEPS = 200  # held to the unigram level no sooner (the cpu profile's runs are far below it by then)


class NotLearningError(UserError):
    """A run whose training NLL stays at the unigram level (or above the uniform one) after warm-up."""


@dataclass(frozen=True)
class Levels:
    """The two baselines a training NLL is held against, in nats per target piece (end of sentence included)."""
    unigram: float  # H_1: the target pieces' entropy on the training split
    uniform: float  # ln V: a uniform guess over the target vocabulary

    def problem(self, nll: float, step: int) -> str | None:
        """What is wrong with a training NLL at `step`, after warm-up, in words; None when it is learning."""
        if nll > self.uniform + ABOVE:
            return (f"above the uniform level ({self.uniform:.2f}, ln V: every piece equally likely) by more than "
                    f"{ABOVE:g} nat, worse than an untrained model")
        if step >= UNIGRAM_STEPS and nll >= CLEARLY * self.unigram:
            return (f"not clearly below the unigram level ({self.unigram:.2f}: the target pieces' own frequencies, "
                    f"with nothing learned of the source; clearly below means under {CLEARLY * self.unigram:.2f})")
        return None


def levels(train, vocab_size: int) -> Levels:
    """The baselines of a training split (an EncodedCorpus, or (source, target) id pairs) over its target
    vocabulary: a count of its target ids, one end of sentence a pair besides."""
    ids = train.tgt_ids if hasattr(train, "tgt_ids") else np.concatenate([np.asarray(t) for _, t in train] or [[]])
    counts = np.bincount(np.asarray(ids, dtype=np.int64), minlength=vocab_size).astype(np.float64)
    counts[EOS] += len(train)  # the end of sentence closes every target: the model predicts it too
    p = counts[counts > 0] / counts.sum()
    return Levels(unigram=float(-(p * np.log(p)).sum()), uniform=math.log(vocab_size))


def check_from(cfg: Config) -> int | None:
    """The first step the check judges (None: it never does, as asked or as the run is too short)."""
    if not cfg.train.stop_if_not_learning:
        return None
    first = max(2 * cfg.train.schedule.warmup_steps, MIN_STEPS)
    return first if first <= cfg.train.steps else None


def stop(cfg: Config, step: int, nll: float, lv: Levels, lr: float) -> NotLearningError:
    """The one paragraph a run that is not learning stops with."""
    s = cfg.train.schedule
    peak = s.lr(min(s.warmup_steps, cfg.train.steps), cfg.model.d_model, cfg.train.steps)
    times = s.times_paper(cfg.model.d_model, cfg.train.steps)
    return NotLearningError(
        f"not learning: at step {step} of {cfg.train.steps} (warm-up {s.warmup_steps} steps) the training NLL is "
        f"{nll:.2f} nats a target piece, {lv.problem(nll, step)}. Likely causes: a learning rate too high for the model "
        f"(peak {peak:.2g} at step {min(s.warmup_steps, cfg.train.steps)}, {times:.2g}x the paper's rate at the same "
        f"step; now {lr:.2g}), above all a post-LN model (norm_position: {cfg.model.norm_position}) with a short "
        f"warm-up, which it needs (Xiong et al. 2020). Try train.schedule.warmup_steps=4000 (the paper's) or a lower "
        "train.schedule.lr_scale, or model.norm_position=pre; `zoo show` prints the schedule against the paper's. "
        "To go on anyway: --set train.stop_if_not_learning=false.")
