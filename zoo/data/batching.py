"""Batching as in the paper, section 5.1: pairs grouped by approximate length, each batch holding
about `batch_tokens` source and `batch_tokens` target tokens (`encode_pairs`, `make_batches`, `shard`,
`collate`), from numpy length arrays.
"""
from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from zoo.tokens import BOS, EOS, PAD
from zoo.data.encoded import EncodedCorpus

if TYPE_CHECKING:  # torch is imported where tensors are made: `zoo data list` stays quick
    import torch

__all__ = ["Batch", "BatchOrder", "PairsIds", "collate", "encode_pairs", "make_batches", "pair_lengths", "shard",
           "to_device"]

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- batching
def encode_pairs(sp, pairs: list[tuple[str, str]], max_len: int | None = None, tgt_vocab=None
                 ) -> list[tuple[list[int], list[int]]]:
    """Token ids of each pair, as lists (the small dev split; the training split is an
    `EncodedCorpus`). No bos/eos: `collate` adds them. Pairs with more than `max_len` ids on either
    side are dropped and the count logged (len(pairs) - len(result) is the count).
    tgt_vocab: the target side's own vocabulary (`encode(text) -> ids`), else sp encodes both."""
    threads = os.cpu_count() or 1
    src = sp.encode([s for s, _ in pairs], out_type=int, num_threads=threads)
    tgt = [tgt_vocab.encode(t) for _, t in pairs] if tgt_vocab is not None else \
        sp.encode([t for _, t in pairs], out_type=int, num_threads=threads)
    out = [(x, y) for x, y in zip(src, tgt)
           if max_len is None or (len(x) <= max_len and len(y) <= max_len)]
    if len(out) < len(pairs):
        log.info("dropped %d of %d pairs longer than %s tokens", len(pairs) - len(out),
                 len(pairs), max_len)
    return out


PairsIds = EncodedCorpus | Sequence[tuple[Sequence[int], Sequence[int]]]


def pair_lengths(pairs_ids: PairsIds) -> np.ndarray:
    """(pairs, 2) int32: the tokens each pair occupies in a batch, source + eos and target + eos
    (= loss positions). An EncodedCorpus holds them already; lists of ids are counted."""
    if isinstance(pairs_ids, EncodedCorpus):
        return pairs_ids.lengths
    return np.array([(len(x) + 1, len(y) + 1) for x, y in pairs_ids], np.int32).reshape(-1, 2)


def make_batches(lengths: np.ndarray, batch_tokens: int, seed: int, epoch: int,
                 pool_batches: int = 100) -> list[np.ndarray]:
    """Indices grouped into batches of about `batch_tokens` source and `batch_tokens` target tokens.

    Pairs are shuffled, cut into pools of about `pool_batches` batches, sorted by length inside a
    pool (so pairs of similar length share a batch and padding stays low) and cut greedily: a batch
    closes when the next pair would push either side past the budget; a pair longer than the
    budget forms a batch of its own. Batch order is shuffled; all of it is a function of
    (seed, epoch) only. `lengths` is `pair_lengths`'s (pairs, 2) array (a list of pairs works too).
    Each batch is an int64 array, a view into one array of the epoch's order: 8 bytes a pair."""
    lengths = np.asarray(lengths).reshape(-1, 2)
    rng = np.random.default_rng([seed, epoch])  # a stable function of (seed, epoch), in any process
    order = rng.permutation(len(lengths))
    mean = float(lengths.max(1).mean()) if len(lengths) else 1.0
    pool = max(1, int(pool_batches * batch_tokens / max(mean, 1)))
    batches: list[np.ndarray] = []
    for start in range(0, len(order), pool):
        part = order[start:start + pool]  # a view: sorted in place
        s, t = lengths[part, 0].astype(np.int64), lengths[part, 1].astype(np.int64)
        # Sorting by the longer side (then the sum) keeps both sides' padding low; on Multi30k at
        # 25k tokens it pads about half as much as sorting by target length alone. lexsort is
        # stable (ties keep the shuffled order) and its last key sorts first.
        by = np.lexsort((s + t, np.maximum(s, t)))
        part[:] = part[by]
        batches += _cut(part, s[by], t[by], batch_tokens)
    return [batches[i] for i in rng.permutation(len(batches))]


class BatchOrder:
    """A run's batches in its order, one whole batch a step: make_batches of its seed and each epoch in turn;
    `epoch` and `cursor` say where it stands after the batch last taken (as a checkpoint keeps them)."""

    def __init__(self, lengths: np.ndarray, batch_tokens: int, seed: int, epoch: int = 0, cursor: int = 0):
        self.lengths, self.batch_tokens, self.seed = lengths, batch_tokens, seed
        self.epoch, self.cursor = epoch, cursor
        self.batches = make_batches(lengths, batch_tokens, seed, epoch)

    def next(self) -> np.ndarray:
        if self.cursor >= len(self.batches):  # the epoch is done: the next one's order
            self.epoch, self.cursor = self.epoch + 1, 0
            self.batches = make_batches(self.lengths, self.batch_tokens, self.seed, self.epoch)
        self.cursor += 1
        return self.batches[self.cursor - 1]


def _cut(part: np.ndarray, s: np.ndarray, t: np.ndarray, budget: int) -> list[np.ndarray]:
    """The greedy cut of a sorted pool, a batch at a time: each batch runs from its first pair as far
    as both sides' running sums stay within the budget (binary search), and holds at least one pair."""
    cs, ct = np.concatenate(([0], np.cumsum(s))), np.concatenate(([0], np.cumsum(t)))
    out, k = [], 0
    while k < len(part):
        end = min(np.searchsorted(cs, cs[k] + budget, "right"), np.searchsorted(ct, ct[k] + budget, "right"))
        end = max(int(end) - 1, k + 1)
        out.append(part[k:end])
        k = end
    return out


