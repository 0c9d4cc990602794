"""Model components as registries, one per kind: norm, ffn, positional, attention. A name maps to the class
that builds the module and to its cost (parameters, forward FLOPs, activations per token), so zoo.model.costs
stays exact for whatever component a spec names.

This module is the one home of the components' names (BUILT_IN below; a spec is validated against them) and
of their contract (KINDS: what a kind's constructor takes; the Protocols: what the encoder, the decoder and
the report call on one). It imports neither torch nor the config, so the spec language reads it on the ground
floor: a built-in names its class as "module:Class", imported when a model is built, as an entry point does.
A third-party package adds a component through the entry-point group `zoo.components`: one entry point named
KIND.NAME pointing at the class, which carries its cost as a static method `cost` (see docs/components.md):

    [project.entry-points."zoo.components"]
    "norm.scalenorm" = "zoo_scalenorm:ScaleNorm"

It is imported on its first lookup, and a spec names it as it names a built-in (`model.norm: scalenorm`).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from zoo.errors import UserError
from zoo.paths import name_problem
from zoo.text import did_you_mean

if TYPE_CHECKING:
    from torch import Tensor

    from zoo.config import ModelSpec

__all__ = ["AttentionModule", "BUILT_IN", "CONTRACTS", "Cost", "FIELDS", "GATED_FFN", "KINDS", "PositionsModule",
           "component_entry_points", "component_names", "component_package", "component_problem", "third_party"]

# A kind's constructor parameters, in order; the model passes them positionally, read from the spec, and a
# cost function takes the same ones.
KINDS = {"norm": ("d_model",), "ffn": ("d_model", "d_ff", "dropout"), "positional": ("d_model", "max_len", "h", "d_k"),
         "attention": ("d_model", "h", "d_k", "d_v", "dropout", "h_kv")}
FIELDS = {"norm": "norm", "ffn": "ffn", "positional": "positional_encoding", "attention": "attention"}  # in ModelSpec
ENTRY_POINT_GROUP = "zoo.components"


class NormModule(Protocol):
    def forward(self, x: Tensor) -> Tensor: ...  # (..., d_model) -> (..., d_model)


class FFNModule(Protocol):
    def forward(self, x: Tensor) -> Tensor: ...  # (..., d_model) -> (..., d_model)


class PositionsModule(Protocol):
    """Where positions act, as three hooks (zoo.model.transformer.Positions has none of them)."""
    def embed(self, start: int, T: int) -> Tensor | None: ...  # (T, d_model) added to the scaled embeddings
    def rotate(self, x: Tensor, start: int) -> Tensor: ...  # self-attention's queries or keys (B, heads, T, d_k)
    def bias(self, start: int, T: int, S: int, causal: bool) -> Tensor | None: ...  # (h, T, S) on the scores


class AttentionModule(Protocol):
    """What the encoder, the decoder (incremental, with a cache) and the report's heat maps call."""
    def forward(self, x_q: Tensor, x_kv: Tensor | None = None, mask: Tensor | None = None, causal: bool = False,
                kv: tuple[Tensor, Tensor] | None = None, cache: dict | None = None, pos: PositionsModule | None = None,
                start: int = 0) -> Tensor: ...
    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]: ...  # the cross-attention's K, V, once per source
    def weights(self, x: Tensor, mask: Tensor, pos: PositionsModule) -> Tensor: ...  # self-attention's softmax (B, h, S, S)


CONTRACTS = {"norm": NormModule, "ffn": FFNModule, "positional": PositionsModule, "attention": AttentionModule}


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
    factory: Any  # the class, or for zoo's own where it is defined: "module:Class" (imported when built)
    cost: Callable[..., Cost]
    package: str = ""  # "distribution version" of the third-party package that supplied it; "" for zoo's own

    def cls(self) -> Any:
        if isinstance(self.factory, str):
            module, _, name = self.factory.partition(":")
            return getattr(importlib.import_module(module), name)
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
    if (kind, name) in _CONFLICTS:
        raise UserError(_CONFLICTS[(kind, name)])
    try:
        cls = ep.load()
    except (Exception, SystemExit) as e:  # the package's own import failed (or called sys.exit): say whose
        raise UserError(f"{kind} component '{name}': importing {ep.value} ({_whose(ep)}) failed: "
                        f"{type(e).__name__}: {e}") from None
    want = f"{getattr(cls, '__name__', ep.value)}({', '.join(KINDS[kind])})"
    try:
        inspect.signature(cls).bind(*KINDS[kind])
    except (TypeError, ValueError):
        raise UserError(f"{kind} component '{name}' ({ep.value}) must be built as {want}") from None
    if not callable(getattr(cls, "cost", None)):
        raise UserError(f"{kind} component '{name}' ({ep.value}) declares no cost: give {want} a static method "
                        f"cost({', '.join(KINDS[kind])}) -> zoo.model.Cost")
    missing = [m for m in _methods(CONTRACTS[kind]) if not callable(getattr(cls, m, None))]
    if missing:
        raise UserError(f"{kind} component '{name}' ({ep.value}) lacks {', '.join(missing)}: a {kind} component "
                        f"provides {', '.join(_methods(CONTRACTS[kind]))} (zoo.model.components.{CONTRACTS[kind].__name__})")
    return register(kind, name, cls, _checked_cost(kind, name, ep, cls.cost), component_package(kind, name) or ep.value)


