"""The Transformer of "Attention Is All You Need", compiled from a `model` spec section.

Section by section as the paper describes it:
  3.2  scaled dot-product attention, multi-head attention with independent h, d_k, d_v
  3.3  position-wise feed-forward network, ReLU between two linear maps d_model -> d_ff -> d_model
  3.1  post-norm residual sub-layers: LayerNorm(x + Dropout(Sublayer(x)))
  3.4  embeddings scaled by sqrt(d_model); one matrix shared by source, target and pre-softmax
  3.5  sinusoidal (or learned, Table 3 row E) positions; dropout on embedding + position sums
Projections inside attention carry no bias (as in tensor2tensor, the paper's code); the
feed-forward layers do. The decoder decodes incrementally with a key/value cache.
Beyond the paper, each component is the one the spec names (zoo.model.components: norm, ffn, positional,
attention; the paper's by default): RMSNorm, GELU and gated FFNs, rotary and ALiBi positions, grouped-query
attention (h_kv), and pre-norm residuals (norm_position).
This module imports nothing from training: it is only the network.
"""
from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import nn

from zoo.model import components, dropout, packing
from zoo.config import ModelSpec

from zoo.tokens import PAD  # the token ids have one home, on the ground floor

__all__ = ["Transformer", "MultiHeadAttention", "build_model", "count_params", "encoder_attention"]


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).
    With h_kv < h key/value heads, h / h_kv query heads share each one (grouped-query; 1: multi-query)."""

    def __init__(self, d_model: int, h: int, d_k: int, d_v: int, dropout: float = 0.0, h_kv: int | None = None):
        super().__init__()
        h_kv = h if h_kv is None else h_kv
        self.h, self.h_kv, self.d_k, self.d_v, self.dropout = h, h_kv, d_k, d_v, dropout
        self.w_q = nn.Linear(d_model, h * d_k, bias=False)
        self.w_k = nn.Linear(d_model, h_kv * d_k, bias=False)
        self.w_v = nn.Linear(d_model, h_kv * d_v, bias=False)
        self.w_o = nn.Linear(h * d_v, d_model, bias=False)

    @staticmethod
    def heads(x: torch.Tensor, n: int, d: int) -> torch.Tensor:  # (B, T, n*d) -> (B, n, T, d)
        return x.view(x.size(0), x.size(1), n, d).transpose(1, 2)

    def project_kv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # one matmul for both (the weights stay two Linear layers; concatenating them is cheap)
        k, v = F.linear(x, torch.cat([self.w_k.weight, self.w_v.weight])).split(
            [self.h_kv * self.d_k, self.h_kv * self.d_v], -1)
        return self.heads(k, self.h_kv, self.d_k), self.heads(v, self.h_kv, self.d_v)

    def weights(self, x: torch.Tensor, mask: torch.Tensor, pos: Positions) -> torch.Tensor:
        """softmax(Q K^T / sqrt(d_k)) of self-attention over x, per head: (B, h, S, S). For the report's heat
        maps (the fused SDPA kernel does not return its weights)."""
        q = pos.rotate(self.heads(self.w_q(x), self.h, self.d_k), 0)
        k = pos.rotate(self.heads(self.w_k(x), self.h_kv, self.d_k), 0).repeat_interleave(self.h // self.h_kv, 1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_k)
        bias = pos.bias(0, x.size(1), x.size(1), False)
        scores = scores if bias is None else scores + bias
        return scores.masked_fill(~mask, float("-inf")).softmax(-1)

    def forward(self, x_q, x_kv=None, mask=None, causal=False, kv=None, cache=None, pos=None, start=0):
        """x_kv: keys/values input (None = self-attention); kv: precomputed (K, V) for x_kv;
        cache: dict holding this layer's past self-attention K, V, extended in place; pos: the model's
        Positions, given to self-attention only, whose new queries and keys sit at start, start + 1, ..."""
        h, dk = self.h, self.d_k
        if x_kv is None and kv is None:  # self-attention: Q, K, V in one matmul
            w = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
            q, k, v = F.linear(x_q, w).split([h * dk, self.h_kv * dk, self.h_kv * self.d_v], -1)
            q, k, v = self.heads(q, h, dk), self.heads(k, self.h_kv, dk), self.heads(v, self.h_kv, self.d_v)
            if pos is not None:  # rotary: each query and key by its own position; a key once, before it is cached
                q, k = pos.rotate(q, start), pos.rotate(k, start)
        else:
            q = self.heads(self.w_q(x_q), h, dk)
            k, v = kv if kv is not None else self.project_kv(x_kv)
        if cache is not None:  # incremental decoding: append this step's keys and values
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        bias = None if pos is None else pos.bias(start, q.size(2), k.size(2), causal)
        if bias is not None:  # ALiBi: a float mask (h, T, S) that carries the causal and padding masks too
            mask, causal = (bias if mask is None else bias.masked_fill(~mask, float("-inf"))), False
        # softmax(Q K^T / sqrt(d_k)) V; SDPA picks the fused kernel, the scale is the paper's
        # bf16 training on a CPU keeps attention in fp32: the CPU's bf16 flash-attention backward is
        # ~5x slower than its fp32 one (a third of a cpu-profile step); the projections stay bf16.
        fp32 = q.device.type == "cpu" and torch.is_autocast_enabled("cpu")
        with torch.autocast("cpu", enabled=False) if fp32 else nullcontext():
            if fp32:
                q, k, v = q.float(), k.float(), v.float()
            if bias is not None:
                mask = mask.to(q.dtype)
            gqa = {"enable_gqa": True} if self.h_kv != h else {}  # K, V heads shared by h / h_kv query heads
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and cache is None,
                                                 dropout_p=self.dropout if self.training else 0.0, **gqa)
        out = out.transpose(1, 2).reshape(x_q.size(0), x_q.size(1), h * self.d_v)
        return self.w_o(out)


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (relu); GeluFeedForward puts GELU in place of the max."""
    act = staticmethod(F.relu)

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)  # tensor2tensor's relu_dropout; 0 in the paper's specs

    def forward(self, x):
        return self.w_2(dropout.counter_dropout(self.drop, self.act(self.w_1(x))))