def shard(batch: np.ndarray, lengths: np.ndarray, n: int) -> list[np.ndarray]:
    """Split one optimizer-step batch into n contiguous parts of nearly equal target tokens
    (for gradient accumulation or data-parallel workers). Contiguous parts of a length-sorted
    batch keep padding low. Always n parts; some are empty only when len(batch) < n."""
    batch = np.asarray(batch, dtype=np.int64)
    t = np.asarray(lengths)[batch, 1].tolist() if len(batch) else []
    total = sum(t)
    sizes = [0] * n
    k, cum = 0, 0
    for pos, x in enumerate(t):
        if sizes[k] and k < n - 1:
            target = total * (k + 1) / n
            # move on when this pair fits the next part better, or later parts would go empty
            if abs(cum + x - target) > abs(cum - target) or len(t) - pos <= n - 1 - k:
                k += 1
        sizes[k] += 1
        cum += x
    cuts = np.cumsum([0] + sizes)
    return [batch[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def to_device(t, device, into=None):
    """A host tensor on `device` (or copied into the device tensor `into`): to a GPU from pinned memory and without
    blocking, so the host goes on (a copy from pageable memory synchronizes the stream: the host would wait for
    every kernel queued before it, and the GPU then for the host)."""
    import torch
    cuda = torch.device(device).type == "cuda"
    src = t.pin_memory() if cuda and not t.is_pinned() else t
    return src.to(device, non_blocking=cuda) if into is None else into.copy_(src, non_blocking=cuda)


@dataclass
class Batch:
    src: torch.Tensor  # (B, S) source ids + eos, padded
    tgt_in: torch.Tensor  # (B, T) bos + target ids, padded (decoder input)
    tgt_out: torch.Tensor  # (B, T) target ids + eos, padded (labels)
    n_src_tokens: int  # non-pad source positions
    n_tgt_tokens: int  # non-pad target positions = tokens the loss is summed over
    padding_fraction: float  # pad / all positions, source and target together
    indices: list[int] = field(default_factory=list)
    src_seg: torch.Tensor | None = None  # packed (zoo.data.packing): (B, S) each token's sentence, 1.. a row; 0 pad
    tgt_seg: torch.Tensor | None = None  # (B, T), the same numbering: target k is source k's

    def to(self, device) -> "Batch":
        """On device; to a GPU from pinned memory (see pinned), so the copy does not wait for the host."""
        return self._map(lambda t: to_device(t, device))

    def pinned(self) -> "Batch":
        """In page-locked host memory, ready for an asynchronous copy to a GPU (training pins batches
        ahead on its loader thread, so `to` has nothing left to pin)."""
        return self._map(lambda t: t.pin_memory())

    def _map(self, f) -> "Batch":
        seg = [None if t is None else f(t) for t in (self.src_seg, self.tgt_seg)]
        return Batch(f(self.src), f(self.tgt_in), f(self.tgt_out),
                     self.n_src_tokens, self.n_tgt_tokens, self.padding_fraction, self.indices, *seg)


def _flat(seqs: list) -> tuple[np.ndarray, np.ndarray]:
    """(ids one sequence after another, ids per sequence) of a list of id lists."""
    lens = np.fromiter(map(len, seqs), np.int64, len(seqs))
    return np.fromiter(itertools.chain.from_iterable(seqs), np.int64, int(lens.sum())), lens


def _padded(flat: np.ndarray, lens: np.ndarray, width: int, first: int, pad: int) -> np.ndarray:
    """A (rows, width) array of pad with row r's ids at columns first .. first + lens[r] - 1."""
    out = np.full((len(lens), width), pad, np.int64)
    cols = np.arange(width)
    out[(cols >= first) & (cols < first + lens[:, None])] = flat  # row-major: the ids' own order
    return out


def collate(pairs_ids: PairsIds, indices, pad: int = PAD, bos: int = BOS, eos: int = EOS) -> Batch:
    """Padded tensors for the pairs at `indices`, from an EncodedCorpus or a list of id pairs."""
    import torch

    indices = np.asarray(indices, dtype=np.int64)
    if isinstance(pairs_ids, EncodedCorpus):
        (xs, xl), (ys, yl) = pairs_ids.gather(indices)
    else:
        rows = [pairs_ids[i] for i in indices.tolist()]
        (xs, xl), (ys, yl) = _flat([x for x, _ in rows]), _flat([y for _, y in rows])
    b, r = len(indices), np.arange(len(indices))
    s_len = int(xl.max()) + 1 if b else 0  # + eos
    t_len = int(yl.max()) + 1 if b else 0  # + bos (input) or eos (labels)
    src = _padded(xs, xl, s_len, 0, pad)
    src[r, xl] = eos
    tgt_in = _padded(ys, yl, t_len, 1, pad)
    tgt_in[:, :1] = bos
    tgt_out = _padded(ys, yl, t_len, 0, pad)
    tgt_out[r, yl] = eos
    n_src, n_tgt = int(xl.sum()) + b, int(yl.sum()) + b
    positions = b * (s_len + t_len)
    return Batch(torch.from_numpy(src), torch.from_numpy(tgt_in), torch.from_numpy(tgt_out), n_src, n_tgt,
                 1 - (n_src + n_tgt) / positions if positions else 0.0, indices.tolist())