def _checked_cost(kind: str, name: str, ep: Any, cost: Callable[..., Cost]) -> Callable[..., Cost]:
    """A package's cost function, held to its contract: a Cost of finite, non-negative counts, or a
    UserError naming the component and its entry point (a None or NaN would print as a cost, or a traceback)."""
    def checked(*args) -> Cost:
        what = f"{kind} component '{name}' ({ep.value}, {_whose(ep)}): cost({', '.join(map(repr, args))})"
        try:
            got = cost(*args)
        except Exception as e:
            raise UserError(f"{what} raised {type(e).__name__}: {e}") from None
        if not isinstance(got, Cost):
            raise UserError(f"{what} returned {type(got).__name__} {got!r:.80}, not a zoo.model.Cost")
        bad = {f: v for f, v in vars(got).items()
               if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0}
        if bad:
            raise UserError(f"{what} returned {', '.join(f'{f}={v!r:.40}' for f, v in bad.items())}: each count "
                            "is a finite number, 0 or more")
        return got
    return checked


def _whose(ep: Any) -> str:
    """The distribution an entry point comes from, as its metadata names it."""
    return f"package {ep.dist.name} {ep.dist.version}" if getattr(ep, "dist", None) else "an unnamed package"


def arguments(m: ModelSpec, kind: str) -> tuple:
    """What the model passes a component of this kind, in KINDS' order."""
    return {"norm": (m.d_model,), "ffn": (m.d_model, m.d_ff, m.ff_dropout),
            "positional": (m.d_model, m.max_len, m.h, m.d_k),
            "attention": (m.d_model, m.h, m.d_k, m.d_v, m.attention_dropout, m.kv_heads)}[kind]


def _methods(contract: type) -> list[str]:
    return [n for n, v in vars(contract).items() if callable(v) and not n.startswith("_")]


def named(m: ModelSpec, kind: str) -> Component:
    """The component the spec names for this kind."""
    return lookup(kind, getattr(m, FIELDS[kind]))


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


# The one list of zoo's components: kind -> name -> (its class, where it is defined, as "module:Class"; its
# cost). Nothing else lists them: the model builds each through this list. The first of each kind is the paper's.
_T = "zoo.model.transformer:"
BUILT_IN: dict[str, dict[str, tuple[str, Callable[..., Cost]]]] = {
    "norm": {"layernorm": ("torch.nn:LayerNorm", _norm(2)), "rmsnorm": ("torch.nn:RMSNorm", _norm(1))},
    "ffn": {"relu": (_T + "FeedForward", _ffn), "gelu": (_T + "GeluFeedForward", _ffn),
            "swiglu": (_T + "SwiGLU", _gated_ffn), "geglu": (_T + "GEGLU", _gated_ffn)},
    "positional": {"sinusoidal": (_T + "SinusoidalPositions", _positions(False)),
                   "learned": (_T + "LearnedPositions", _positions(True)),
                   "rope": (_T + "RotaryPositions", _positions(False)), "alibi": (_T + "ALiBi", _positions(False)),
                   "none": (_T + "Positions", _positions(False))},
    "attention": {"multihead": (_T + "MultiHeadAttention", _attention)},
}
GATED_FFN = tuple(n for n, (_, c) in BUILT_IN["ffn"].items() if c is _gated_ffn)  # 3 matrices of d_model x d_ff, not 2
for _kind, _names in BUILT_IN.items():
    for _name, (_class, _cost) in _names.items():
        register(_kind, _name, _class, _cost)


# -- installed packages' components: their names, read from metadata (nothing imported) ----------------

_CONFLICTS: dict[tuple[str, str], str] = {}  # (kind, name) -> why no package may have it (two claim it)


@functools.cache
def component_entry_points() -> dict[tuple[str, str], Any]:
    """The installed third-party components: (kind, name) -> its importlib.metadata entry point. A name two
    packages give is theirs to settle (neither wins silently: naming it is an error saying whose); a name that
    is not 1-64 plain characters is left out with a warning (it goes into the config and its hash)."""
    from importlib.metadata import entry_points
    out: dict[tuple[str, str], Any] = {}
    _CONFLICTS.clear()
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        kind, _, name = ep.name.partition(".")
        if kind not in BUILT_IN or not name or name in BUILT_IN[kind]:  # a built-in's name stays zoo's
            continue
        if problem := name_problem(name):
            logging.getLogger(__name__).warning(f"entry point '{ep.name}' = {ep.value} ({_whose(ep)}) in "
                                                f"{ENTRY_POINT_GROUP} is left out: the name {problem}")
            continue
        if (kind, name) in out and out[(kind, name)].value != ep.value:
            first = out[(kind, name)]
            _CONFLICTS[(kind, name)] = (f"{kind} component '{name}' is given by two packages: {first.value} "
                                        f"({_whose(first)}) and {ep.value} ({_whose(ep)}); uninstall one, or have "
                                        "one rename its entry point")
        out.setdefault((kind, name), ep)
    return out


def component_problem(kind: str, name: str) -> str | None:
    """Why an installed component of this name cannot be used (two packages give it), or None."""
    component_entry_points()
    return _CONFLICTS.get((kind, name))


def component_names(kind: str) -> list[str]:
    """The names a spec may give a component of this kind: zoo's built-ins, then installed packages'."""
    return [*BUILT_IN[kind], *sorted(n for k, n in component_entry_points() if k == kind)]


def component_package(kind: str, name: str) -> str | None:
    """'distribution version' of the package that supplies a third-party component (None: zoo's own)."""
    ep = component_entry_points().get((kind, name))
    return None if ep is None else f"{ep.dist.name} {ep.dist.version}" if ep.dist else ep.value