class GeluFeedForward(FeedForward):
    act = staticmethod(F.gelu)


class SwiGLU(nn.Module):
    """FFN_SwiGLU(x) = (Swish(x W) * x V) W_2 without biases (Shazeer 2020): three matrices, d_ff the width
    of each of W and V; GEGLU puts GELU in place of Swish."""
    act = staticmethod(F.silu)

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff, bias=False)  # W, through the activation: the gate
        self.w_3 = nn.Linear(d_model, d_ff, bias=False)  # V
        self.w_2 = nn.Linear(d_ff, d_model, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(dropout.counter_dropout(self.drop, self.act(self.w_1(x)) * self.w_3(x)))


class GEGLU(SwiGLU):
    act = staticmethod(F.gelu)


def _keep_mask(like: torch.Tensor, p: float) -> tuple[torch.Tensor, float]:
    """A Bernoulli(1 - p) keep mask shaped like `like` and 1 / its keep probability, for CPU.

    torch's CPU dropout draws one 32-bit number per element (bernoulli_: 8 ms for a 4200 x 256
    activation on one thread, 4% of a cpu-profile step); this draws 64 random bits per 4 elements
    and compares each 16-bit lane with p * 2^16, so p is rounded to a multiple of 2^-16 (0.1 ->
    0.1000061) and the scale is 1 / the exact keep probability (unbiased)."""
    n = like.numel()
    cut = round(p * 65536)
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-2 ** 63, None)  # all 64 bits uniform
    keep = bits.view(torch.int16)[:n].view(like.shape) >= cut - 32768
    return keep, 65536 / (65536 - cut)


class Residual(nn.Module):
    """The residual connection around a sub-layer. Post-norm (the paper's): Norm(x + Dropout(Sublayer(x)));
    pre-norm: x + Dropout(Sublayer(Norm(x))). The sub-layer reads `inner(x)`; `forward` adds its output."""

    def __init__(self, d_model: int, dropout: float, norm: nn.Module | None = None, pre: bool = False):
        super().__init__()
        self.norm, self.drop, self.pre = nn.LayerNorm(d_model) if norm is None else norm, nn.Dropout(dropout), pre

    def inner(self, x):
        return self.norm(x) if self.pre else x

    def forward(self, x, sublayer_out):
        p = self.drop.p
        # x + Dropout(s) in one pass on a CPU, eagerly; compiled, dropout is fused by the compiler
        # (and _keep_mask's in-place random_ would break the graph)
        draws = dropout.active_draws()  # counter-based masks (zoo.model.dropout), when training turned them on
        if self.training and draws is not None and draws.p_drop is not None:  # a stack's P_drop, one per seed
            keep, scale = draws.keep(sublayer_out, draws.p_drop)
            y = x + sublayer_out * keep * scale
        elif self.training and 0 < p < 1 and (draws or x.device.type == "cpu" and not torch.compiler.is_compiling()):
            keep, scale = draws.keep(sublayer_out, p) if draws else _keep_mask(sublayer_out, p)
            y = torch.addcmul(x, sublayer_out, keep, value=scale)
        else:
            y = x + self.drop(sublayer_out)
        # under autocast a norm computes and returns fp32: a bf16 stream (model.residual_stream) takes it back in bf16
        return y if self.pre else self.norm(y).to(y.dtype)


