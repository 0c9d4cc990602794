"""Analytic cost model: parameter counts and FLOPs of the compiled Transformer.

Counting rules (stated in every report):
- Parameters: every weight of the compiled model once; the shared embedding / pre-softmax matrix
  counts once; attention projections have no bias, feed-forward layers do (gated ones do not),
  LayerNorms have gain and bias (RMSNorm a gain); sinusoidal positions are not parameters, learned
  ones are. Each component's count is its registry's (zoo.model.components), a third-party one's too.
- FLOPs: 2 per multiply-add of every matrix product (projections, Q K^T, attention x V, feed-forward,
  pre-softmax); element-wise work (softmax, LayerNorm, bias, residual) is left out, as
  `torch.utils.flop_counter` does. Attention is counted dense (the causal mask saves nothing in a
  dense kernel). Training = forward + backward = 3 x forward.
- Per step: `batch_tokens` source and `batch_tokens` target tokens in sentences of SEQ_LEN
  word-pieces on both sides (the attention terms grow with sentence length; 25 is about the mean
  of WMT14 EN-DE under a 37K BPE).
This module needs no torch: it is arithmetic on the spec.
"""
from __future__ import annotations

from zoo import paper
from zoo.config import Config, ModelSpec

__all__ = ["FLOAT", "SEQ_LEN", "cost_row", "forward_flops", "forward_flops_per_token", "gib", "memory_text",
           "params_analytic", "train_flops_per_step", "train_flops_total", "train_memory",
           "activation_floats_per_token", "paper_cost_flops"]

SEQ_LEN = 25


def _costs(m: ModelSpec) -> tuple:
    """zoo.model.Cost of one attention, feed-forward, norm and positions module, as the spec names them."""
    from zoo.model import components  # here, not at the top: the reports' import chains stay short (no torch either way)
    return tuple(components.cost(m, kind) for kind in ("attention", "ffn", "norm", "positional"))


def params_analytic(m: ModelSpec, vocab_size: int) -> int:
    d = m.d_model
    attn, ffn, norm, pos = (c.params for c in _costs(m))
    enc = attn + ffn + 2 * norm
    dec = 2 * attn + ffn + 3 * norm
    final = 2 * norm if m.norm_position == "pre" else 0  # pre-norm: one after each stack
    embed = vocab_size * d * (1 if m.share_embeddings else 3)  # src, tgt, pre-softmax
    pointer = d * d if m.word_pointer else 0  # W_p (ours, parsing)
    return embed + pos + pointer + final + m.N * (enc + dec)


def forward_flops(m: ModelSpec, vocab_size: int, n_src: int, n_tgt: int, S: int, T: int) -> int:
    """Forward FLOPs for n_src source tokens in sentences of length S and n_tgt target tokens of length T."""
    d = m.d_model
    attn, ffn, norm, pos = _costs(m)
    self_attn = lambda L: attn.flops + attn.kv_flops + L * attn.pair_flops  # per query token, over L keys
    enc = n_src * (self_attn(S) + ffn.flops + 2 * norm.flops)
    # the memory's keys and values: projected once per source token; queries attend over S of them
    dec_cross = n_tgt * (attn.flops + S * attn.pair_flops) + n_src * attn.kv_flops
    dec = n_tgt * (self_attn(T) + ffn.flops + 3 * norm.flops) + dec_cross
    final = (n_src + n_tgt) * norm.flops if m.norm_position == "pre" else 0
    pointer = n_tgt * 2 * d * d if m.word_pointer else 0  # W_p memory[k] (ours, parsing)
    return m.N * (enc + dec) + final + (n_src + n_tgt) * pos.flops + n_tgt * 2 * d * vocab_size + pointer


def forward_flops_per_token(m: ModelSpec, vocab_size: int, seq_len: int = SEQ_LEN) -> float:
    """Forward FLOPs per target token, with one source token per target token."""
    return forward_flops(m, vocab_size, seq_len, seq_len, seq_len, seq_len) / seq_len


def train_flops_per_step(cfg: Config, seq_len: int = SEQ_LEN, vocab_size: int | None = None) -> float:
    n = cfg.train.batch_tokens
    return 3.0 * forward_flops(cfg.model, vocab_size or cfg.data.vocab_size, n, n, seq_len, seq_len)


