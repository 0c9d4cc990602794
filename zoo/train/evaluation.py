"""A trained model evaluated: dev perplexity (the loop's, at its cadence), then each eval split decoded and
scored (checkpoints averaged where the spec says, section 6.1), the splits' per-sentence likelihoods, and
one attention map. zoo.evidence computes the figures; this module says which weights, splits and sentences.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from zoo.config import Config
from zoo.data import corpus
from zoo.paths import atomic_write_text, inside
from zoo.result import Attention, RunResult, SplitScore
from zoo.tokens import EOS
from zoo.train.checkpointing import average_checkpoints, checkpoints

if TYPE_CHECKING:
    from zoo.model import Transformer
    from zoo.train.prepared import Prepared

__all__ = ["attention_map", "dev_perplexity", "dev_sentence_nll", "evaluate", "load_for_eval",
           "score"]  # what it lends outside its package (the door serves these)


def _dev_batches(pairs: list, batch_tokens: int):
    # here, not at the top: zoo.data.batching is the deepest of zoo.data's parts, and zoo.train.loop imports it
    from zoo.data import collate, make_batches, pair_lengths
    return (collate(pairs, b) for b in make_batches(pair_lengths(pairs), max(batch_tokens, 2000), 0, 0))


def dev_perplexity(model: Transformer, pairs: list, batch_tokens: int) -> float:
    """Per-word-piece perplexity on the dev pairs, without label smoothing (zoo.evidence computes it)."""
    from zoo import evidence as E
    return E.dev_perplexity(model, _dev_batches(pairs, batch_tokens))


def dev_sentence_nll(model: Transformer, pairs: list, batch_tokens: int) -> list[list[float]]:
    """Per dev sentence [NLL, tokens], in the split's order, the same batches as dev_perplexity."""
    from zoo import evidence as E
    return E.dev_sentence_nll(model, _dev_batches(pairs, batch_tokens), len(pairs))


def score(cfg: Config, out: Path, model: Transformer, p: Prepared, device, result: RunResult) -> None:
    """Fill `result` with what the final weights score: dev's per-sentence likelihood (the claims resample it),
    each eval split decoded and scored, the likelihood of every other scored split, the attention map."""
    if result.dev_ppl is not None:
        result.dev_nll_stats = dev_sentence_nll(model, p.dev, cfg.train.batch_tokens)
    nll = {split: dev_sentence_nll(model, pairs, cfg.train.batch_tokens) for split, pairs in p.likelihood.items()}
    result.splits, result.attention = evaluate(cfg, out, model, p, device)
    for split, stats in nll.items():  # the final weights' likelihood, as dev's (decoding may average)
        s = result.splits.setdefault(split, SplitScore(eval_split=split, eval_sentences=len(stats)))
        s.nll_stats = stats
        s.ppl = math.exp(sum(x for x, _ in stats) / max(1, sum(n for _, n in stats)))


def load_for_eval(cfg: Config, out: Path, model: Transformer) -> str:
    """Average the last k checkpoints into `model` when the spec asks; say what was evaluated."""
    k = cfg.eval.average_checkpoints
    ckpts = checkpoints(out)
    if k and ckpts:
        use = ckpts[-k:]
        model.load_state_dict(average_checkpoints(use))
        return f"average of the last {len(use)} checkpoints"
    return "final weights"


def evaluate(cfg: Config, out: Path, model: Transformer, p: Prepared, device) -> tuple[dict[str, SplitScore], Attention]:
    """Decode and score each eval split (the spec's own and its extra splits); the attention map."""
    from zoo import evidence as E
    from zoo.model import translate
    model.eval()
    sp = p.sp
    final = None
    if cfg.eval.average_checkpoints and cfg.eval.metric == "bleu":
        # The final weights too, on the spec's own split, so a report can check that averaging helps
        # at the same step (section 6.1) rather than compare it with some other run.
        srcs, refs = p.evals[cfg.eval.split]
        final = E.bleu(translate(model, sp, srcs, cfg.eval, tgt=p.tgt_vocab), refs)["bleu"]
    how = load_for_eval(cfg, out, model)
    model.eval()
    per_split = {}
    for split, (srcs, refs) in p.evals.items():
        t = time.time()
        hyps = translate(model, sp, srcs, cfg.eval, tgt=p.tgt_vocab)
        res = {"eval_split": split, "eval_sentences": len(hyps), "eval_weights": how,
               "decode_seconds": time.time() - t}
        if cfg.eval.metric == "f1":
            res |= E.parse_f1(srcs, hyps, refs)
        else:
            b, tok, pb = E.bleu(hyps, refs), E.tokenized_bleu(hyps, refs), E.paper_bleu(hyps, refs, corpus(cfg.data.dataset).tgt)
            res |= {"bleu_paper": pb["bleu"], "bleu_paper_label": pb["label"], "bleu_paper_stats": pb["stats"]}
            res |= {"bleu": b["bleu"], "bleu_signature": b["signature"], "bleu_tokenized": tok["bleu"],
                    "bleu_tokenized_label": tok.get("label", ""), "bleu_stats": E.bleu_stats(hyps, refs),
                    "bleu_final_weights": final if split == cfg.eval.split else None}
        atomic_write_text(inside(out, f"hyps.{split}.txt"), "\n".join(hyps) + "\n")  # split: a safe name
        per_split[split] = SplitScore.model_validate(res)
    return per_split, attention_map(model, sp, p, device)


def attention_map(model: Transformer, sp, p: Prepared, device, max_tokens: int = 24) -> Attention:
    """Each head of the last encoder layer on one short eval sentence, for the report's heat map."""
    from zoo.model import encoder_attention
    srcs = p.evals[next(iter(p.evals))][0]
    text = min((s for s in srcs[:200] if 6 <= len(sp.encode(s)) < max_tokens), key=len, default=srcs[0])
    ids = sp.encode(text)[: max_tokens - 1] + [EOS]
    w = encoder_attention(model.eval(), torch.tensor([ids], device=device))[0]
    return Attention(layer=f"encoder {len(model.encoder)}", sentence=text,
                     tokens=[sp.id_to_piece(i) for i in ids[:-1]] + ["</s>"],
                     weights=[[[round(x, 4) for x in row] for row in head] for head in w.float().cpu().tolist()])
