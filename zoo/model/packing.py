"""Several sentences a row (train.pack): the masks and positions that keep them apart.

A packed row holds sentences one after another, each numbered by a segment id (1, 2, ... in the row; 0 on
padding; zoo.data.packing makes them). Attention that shares a row must not cross sentences: encoder
self-attention is block-diagonal, decoder self-attention block-diagonal and causal within each block, and
encoder-decoder attention lets target sentence k see only source sentence k. Positions restart at 0 with each
sentence. Then every sentence's states, logits and loss are the ones it has alone in a row of its own.

A padding query (segment 0) may attend wherever it likes, so that no row of a mask is empty (an empty row
would give NaN, which reaches the gradients through 0 x NaN); its outputs feed nothing but other padding.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Packed", "positions", "why_not_packed"]


def positions(seg: torch.Tensor, max_len: int) -> torch.Tensor:
    """(B, L) each token's place in its own sentence (0 at each segment's first token); padding's clamped
    below max_len (it is never attended to by a sentence's token)."""
    idx = torch.arange(seg.size(1), device=seg.device).expand_as(seg)
    new = torch.ones_like(seg, dtype=torch.bool)
    new[:, 1:] = seg[:, 1:] != seg[:, :-1]  # a segment starts here
    first = torch.where(new, idx, 0).cummax(1).values
    return (idx - first).clamp(max=max_len - 1)


def _may_attend(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """(B, 1, Tq, Tk) True where query segment q may see key segment k: the same sentence, or a padding query."""
    return ((q[:, :, None] == k[:, None, :]) | (q == 0)[:, :, None])[:, None]


def why_not_packed(model) -> str | None:
    """Why `model` (a zoo Transformer) cannot take packed batches, or None: rotary and ALiBi positions act inside
    attention at the row's positions, and the word pointer reorders the memory."""
    from zoo.model.transformer import Positions  # the model's module imports this one
    pos = model.pos_embed
    if type(pos).rotate is not Positions.rotate or type(pos).bias is not Positions.bias or model.w_pointer is not None:
        return (f"packing needs positions added to the embeddings and no word pointer; this model has "
                f"{type(pos).__name__}{' and a word pointer' if model.w_pointer is not None else ''}")
    return None


@dataclass
class Packed:
    """A packed batch's attention masks (True = may attend) and positions, as the model's layers take them."""
    enc_mask: torch.Tensor  # (B, 1, S, S)
    dec_mask: torch.Tensor  # (B, 1, T, T), causal
    cross_mask: torch.Tensor  # (B, 1, T, S)
    src_pos: torch.Tensor  # (B, S)
    tgt_pos: torch.Tensor  # (B, T)

    @classmethod
    def of(cls, src_seg: torch.Tensor, tgt_seg: torch.Tensor, model) -> "Packed":
        """The masks and positions of segment ids (B, S) and (B, T) for `model` (a zoo Transformer). Positions
        added to the embeddings (sinusoidal, learned, none) restart per sentence; rotary and ALiBi act inside
        attention at the row's positions and the word pointer reorders the memory: those models do not pack."""
        if why := why_not_packed(model):
            raise ValueError(why)
        T = tgt_seg.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt_seg.device).tril()
        L = model.spec.max_len
        return cls(_may_attend(src_seg, src_seg), _may_attend(tgt_seg, tgt_seg) & causal,
                   _may_attend(tgt_seg, src_seg), positions(src_seg, L), positions(tgt_seg, L))