def train_flops_total(cfg: Config, seq_len: int = SEQ_LEN, steps: int | None = None,
                      vocab_size: int | None = None) -> float:
    return train_flops_per_step(cfg, seq_len, vocab_size) * (cfg.train.steps if steps is None else steps)


def paper_cost_flops(cfg: Config) -> float | None:
    """The paper's hardware-time estimate, where the paper gives the training time (base, big)."""
    return paper.paper_cost_flops(cfg.paper.row) if cfg.paper.table in (2, 3) else None


def cost_row(cfg: Config) -> dict:
    v = cfg.data.vocab_size
    return {
        "variant": cfg.variant,
        "params_analytic": params_analytic(cfg.model, v),
        "forward_flops_per_token": forward_flops_per_token(cfg.model, v),
        "train_flops_per_step": train_flops_per_step(cfg),
        "train_flops_total": train_flops_total(cfg),
        "steps": cfg.train.steps,
        "seq_len_assumed": SEQ_LEN,
        "paper_cost_flops": paper_cost_flops(cfg),
    }


# -- memory -------------------------------------------------------------------------------------
# A trial's peak memory while training, estimated before anything is allocated, so a model no node
# can hold is refused with a number instead of swapping or being killed. float32 throughout (bf16
# autocast on a GPU only makes activations smaller): weights, their gradients and Adam's two
# moments are 4 x 4 bytes per parameter; activations are what autograd keeps for the backward
# pass of one micro-batch (batch_tokens / accumulation / workers tokens on each side).

FLOAT = 4
RUNTIME = 2**29  # the process itself: torch, the corpus, sentencepiece (a smoke trial peaks at 0.25 GiB RSS)


def activation_floats_per_token(m: ModelSpec, vocab_size: int, seq_len: int) -> int:
    """Floats autograd keeps per target token (one source token alongside), sentences of seq_len."""
    d = m.d_model
    # scaled_dot_product_attention's fused kernels keep no L x L scores for the backward pass, only
    # a per-head log-sum-exp (in the attention's own count); seq_len stays a parameter for callers
    # that count the scores themselves
    attn, ffn, norm, _ = (c.activations for c in _costs(m))
    norm += d                                           # and the residual sum it reads
    enc = attn + ffn + 2 * norm
    dec = 2 * attn + ffn + 3 * norm
    final = 2 * norm if m.norm_position == "pre" else 0
    embed = 4 * d                                       # scaled embeddings + positions, dropout, both sides
    logits = 2 * vocab_size                             # logits (kept by the loss) + log-softmax or gradient
    return m.N * (enc + dec) + final + embed + logits


def micro_batch_tokens(cfg: Config, workers: int = 1) -> int:
    """Tokens on each side of one forward/backward pass: the step's batch_tokens split across the
    workers and the gradient-accumulation parts that max_tokens_per_device asks for."""
    cap = cfg.train.max_tokens_per_device
    accumulation = 1 if not cap else max(1, -(-cfg.train.batch_tokens // (workers * cap)))
    return max(1, -(-cfg.train.batch_tokens // (workers * accumulation)))


def train_memory(cfg: Config, workers: int = 1, vocab_size: int | None = None) -> dict:
    """Estimated peak bytes of one training process, by part. Sentences are taken at data.max_len
    (capped at the model's max_len): a length-sorted batch of the longest pairs is the worst step."""
    v = vocab_size or cfg.data.vocab_size
    P = params_analytic(cfg.model, v)
    seq = min(cfg.data.max_len, cfg.model.max_len) + 1
    tokens = micro_batch_tokens(cfg, workers)
    parts = {"weights": FLOAT * P, "gradients": FLOAT * P, "adam": 2 * FLOAT * P,
             "activations": FLOAT * tokens * activation_floats_per_token(cfg.model, v, seq),
             "runtime": RUNTIME}
    return parts | {"total": sum(parts.values()), "params": P, "tokens": tokens, "seq_len": seq}


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def memory_text(est: dict) -> str:
    """One line: the total and its parts."""
    parts = ", ".join(f"{k} {gib(est[k])}" for k in ("weights", "gradients", "adam", "activations", "runtime"))
    return (f"{gib(est['total'])} ({parts}; {est['params'] / 1e6:.0f}M parameters, micro-batches of "
            f"{est['tokens']} tokens in sentences of up to {est['seq_len']})")
