"""Scores: sacreBLEU on detokenized text (the figure we report), a clearly labelled tokenized
BLEU (closer in spirit to the paper's own BLEU), and per-word-piece perplexity.

The paper's BLEU came from tensor2tensor tooling on tokenized text with compound splitting; those
numbers are not comparable across tokenizations, which is why sacreBLEU (Post 2018) and its
signature are the primary figure here. Anything else carries a `label` saying what it is.
"""
from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F

from zoo.tokens import PAD  # the token ids have one home, on the ground floor

__all__ = ["PAPER_BLEU_LABEL", "bleu", "bleu_stats", "dev_perplexity", "dev_sentence_nll", "paper_bleu", "parse_f1",
           "perplexity", "tokenized_bleu"]  # what it lends outside its package (the door serves these)


def _check(hyps: list[str], refs: list[str]) -> None:
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")


def _bleu(hyps: list[str], refs: list[str], tokenize: str) -> dict:
    from sacrebleu.metrics import BLEU

    _check(hyps, refs)
    metric = BLEU(tokenize=tokenize)
    s = metric.corpus_score(list(hyps), [list(refs)])
    return {"bleu": s.score, "signature": str(metric.get_signature()),
            "precisions": list(s.precisions), "bp": s.bp, "sys_len": s.sys_len,
            "ref_len": s.ref_len}


def bleu_stats(hyps: list[str], refs: list[str]) -> list[list[int]]:
    """sacreBLEU's per-sentence sufficient statistics (13a): lengths, n-gram matches and totals. Kept
    with a run so claims can be bootstrapped over sentences later, from the results store alone."""
    from sacrebleu.metrics import BLEU

    _check(hyps, refs)
    return [[int(x) for x in row] for row in BLEU()._extract_corpus_statistics(list(hyps), [list(refs)])]


def bleu(hyps: list[str], refs: list[str]) -> dict:
    """Corpus sacreBLEU on detokenized text with the default 13a tokenizer (one reference)."""
    return {**_bleu(hyps, refs, "13a"), "label": "sacreBLEU (detokenized, tok:13a)"}


def tokenized_bleu(hyps: list[str], refs: list[str]) -> dict:
    """A second, labelled BLEU approximating the paper's tokenized figure.

    sacreBLEU's `intl` tokenizer is the mteval-v14 international tokenization that tensor2tensor's
    `t2t-bleu` uses: it splits every punctuation and symbol character, hyphens included, which
    also approximates the compound splitting (`-` -> `##AT##-##AT##`) of the paper's
    get_ende_bleu.sh. It is still not the paper's exact pipeline (Moses tokenizer +
    multi-bleu.perl): report it next to sacreBLEU, never in its place."""
    return {**_bleu(hyps, refs, "intl"),
            "label": "tokenized BLEU (sacreBLEU tok:intl, as t2t-bleu; approximates the paper's "
                     "tokenized BLEU, not comparable to sacreBLEU)"}


PAPER_BLEU_LABEL = ("tokenized BLEU with compound splitting, as the paper's (tensor2tensor get_ende_bleu.sh: "
                    "Moses tokenizer -l de, unicode punctuation replaced in the output, ##AT##-##AT## compound "
                    "splitting, multi-bleu); comparable to the paper's figures, not to sacreBLEU")


def _compound_split(line: str) -> str:
    # get_ende_bleu.sh: perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g' (non-overlapping, as perl's /g)
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", line)


def paper_bleu(hyps: list[str], refs: list[str], lang: str = "de") -> dict:
    """The paper's BLEU, as tensor2tensor's get_ende_bleu.sh computes it: both sides through the Moses
    tokenizer (sacremoses, the port of tokenizer.perl), the output's unicode punctuation replaced
    (replace-unicode-punctuation.perl), hyphenated compounds split to `a ##AT##-##AT## b` on both
    sides, then multi-bleu.perl's BLEU (sacreBLEU on the tokens as they are, no smoothing). Also
    the per-sentence statistics, so claims can be read in the paper's metric."""
    from sacremoses import MosesPunctNormalizer, MosesTokenizer
    from sacrebleu.metrics import BLEU
    _check(hyps, refs)
    tok, norm = MosesTokenizer(lang=lang), MosesPunctNormalizer(lang=lang)
    h = [_compound_split(norm.replace_unicode_punct(tok.tokenize(x, return_str=True))) for x in hyps]
    r = [_compound_split(tok.tokenize(x, return_str=True)) for x in refs]
    metric = BLEU(tokenize="none", smooth_method="none", force=True)
    stats = metric._extract_corpus_statistics(h, [r])
    return {"bleu": metric.corpus_score(h, [r]).score, "label": PAPER_BLEU_LABEL,
            "stats": [[int(x) for x in row] for row in stats]}


