"""Model components as registries, one per kind: norm, ffn, positional, attention. A name maps to the class
that builds the module and to its cost (parameters, forward FLOPs, activations per token), so zoo.costs stays
exact for whatever component a spec names.

A kind declares its constructor's parameters (KINDS); the model passes them positionally, read from the spec:
    norm        Norm(d_model)                                   (..., d_model) -> (..., d_model)
    ffn         FFN(d_model, d_ff, dropout)                     (..., d_model) -> (..., d_model)
    positional  Positions(d_model, max_len, h, d_k)             zoo.model.Positions' hooks: embed, rotate, bias
    attention   Attention(d_model, h, d_k, d_v, dropout, h_kv)  zoo.model.MultiHeadAttention's forward, project_kv
and its cost function takes the same arguments and returns a `Cost`.

zoo's built-ins register below by class path, imported on their first build, so counting costs and
validating a spec import no torch. A third-party package adds a component through the entry-point group
`zoo.components`: one entry point named KIND.NAME pointing at the class, which carries its cost as a static
method `cost` (see README, "Components beyond the paper"):

    [project.entry-points."zoo.components"]
    "norm.scalenorm" = "zoo_scalenorm:ScaleNorm"

It is imported on its first lookup, and a spec names it as it names a built-in (`model.norm: scalenorm`).
"""
from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zoo.config import (COMPONENT_FIELDS, COMPONENTS, ModelSpec, component_entry_points, component_names,
                        component_package)
from zoo.errors import UserError
from zoo.text import did_you_mean

__all__ = ["Cost", "KINDS", "third_party"]  # what it lends outside its package (the door serves these)

KINDS = {"norm": ("d_model",), "ffn": ("d_model", "d_ff", "dropout"), "positional": ("d_model", "max_len", "h", "d_k"),
         "attention": ("d_model", "h", "d_k", "d_v", "dropout", "h_kv")}
assert KINDS.keys() == COMPONENTS.keys()


@dataclass(frozen=True)
class Cost:
    """One module's cost at its arguments. FLOPs count 2 per multiply-add of a matrix product and leave the
    element-wise rest out, as torch.utils.flop_counter does; activations are the floats autograd keeps."""
    params: int = 0
    flops: int = 0        # forward, per token it transforms (attention: per query, its Q and W^O projections)
    activations: int = 0  # per token
    kv_flops: int = 0     # attention: per key/value token (its K and V projections)
    pair_flops: int = 0   # attention: per (query, key) pair (Q K^T and the weights times V)


@dataclass(frozen=True)
class Component:
    kind: str
    name: str
    factory: Any  # the class, or "module:attr", imported on first use
    cost: Callable[..., Cost]
    package: str = ""  # "distribution version" of the third-party package that supplied it; "" for zoo's own

    def cls(self) -> Any:
        if isinstance(self.factory, str):
            module, _, attr = self.factory.partition(":")
            return getattr(importlib.import_module(module), attr)
        return self.factory


_REGISTRY: dict[tuple[str, str], Component] = {}


def register(kind: str, name: str, factory: Any, cost: Callable[..., Cost], package: str = "") -> Component:
    _REGISTRY[(kind, name)] = c = Component(kind, name, factory, cost, package)
    return c


def lookup(kind: str, name: str) -> Component:
    """The component of this kind named `name`: a built-in, or an installed package's (imported now, once)."""
    if (kind, name) in _REGISTRY:
        return _REGISTRY[(kind, name)]
    ep = component_entry_points().get((kind, name))
    if ep is None:
        raise UserError(f"no {kind} component '{name}'{did_you_mean(name, component_names(kind))} (a package adds "
                        "one through the entry-point group zoo.components)")
    try:
        cls = ep.load()
    except Exception as e:  # the package's own import failed: say whose
        raise UserError(f"{kind} component '{name}': importing {ep.value} failed: {type(e).__name__}: {e}") from e
    want = f"{getattr(cls, '__name__', ep.value)}({', '.join(KINDS[kind])})"
    try:
        inspect.signature(cls).bind(*KINDS[kind])
    except (TypeError, ValueError):
        raise UserError(f"{kind} component '{name}' ({ep.value}) must be built as {want}") from None
    if not callable(getattr(cls, "cost", None)):
        raise UserError(f"{kind} component '{name}' ({ep.value}) declares no cost: give {want} a static method "
                        f"cost({', '.join(KINDS[kind])}) -> zoo.components.Cost")
    return register(kind, name, cls, cls.cost, component_package(kind, name) or ep.value)