def residual(m: ModelSpec) -> Residual:
    return Residual(m.d_model, m.dropout, components.build(m, "norm"), m.norm_position == "pre")


class EncoderLayer(nn.Module):
    def __init__(self, m: ModelSpec):
        super().__init__()
        self.self_attn = components.build(m, "attention")
        self.ffn = components.build(m, "ffn")
        self.res1, self.res2 = residual(m), residual(m)

    def forward(self, x, src_mask, pos=None):
        x = self.res1(x, self.self_attn(self.res1.inner(x), mask=src_mask, pos=pos))
        return self.res2(x, self.ffn(self.res2.inner(x)))


class DecoderLayer(nn.Module):
    def __init__(self, m: ModelSpec):
        super().__init__()
        self.self_attn = components.build(m, "attention")
        self.cross_attn = components.build(m, "attention")
        self.ffn = components.build(m, "ffn")
        self.res1, self.res2, self.res3 = (residual(m) for _ in range(3))

    def forward(self, y, memory, src_mask, cache=None, pos=None, start=0, self_mask=None):
        # masked self-attention: position i sees positions <= i (causal; the cache holds the past);
        # self_mask: a packed row's own (causal within each sentence, zoo.model.packing)
        y = self.res1(y, self.self_attn(self.res1.inner(y), mask=self_mask, causal=self_mask is None, cache=cache,
                                        pos=pos, start=start))
        # encoder-decoder attention, without positions; with a cache, memory's K and V are projected once
        kv = None
        if cache is not None:
            if "mem_kv" not in cache:
                cache["mem_kv"] = self.cross_attn.project_kv(memory)
            kv = cache["mem_kv"]
        y = self.res2(y, self.cross_attn(self.res2.inner(y), memory, mask=src_mask, kv=kv))
        return self.res3(y, self.ffn(self.res3.inner(y)))


# -- positions ------------------------------------------------------------------------------------
class Positions(nn.Module):
    """Where a model's positions act, as three hooks; this base has none (positional_encoding: none)
    and a subclass overrides what it needs. Positions count from 0 on each side; `start` is the first
    position of the tokens at hand (a cached decoder's step)."""

    def __init__(self, d_model: int, max_len: int, h: int, d_k: int):
        super().__init__()

    def embed(self, start: int, T: int) -> torch.Tensor | None:
        """(T, d_model) added to the scaled embeddings of positions start..start+T-1, or None."""
        return None

    def rotate(self, x: torch.Tensor, start: int) -> torch.Tensor:
        """Self-attention's queries or keys (B, heads, T, d_k) at positions start..start+T-1."""
        return x

    def bias(self, start: int, T: int, S: int, causal: bool) -> torch.Tensor | None:
        """(h, T, S) added to self-attention's scores of queries start..start+T-1 over keys 0..S-1, or None."""
        return None


