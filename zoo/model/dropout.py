"""Dropout masks as a function of (key, call site, element): counter-based, drawn with integer ops, no generator.

Why: seeds trained side by side (zoo.train.stacked, one vmapped forward for K models) must each draw exactly
the masks they would draw alone. A generator's masks depend on what was drawn before and on the tensor's
shape; these depend only on the run's key (its seed, rank, step and micro-batch: `dropout_key`), the call's place in
the forward (the n-th dropout of the forward) and the element's coordinates (b, t, i). So a seed's batch
padded to a common shape draws, at its real positions, the masks of the unpadded batch; and a vmapped key
(one per seed) draws each seed's own, in one pass for all K.

The hash is a 32-bit integer hash (_mix), chained over the coordinates, 16 bits a mask element (2 elements a hash), kept
when >= p * 2^16: p is rounded to a multiple of 2^-16 as zoo.model.transformer's CPU masks always were, and
the scale is 1 / the exact keep probability (unbiased). Training turns it on around each micro-batch's
forward (`drawing`); without it (evaluation, a compiled step) the modules' own dropout runs.
"""
from __future__ import annotations

import functools
from contextlib import contextmanager

import torch

__all__ = ["Draws", "active_draws", "counter_dropout", "drawing", "dropout_key"]

_GOLDEN = 0x9E3779B9 - 2 ** 32  # an int32 constant as torch holds it (two's complement)


@functools.cache
def _constants(device: torch.device) -> tuple[torch.Tensor, ...]:
    """The hash's constants as 0-dim int32 tensors: with a Python int, torch's integer ops take a slow path
    (a promotion per call: 5-10x slower on this CPU)."""
    return tuple(torch.tensor(v, dtype=torch.int32, device=device) for v in (16, 0xFFFF, 0x45D9F3B))


def _mix(z: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """A 32-bit integer hash (x ^= x >> 16; x *= 0x45d9f3b, twice, then x ^= x >> 16) on int32: wrapping
    products, and >> masked to a logical shift (torch's is arithmetic). `inplace`: z is a fresh tensor of the
    caller's, overwritten (a mask's hash: no temporaries but one)."""
    sixteen, low, m = _constants(z.device)
    z = z if inplace else z.clone()
    for _ in range(2):
        z ^= (z >> sixteen) & low
        z *= m
    z ^= (z >> sixteen) & low
    return z


def _wrap(v: int) -> int:
    """A Python int as the int32 it wraps to."""
    return (v + 2 ** 31) % 2 ** 32 - 2 ** 31


def dropout_key(seed: int | list[int], step: int | list[int], micro: int = 0, rank: int = 0,
                device=None) -> torch.Tensor:
    """The 0-dim int32 key of one micro-batch's forward: a function of the run's seed, its rank (data-parallel
    workers draw their own), the optimizer step and the micro-batch within it. With a list of seeds and one of
    steps (zoo.train.stacked: K seeds side by side), the (K,) keys of all of them at once, each the key its seed
    gets alone (the hash is elementwise)."""
    part = lambda v: _wrap(v) if isinstance(v, int) else torch.tensor([_wrap(x) for x in v], dtype=torch.int32)
    z = torch.zeros(() if isinstance(seed, int) else len(seed), dtype=torch.int32)
    for v in (seed, rank, step, micro):
        z = _mix(z + part(v))
    return z.to(device)


@functools.cache
def _strides(size: int, device: torch.device) -> torch.Tensor:
    """0, G, 2G, ... (size terms, int32, wrapping): a coordinate's step in the hash, made once per size (a
    forward asks for the same few sizes at every call site)."""
    return torch.arange(size, dtype=torch.int32, device=device) * _GOLDEN


@functools.cache
def _cut(cut: int, device: torch.device) -> torch.Tensor:
    return torch.tensor(cut - 32768, dtype=torch.int16, device=device)  # a 16-bit lane, signed


class Draws:
    """One forward's masks: each call is the next call site (the n-th dropout of the forward)."""

    def __init__(self, k: torch.Tensor, p_drop: torch.Tensor | None = None):
        # p_drop: this forward's P_drop (model.dropout) as a 0-dim tensor, in place of the modules' own: seeds
        # stacked side by side whose rows differ in it (zoo.train.stacked), one per seed under vmap
        self.k, self.site, self.p_drop = k, 0, p_drop

    def keep(self, like: torch.Tensor, p: float | torch.Tensor) -> tuple[torch.Tensor, float | torch.Tensor]:
        """A keep mask shaped like `like` (its last 3 dims at most are coordinates: (batch, position, feature))
        and 1 / its keep probability (a 0-dim tensor where p is one)."""
        self.site += 1
        cut = torch.round(p * 65536).to(torch.int32) if isinstance(p, torch.Tensor) else round(p * 65536)
        *lead, n = like.shape
        dev = like.device
        # a hash chained over the coordinates: the site, then each leading dim (small tensors: (B, 1), (B, T)),
        # then the features, two to a 32-bit hash (the only full-size pass)
        z = _mix(self.k + _wrap(self.site * _GOLDEN), inplace=True)  # each sum a fresh tensor: hashed in place
        for size in lead:
            z = _mix(z[..., None] + _strides(size, dev), inplace=True)
        z = z[..., None] + _strides((n + 1) // 2, dev)
        lane = (cut - 32768).to(torch.int16) if isinstance(cut, torch.Tensor) else _cut(cut, dev)
        keep = _mix(z, inplace=True).view(torch.int16)[..., :n] >= lane  # 16 bits a feature, signed
        return keep, 65536 / (65536 - cut)

    def drop(self, x: torch.Tensor, p: float) -> torch.Tensor:
        keep, scale = self.keep(x, p)
        return x * keep * scale


_current: list[Draws] = []


def active_draws() -> Draws | None:
    """The forward's counter-based draws when training turned them on, else None (the module's own dropout)."""
    return _current[-1] if _current else None


def counter_dropout(module: torch.nn.Dropout, x: torch.Tensor, p_drop: bool = False) -> torch.Tensor:
    """module(x), with the forward's counter-based masks when training turned them on. p_drop: the module is one
    of model.dropout's (P_drop), which a stack's draws may set per seed."""
    d = active_draws()
    if d is not None and module.training and p_drop and d.p_drop is not None:
        return d.drop(x, d.p_drop)
    if d is None or not module.training or not 0 < module.p < 1:
        return module(x)
    return d.drop(x, module.p)


@contextmanager
def drawing(k: torch.Tensor | None, p_drop: torch.Tensor | None = None):
    """Counter-based dropout for the forwards inside (k: `dropout_key`'s; None leaves the modules' own dropout);
    p_drop: model.dropout's P_drop for them, in place of the modules' (see Draws)."""
    if k is None:
        yield
        return
    _current.append(Draws(k, p_drop))
    try:
        yield
    finally:
        _current.pop()