def arguments(m: ModelSpec, kind: str) -> tuple:
    """What the model passes a component of this kind, in KINDS' order."""
    return {"norm": (m.d_model,), "ffn": (m.d_model, m.d_ff, m.ff_dropout),
            "positional": (m.d_model, m.max_len, m.h, m.d_k),
            "attention": (m.d_model, m.h, m.d_k, m.d_v, m.attention_dropout, m.kv_heads)}[kind]


def named(m: ModelSpec, kind: str) -> Component:
    """The component the spec names for this kind."""
    return lookup(kind, getattr(m, COMPONENT_FIELDS[kind]))


def build(m: ModelSpec, kind: str) -> Any:
    """A new module of the kind the spec names (an nn.Module)."""
    return named(m, kind).cls()(*arguments(m, kind))


def cost(m: ModelSpec, kind: str) -> Cost:
    return named(m, kind).cost(*arguments(m, kind))


def third_party(m: ModelSpec) -> dict[str, str]:
    """The spec's components that packages supplied: "kind.name" -> "distribution version" (provenance)."""
    return {f"{c.kind}.{c.name}": c.package for kind in KINDS if (c := named(m, kind)).package}


# -- zoo's built-ins: their costs ------------------------------------------------------------------

def _norm(weights_per_feature: int) -> Callable[..., Cost]:
    # LayerNorm: a gain and a bias per feature; RMSNorm: a gain. It keeps its input and a statistic.
    return lambda d_model: Cost(params=weights_per_feature * d_model, activations=2 * d_model)


def _ffn(d_model: int, d_ff: int, dropout: float) -> Cost:
    # W_1, b_1, W_2, b_2; kept: hidden before and after the activation, its dropout mask; output, its dropout
    return Cost(params=2 * d_model * d_ff + d_ff + d_model, flops=4 * d_model * d_ff,
                activations=3 * d_ff + 2 * d_model)


def _gated_ffn(d_model: int, d_ff: int, dropout: float) -> Cost:
    # W, V, W_2 (no biases); kept: x W, x V, act(x W), their product, its dropout mask; output, its dropout
    return Cost(params=3 * d_model * d_ff, flops=6 * d_model * d_ff, activations=5 * d_ff + 2 * d_model)


def _positions(learned: bool) -> Callable[..., Cost]:
    # only learned positions are weights; rotations and biases are element-wise (no FLOPs counted)
    return lambda d_model, max_len, h, d_k: Cost(params=max_len * d_model if learned else 0)


def _attention(d_model: int, h: int, d_k: int, d_v: int, dropout: float, h_kv: int) -> Cost:
    return Cost(params=d_model * (h * d_k + h_kv * (d_k + d_v)) + h * d_v * d_model,
                flops=2 * d_model * h * d_k + 2 * h * d_v * d_model, kv_flops=2 * d_model * h_kv * (d_k + d_v),
                pair_flops=2 * h * (d_k + d_v),
                # Q, K, V and the concatenated heads; the fused kernel's per-head statistics (no L x L
                # scores); W^O's output and its dropout
                activations=h * d_k + h_kv * (d_k + d_v) + h * d_v + 2 * h + 2 * d_model)


for _kind, _name, _factory, _cost in [
        ("norm", "layernorm", "torch.nn:LayerNorm", _norm(2)),
        ("norm", "rmsnorm", "torch.nn:RMSNorm", _norm(1)),
        ("ffn", "relu", "zoo.model.transformer:FeedForward", _ffn),
        ("ffn", "gelu", "zoo.model.transformer:GeluFeedForward", _ffn),
        ("ffn", "swiglu", "zoo.model.transformer:SwiGLU", _gated_ffn),
        ("ffn", "geglu", "zoo.model.transformer:GEGLU", _gated_ffn),
        ("positional", "sinusoidal", "zoo.model.transformer:SinusoidalPositions", _positions(False)),
        ("positional", "learned", "zoo.model.transformer:LearnedPositions", _positions(True)),
        ("positional", "rope", "zoo.model.transformer:RotaryPositions", _positions(False)),
        ("positional", "alibi", "zoo.model.transformer:ALiBi", _positions(False)),
        ("positional", "none", "zoo.model.transformer:Positions", _positions(False)),
        ("attention", "multihead", "zoo.model.transformer:MultiHeadAttention", _attention)]:
    register(_kind, _name, _factory, _cost)
assert {k: tuple(n for kk, n in _REGISTRY if kk == k) for k in KINDS} == COMPONENTS  # config's list is this one