# ---------------------------------------------------------------------------- perplexity
def perplexity(total_nll: float, n_tokens: int) -> float:
    """exp(mean negative log-likelihood per token): per word-piece when the tokens are pieces;
    inf for a diverged model, whose mean is past exp()'s range."""
    if n_tokens <= 0:
        raise ValueError("perplexity needs at least one token")
    mean = total_nll / n_tokens
    return math.exp(mean) if mean < 700 else math.inf


def dev_nll(model, batches) -> tuple[float, int]:
    """(summed token NLL, tokens) over batches with fields src, tgt_in, tgt_out (pad=0 ignored),
    in nats, without label smoothing: the model's own likelihood, not the training loss."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = getattr(model, "pad_id", PAD)
    total, n = 0.0, 0
    try:
        with torch.inference_mode():
            for b in batches:
                tgt_out = b.tgt_out.to(device)
                logits = model(b.src.to(device), b.tgt_in.to(device)).float()
                total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1),
                                         ignore_index=pad, reduction="sum").item()
                n += int((tgt_out != pad).sum())
    finally:
        model.train(was_training)
    return total, n


def dev_sentence_nll(model, batches, n: int) -> list[list[float]]:
    """Per sentence [summed token NLL in nats, tokens] over batches that carry their sentences'
    `indices` (n sentences in all, in the split's order), without label smoothing: what a claim
    resamples to put sentence noise on a perplexity difference."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = getattr(model, "pad_id", PAD)
    out = [[0.0, 0] for _ in range(n)]
    try:
        with torch.inference_mode():
            for b in batches:
                tgt_out = b.tgt_out.to(device)
                logits = model(b.src.to(device), b.tgt_in.to(device)).float()
                nll = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=pad, reduction="none").sum(1)
                tokens = (tgt_out != pad).sum(1)
                for i, x, k in zip(b.indices, nll.tolist(), tokens.tolist()):
                    out[i] = [x, int(k)]
    finally:
        model.train(was_training)
    return out


def dev_perplexity(model, batches) -> float:
    """Per-word-piece perplexity of the model on batches (see dev_nll)."""
    return perplexity(*dev_nll(model, batches))


def parse_f1(sources: list[str], hyps: list[str], refs: list[str]) -> dict:
    """EVALB F1 (COLLINS.prm rules) of predicted linearized trees against gold ones.

    Each prediction is mapped back to a tree over the sentence's words, repaired when brackets or
    lengths are off, with the gold POS tags on its words (as Vinyals & Kaiser et al. score: the tags
    only decide which words EVALB drops as punctuation), so every output scores. `malformed` counts
    the predictions that needed a repair (trees.malformed), before it. Beside it, on the same gold
    trees, the F1 of two trivial parsers: the flat tree and the right-branching tree."""
    from zoo.evidence import evalb
    from zoo.data import delinearize, flat_tree, malformed, right_branching, to_bracketed
    gold, test, flat, right, bad = [], [], [], [], 0
    for src, hyp, ref in zip(sources, hyps, refs):
        words = src.split(" ")
        g = delinearize(ref, words)
        gold.append(to_bracketed(g))
        test.append(to_bracketed(delinearize(hyp, words, tags=g.tags())))
        flat.append(to_bracketed(flat_tree(g)))
        right.append(to_bracketed(right_branching(g)))
        bad += malformed(hyp, len(words)) is not None
    r = evalb.score(gold, test, evalb.COLLINS)
    nan0 = lambda x: 0.0 if math.isnan(x) else x  # EVALB prints -nan when nothing matched: F1 0
    base = {name: nan0(evalb.score(gold, t, evalb.COLLINS).all.fmeasure) for name, t in
            (("f1_flat", flat), ("f1_right_branching", right))}
    return {"f1": nan0(r.all.fmeasure), "f1_len40": nan0(r.cutoff.fmeasure), "precision": r.all.precision,
            "recall": r.all.recall, "complete_match": r.all.complete_match, "evalb_errors": r.all.errors,
            "malformed": bad, "malformed_rate": bad / max(len(hyps), 1), **base,
            "f1_label": "EVALB bracketing F1, COLLINS.prm, gold POS tags on the words"}