def sinusoid_table(max_len: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...)."""
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


class SinusoidalPositions(Positions):
    def __init__(self, d_model: int, max_len: int, h: int, d_k: int):
        super().__init__(d_model, max_len, h, d_k)
        self.register_buffer("pe", sinusoid_table(max_len, d_model), persistent=False)

    def embed(self, start, T):
        return self.pe[start:start + T]


class LearnedPositions(Positions):
    """One learned vector per position (Table 3 row E)."""

    def __init__(self, d_model: int, max_len: int, h: int, d_k: int):
        super().__init__(d_model, max_len, h, d_k)
        self.weight = nn.Parameter(torch.empty(max_len, d_model).normal_())  # drawn as nn.Embedding draws

    def embed(self, start, T):
        return self.weight[start:start + T]


class RotaryPositions(Positions):
    """Rotary positions (RoFormer, Su et al. 2021): coordinates i and i + d_k/2 of a query or key turn by
    the angle pos / 10000^(2i/d_k), so a query's dot product with a key depends on their distance only."""

    def __init__(self, d_model: int, max_len: int, h: int, d_k: int):
        super().__init__(d_model, max_len, h, d_k)
        angle = torch.arange(max_len, dtype=torch.float32)[:, None] * 10000.0 ** (
            -torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
        self.register_buffer("cos", angle.cos().repeat(1, 2), persistent=False)  # (max_len, d_k)
        self.register_buffer("sin", angle.sin().repeat(1, 2), persistent=False)

    def rotate(self, x, start):
        T = x.size(2)
        cos, sin = self.cos[start:start + T].to(x.dtype), self.sin[start:start + T].to(x.dtype)
        x1, x2 = x.chunk(2, -1)
        return x * cos + torch.cat([-x2, x1], -1) * sin


def alibi_slopes(h: int) -> list[float]:
    """Press et al.'s head slopes: 2^(-8/h), 2^(-16/h), ..., 2^-8 for h a power of 2; otherwise those of the
    power of 2 below h, then every other slope of the power of 2 above."""
    n = 2 ** math.floor(math.log2(h))
    return [2 ** (-8 * (i + 1) / n) for i in range(n)] + [2 ** (-4 * (2 * i + 1) / n) for i in range(h - n)]


class ALiBi(Positions):
    """Attention with linear biases (Press et al. 2022): no position vectors; head i's score of query
    position p for key position j falls by slope_i * (p - j), in the encoder by slope_i * |p - j|."""

    def __init__(self, d_model: int, max_len: int, h: int, d_k: int):
        super().__init__(d_model, max_len, h, d_k)
        self.register_buffer("slopes", torch.tensor(alibi_slopes(h)), persistent=False)

    def bias(self, start, T, S, causal):
        p = torch.arange(start, start + T, device=self.slopes.device)[:, None]
        dist = p - torch.arange(S, device=p.device)  # (T, S): query position minus key position
        b = -self.slopes[:, None, None] * (dist if causal else dist.abs())
        return b.masked_fill(dist < 0, float("-inf")) if causal else b


# -- the model ------------------------------------------------------------------------------------
class Transformer(nn.Module):
    def __init__(self, m: ModelSpec, vocab_size: int, pad_id: int = PAD, tgt_vocab_size: int | None = None):
        super().__init__()
        self.spec, self.vocab_size, self.pad_id = m, vocab_size, pad_id
        d = m.d_model
        # Shared vocabulary: one matrix for source and target embeddings and the pre-softmax map.
        # With a target vocabulary of its own (parsing), share_embeddings ties the target
        # embedding and the pre-softmax map only.
        self.src_embed = nn.Embedding(vocab_size, d)
        if tgt_vocab_size is None:
            self.tgt_embed = self.src_embed if m.share_embeddings else nn.Embedding(vocab_size, d)
        else:
            self.tgt_embed = nn.Embedding(tgt_vocab_size, d)
        V_tgt = self.tgt_embed.num_embeddings
        self.out_proj = None if m.share_embeddings else nn.Linear(d, V_tgt, bias=False)
        self.pos_embed = components.build(m, "positional")  # a Positions: added to embeddings, or in attention
        self.drop = nn.Dropout(m.dropout)
        self.stream_dtype = torch.bfloat16 if m.residual_stream == "bf16" else None  # under bf16 autocast only
        self.encoder = nn.ModuleList(EncoderLayer(m) for _ in range(m.N))
        self.decoder = nn.ModuleList(DecoderLayer(m) for _ in range(m.N))
        # pre-norm: each stack ends in a norm (its last residual sum is otherwise never normalized)
        pre = m.norm_position == "pre"
        self.enc_norm = components.build(m, "norm") if pre else None
        self.dec_norm = components.build(m, "norm") if pre else None
        # word pointer (ours, parsing): W_p maps the state of the word being covered into the decoder
        self.w_pointer = nn.Linear(d, d, bias=False) if m.word_pointer else None
        if m.word_pointer:  # stand-in tables until the vocabularies give theirs (set_word_pointer): every
            # source piece a word, no preterminal; the model runs, with the real model's shapes and cost
            self.set_word_pointer(torch.ones(vocab_size, dtype=torch.bool), torch.zeros(V_tgt, dtype=torch.bool))
        self._init()
        self._compiled: dict[type, object] = {}  # compile_layers: a layer kind's compiled training forward

    def compile_layers(self, **options) -> None:
        """Regional compilation (train.compile on): EncoderLayer.forward and DecoderLayer.forward each compiled
        once (torch.compile `options`), the one graph serving all N layers of its stack, their parameters its
        inputs. Only a training forward with gradients runs them; evaluation and incremental decoding (a cache,
        other shapes, no backward) stay eager and compile nothing. Compiling the whole model instead traces all
        2N layers into one graph: 69 s before base's first step on an H100 (results/gpu-check)."""
        self._compiled = {kind: torch.compile(kind.forward, **options) for kind in (EncoderLayer, DecoderLayer)}

    def _layer(self, layer: nn.Module, *args) -> torch.Tensor:
        f = self._compiled.get(type(layer)) if self.training and torch.is_grad_enabled() else None
        return layer(*args) if f is None else f(layer, *args)

    def set_word_pointer(self, word_start: torch.Tensor, preterminal: torch.Tensor) -> None:
        """The vocabularies' part of the word pointer: word_start (V_src,) marks the source pieces that
        begin a word (eos too: the place after the last word); preterminal (V_tgt,) the target
        symbols that cover one word. Buffers, not weights: they come from the vocabularies."""
        self.register_buffer("word_start", torch.as_tensor(word_start, dtype=torch.bool), persistent=False)
        self.register_buffer("preterminal", torch.as_tensor(preterminal, dtype=torch.bool), persistent=False)

    def _init(self):
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        # Embeddings ~ N(0, d_model^-1/2): times sqrt(d_model) they enter the network at unit scale.
        for e in dict.fromkeys([self.src_embed, self.tgt_embed]):  # src first, tgt after (if its own)
            nn.init.normal_(e.weight, 0.0, self.spec.d_model ** -0.5)
        if isinstance(self.pos_embed, LearnedPositions):
            nn.init.normal_(self.pos_embed.weight, 0.0, self.spec.d_model ** -0.5)

    def _embed(self, table: nn.Embedding, tokens: torch.Tensor, start: int = 0, extra=None,
               positions: torch.Tensor | None = None) -> torch.Tensor:
        """positions: each token's own (B, T), a packed row's (counting from 0 in each sentence)."""
        T = tokens.size(1)
        if positions is None and start + T > self.spec.max_len:
            raise ValueError(f"sequence of {start + T} positions exceeds model.max_len={self.spec.max_len}")
        x = table(tokens) * math.sqrt(self.spec.d_model)
        pos = self.pos_embed.embed(start, T)
        if positions is not None and pos is not None:
            pos = self.pos_embed.embed(0, self.spec.max_len)[positions]
        x = x if pos is None else x + pos
        x = x if extra is None else x + extra
        if self.stream_dtype is not None and torch.is_autocast_enabled(x.device.type) \
                and torch.get_autocast_dtype(x.device.type) == self.stream_dtype:
            x = x.to(self.stream_dtype)  # model.residual_stream bf16: the layers' sums stay in it
        return dropout.counter_dropout(self.drop, x, p_drop=True)

    def src_mask(self, src: torch.Tensor) -> torch.Tensor:
        return (src != self.pad_id)[:, None, None, :]  # (B, 1, 1, S): True = may attend

    def encode(self, src: torch.Tensor, packed=None) -> tuple[torch.Tensor, torch.Tensor]:
        mask = self.src_mask(src) if packed is None else packed.enc_mask
        x = self._embed(self.src_embed, src, positions=None if packed is None else packed.src_pos)
        for layer in self.encoder:
            x = self._layer(layer, x, mask, self.pos_embed)
        if self.enc_norm is not None:
            x = self.enc_norm(x)
        if self.w_pointer is not None:
            # Encoder-decoder attention does not depend on the order of the memory's positions, so
            # a pointer model returns them reordered: each word's first piece in word order, then
            # eos, then the rest (pads last). memory[:, k] is then word k (k = W: the end).
            first = self.word_start[src] & (src != self.pad_id)
            order = (~first).to(torch.uint8).sort(dim=1, stable=True).indices
            x, mask = x.gather(1, order[..., None].expand_as(x)), mask.gather(3, order[:, None, None, :])
        return x, mask

    def _pointer(self, tgt_in, memory, cache) -> torch.Tensor:
        """W_p memory[k_t]: k_t = preterminals among the target tokens so far = the word the next
        preterminal covers (encode put word k at memory position k)."""
        k = self.preterminal[tgt_in].long().cumsum(1)
        if cache is not None:  # incremental: the count carries over from earlier steps
            k = k + cache[0].get("n_pre", 0)
            cache[0]["n_pre"] = k[:, -1:]
        k = k.clamp(max=memory.size(1) - 1)
        return self.w_pointer(memory.gather(1, k[..., None].expand(-1, -1, memory.size(2))))

    def decode(self, tgt_in, memory, src_mask, cache: list[dict] | None = None, packed=None) -> torch.Tensor:
        """Logits for every position of tgt_in; with a cache, tgt_in holds only the new token(s)."""
        return self.logits(self.decode_states(tgt_in, memory, src_mask, cache, packed))

    def decode_states(self, tgt_in, memory, src_mask, cache=None, packed=None) -> torch.Tensor:
        """The decoder's final states (B, T, d_model): decode's input to the pre-softmax map. packed: a
        zoo.model.packing.Packed's masks and positions (several sentences a row; src_mask its cross mask)."""
        start = cache[0].get("pos", 0) if cache is not None else 0  # tokens decoded before these
        extra = None if self.w_pointer is None else self._pointer(tgt_in, memory, cache)
        y = self._embed(self.tgt_embed, tgt_in, start, extra, None if packed is None else packed.tgt_pos)
        self_mask = None if packed is None else packed.dec_mask
        for i, layer in enumerate(self.decoder):
            if cache is None:
                y = self._layer(layer, y, memory, src_mask, None, self.pos_embed, 0, self_mask)
            else:
                y = layer(y, memory, src_mask, cache[i], self.pos_embed, start)
        if cache is not None:
            cache[0]["pos"] = start + tgt_in.size(1)
        return y if self.dec_norm is None else self.dec_norm(y)

    def output_weight(self) -> torch.Tensor:
        """The pre-softmax matrix (V_tgt, d_model): the tied target embedding, or out_proj's own."""
        return self.tgt_embed.weight if self.out_proj is None else self.out_proj.weight

    def logits(self, y: torch.Tensor) -> torch.Tensor:
        return y @ self.tgt_embed.weight.t() if self.out_proj is None else self.out_proj(y)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, src_seg=None, tgt_seg=None,
                states: bool = False) -> torch.Tensor:
        """Logits (B, T, V); states: the decoder's final states instead (train.fused_loss applies the
        pre-softmax map inside the loss). src_seg, tgt_seg: a packed batch's sentence ids (zoo.data.packing)."""
        if src_seg is None:
            memory, mask = self.encode(src)
            packed = None
        else:
            packed = packing.Packed.of(src_seg, tgt_seg, self)
            memory, mask = self.encode(src, packed)[0], packed.cross_mask
        if states:
            return self.decode_states(tgt_in, memory, mask, None, packed)
        return self.decode(tgt_in, memory, mask, None, packed)  # logits have one path: decode's

    # -- incremental decoding --------------------------------------------------------------
    def new_cache(self) -> list[dict]:
        return [{} for _ in self.decoder]

    @staticmethod
    def reorder_cache(cache: list[dict], index: torch.Tensor) -> list[dict]:
        """Select batch rows (beam search keeps the surviving hypotheses): every tensor in the cache
        (keys, values, the memory's keys and values, the pointer's count); a position stays as it is."""
        def select(x):
            if isinstance(x, torch.Tensor):
                return x.index_select(0, index)
            return tuple(select(t) for t in x) if isinstance(x, tuple) else x
        return [{k: select(v) for k, v in c.items()} for c in cache]


