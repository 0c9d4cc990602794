"""Packed batches: several short sentence pairs a row, so attention's tiles are not spent on padding.

`pack` takes one of make_batches's batches (the same pairs, the same target tokens: the step's loss and
gradient are unchanged) and lays its pairs into rows of at most `row` tokens a side (or the longest pair, if
longer), first fit in decreasing length (a pair goes into the first row where both its source and its target
still fit), each side then as wide as its fullest row. Each row's sentences are numbered 1, 2, ... (the
segment ids, 0 on padding) on both sides alike: source k and target k are one pair. zoo.model.packing turns the
ids into the masks that keep the sentences apart.

At Multi30k's ~16 pieces a sentence a 64-token row holds about four: the attention's 64 x 64 tiles then
carry four sentences' blocks, not one sentence's 16 x 16 (docs/benchmarks.md, "Packing").
"""
from __future__ import annotations

import numpy as np

from zoo.tokens import BOS, EOS, PAD
from zoo.data.batching import Batch, PairsIds, collate

__all__ = ["ROW", "pack", "rows_of"]

ROW = 64  # tokens a side of a packed row: one attention tile


def rows_of(lengths: np.ndarray, row: int) -> list[list[int]]:
    """First-fit decreasing of pairs of (source, target) `lengths` into rows of max(row, the longest) tokens a
    side: each row the positions (into lengths) of its pairs, in the order they were placed."""
    lengths = np.asarray(lengths).reshape(-1, 2)
    ws, wt = (max(row, int(lengths[:, j].max())) for j in (0, 1)) if len(lengths) else (row, row)
    rows: list[list[int]] = []
    used: list[list[int]] = []  # each row's (source, target) tokens so far
    for i in np.lexsort((lengths.sum(1), lengths.max(1)))[::-1].tolist():  # longest first
        s, t = int(lengths[i, 0]), int(lengths[i, 1])
        for r, u in enumerate(used):
            if u[0] + s <= ws and u[1] + t <= wt:
                rows[r].append(i)
                u[0], u[1] = u[0] + s, u[1] + t
                break
        else:
            rows.append([i])
            used.append([s, t])
    return rows


def pack(pairs_ids: PairsIds, indices, row: int = ROW, pad: int = PAD, bos: int = BOS, eos: int = EOS) -> Batch:
    """The pairs at `indices` (one of make_batches's batches) as a packed Batch, its src_seg and tgt_seg set."""
    import torch

    one = collate(pairs_ids, indices, pad, bos, eos)  # each pair's ids, one a row, to lay out again
    s_len = (one.src != pad).sum(1).numpy()
    t_len = (one.tgt_out != pad).sum(1).numpy()
    rows = rows_of(np.stack([s_len, t_len], 1), row)
    # as wide as the fullest row of each side, not `row`: Multi30k's 4,000-token batches pad 9.8% so, 14.7% at 64
    S, T = (max(int(x[m].sum()) for m in rows) for x in (s_len, t_len))
    src, tgt_in, tgt_out = (torch.full((len(rows), w), pad, dtype=torch.int64) for w in (S, T, T))
    src_seg, tgt_seg = torch.zeros(len(rows), S, dtype=torch.int64), torch.zeros(len(rows), T, dtype=torch.int64)
    for r, members in enumerate(rows):
        a = b = 0
        for k, i in enumerate(members, 1):
            s, t = int(s_len[i]), int(t_len[i])
            src[r, a:a + s], src_seg[r, a:a + s] = one.src[i, :s], k
            tgt_in[r, b:b + t], tgt_out[r, b:b + t], tgt_seg[r, b:b + t] = one.tgt_in[i, :t], one.tgt_out[i, :t], k
            a, b = a + s, b + t
    positions = len(rows) * (S + T)
    order = [one.indices[i] for members in rows for i in members]
    return Batch(src, tgt_in, tgt_out, one.n_src_tokens, one.n_tgt_tokens,
                 1 - (one.n_src_tokens + one.n_tgt_tokens) / positions, order, src_seg, tgt_seg)