@torch.no_grad()
def encoder_attention(model: Transformer, src: torch.Tensor, layer: int = -1) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) of one encoder layer's self-attention heads: (B, h, S, S), for the heat maps."""
    layer = layer % len(model.encoder)
    x = model._embed(model.src_embed, src)
    mask, pos = model.src_mask(src), model.pos_embed
    for lyr in model.encoder[:layer]:
        x = lyr(x, mask, pos)
    return model.encoder[layer].self_attn.weights(model.encoder[layer].res1.inner(x), mask, pos)


def build_model(m: ModelSpec, vocab_size: int, tgt_vocab_size: int | None = None,
                word_pointer: tuple | None = None) -> Transformer:
    """vocab_size: the shared (or source) vocabulary; tgt_vocab_size: a separate target one.
    word_pointer: (word_start, preterminal), the vocabularies' tables of a `model.word_pointer` model
    (zoo.data.trees.word_pointer_tables); without them such a model runs on stand-ins (see Transformer)."""
    model = Transformer(m, vocab_size, tgt_vocab_size=tgt_vocab_size)
    if word_pointer is not None:
        model.set_word_pointer(*word_pointer)
    return model


def count_params(model: nn.Module) -> int:
    """numel of the compiled model, each tied tensor once (parameters() de-duplicates)."""
    return sum(p.numel() for p in model.parameters())
