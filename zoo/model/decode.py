"""Decoding: beam search and greedy search on the model's incremental key/value cache.

The paper (section 6.1) decodes with beam size 4, length penalty alpha = 0.6 and a maximum output
length of input length + 50, terminating early when possible. Conventions shared by every search:

- A hypothesis Y is the list of tokens generated after bos; |Y| counts its eos when it has one.
- A sentence may generate at most max_len = min(its non-pad source length + max_len_offset,
  model.spec.max_len, max_len_cap) tokens, eos included; a hypothesis that reaches max_len without
  eos is finished as it stands. (max_len <= model.spec.max_len keeps every position embeddable.)
- Finished hypotheses are scored GNMT-style: log P(Y) / lp(Y), lp(Y) = ((5 + |Y|) / 6) ** alpha.
- pad and bos are never generated. Results are token ids without bos and eos.

The model needs `encode(src) -> (memory, src_mask)`, `decode(tgt_in, memory, src_mask, cache)`
-> logits (N, T, V), `new_cache()` and `reorder_cache(cache, index)`; see zoo.model.
"""
from __future__ import annotations

import functools

import torch

from zoo.tokens import BOS, EOS, PAD  # the token ids have one home, on the ground floor

__all__ = ["beam_search", "beam_search_nocache", "greedy", "translate"]
NEG_INF = float("-inf")


def _decoding(fn):
    """Run fn in eval mode under inference_mode, restoring the model's training flag afterwards."""
    @functools.wraps(fn)
    def wrapper(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                return fn(model, *args, **kwargs)
        finally:
            model.train(was_training)
    return wrapper


def length_penalty(length, alpha: float):
    """GNMT lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016); works on ints and tensors."""
    return ((5 + length) / 6) ** alpha


def max_lengths(model, src: torch.Tensor, max_len_offset: int, pad: int = PAD,
                max_len_cap: int | None = None) -> torch.Tensor:
    """(B,) most tokens each sentence may generate, eos included."""
    n = (src != pad).sum(1) + max_len_offset
    for limit in (getattr(getattr(model, "spec", None), "max_len", None), max_len_cap):
        if limit is not None:
            n = n.clamp(max=limit)
    return n.clamp(min=1)


# ---------------------------------------------------------------------------- tree constraint
class TreeConstraint:
    """Which next symbols keep a hypothesis a well-formed tree over its sentence's W words.

    Per hypothesis (decoder row) a small state: the stack of closers its open constituents need,
    its depth, its preterminals so far and whether its last symbol opened a constituent. A symbol
    is allowed when, after it, the tree can still be finished within the sentence's max_len:
      opener     inside the root (or as the first symbol), while a word is left for it;
      preterminal inside the root, while preterminals < W;
      closer     only the innermost constituent's own, never right after its opener (no empty
                 constituent), and the root's only once every word has its preterminal;
      eos        only after the root is closed (brackets balance, preterminals == W).
    Feasibility: (words left) + (depth) + 1 tokens must still fit after each symbol, so the search
    never runs out of length with a tree half built. All of it is tensor ops on (rows, V) masks.
    """

    def __init__(self, vocab, eos: int = EOS, max_depth: int = 64):
        V = vocab.get_piece_size()
        kinds = [vocab.id_to_piece(i) for i in range(V)]
        closer = [vocab.closer(i) for i in range(V)]
        self.eos, self.D = eos, max_depth
        self.is_open = torch.tensor([c is not None for c in closer])  # openers with a known closer
        self.is_close = torch.tensor([p.startswith(")") for p in kinds])
        self.is_pre = torch.tensor([vocab.is_preterminal(i) for i in range(V)])
        self.closer = torch.tensor([c if c is not None else 0 for c in closer])

    def start(self, words: torch.Tensor) -> dict:
        n, dev = words.numel(), words.device
        z = torch.zeros(n, dtype=torch.long, device=dev)
        return {"words": words.long(), "depth": z, "n_pre": z.clone(),
                "after_open": torch.zeros(n, dtype=torch.bool, device=dev),
                "stack": torch.zeros(n, self.D, dtype=torch.long, device=dev)}

    @staticmethod
    def select(state: dict, rows: torch.Tensor) -> dict:
        return {k: v.index_select(0, rows) for k, v in state.items()}

    def allowed(self, state: dict, t: int, max_len: torch.Tensor) -> torch.Tensor:
        """(rows, V) bool: symbols that may be the (t+1)-th token of each row's hypothesis."""
        d, left = state["depth"], state["words"] - state["n_pre"]
        room = max_len - (t + 1)  # tokens that may still follow this one, eos included
        dev = d.device
        can_open = (left > 0) & (d < self.D) & ((d > 0) | (t == 0)) & (left + d + 2 <= room)
        can_pre = (left > 0) & (d > 0) & (left + d <= room)
        can_close = (d > 0) & ~state["after_open"] & ((d > 1) | (left == 0)) & (left + d <= room)
        ok = (can_open[:, None] & self.is_open.to(dev)) | (can_pre[:, None] & self.is_pre.to(dev))
        top = state["stack"].gather(1, (d - 1).clamp(min=0)[:, None]).squeeze(1)
        rows = can_close.nonzero().flatten()
        ok[rows, top[rows]] = True
        ok[:, self.eos] = (d == 0) & (left == 0) & ((t > 0) | (state["words"] == 0))
        return ok

    def advance(self, state: dict, tok: torch.Tensor) -> dict:
        """The state after each row appends tok (rows already gathered from their parents)."""
        dev = tok.device
        is_open, is_close = self.is_open.to(dev)[tok], self.is_close.to(dev)[tok]
        d = state["depth"]
        stack = state["stack"].clone()
        rows = is_open.nonzero().flatten()
        stack[rows, d[rows].clamp(max=self.D - 1)] = self.closer.to(dev)[tok[rows]]
        return {"words": state["words"], "depth": d + is_open.long() - is_close.long(),
                "n_pre": state["n_pre"] + self.is_pre.to(dev)[tok].long(), "after_open": is_open,
                "stack": stack}


# ---------------------------------------------------------------------------- beam search
def _beam_search(model, src, beam_size, alpha, max_len_offset, bos, eos, pad, max_len_cap,
                 min_len, use_cache, early_stop, tree=None, words=None):
    """Batched beam search; rows of the decoder batch are (active sentence, beam) pairs.

    Each step extends every live hypothesis by every token. Extensions by eos (and, at a
    sentence's last allowed step, all extensions) are finished hypotheses: the best of them may
    replace the sentence's best finished one. The beam_size best extensions by other tokens stay
    live. Every eos extension of every live beam is considered, so no finished hypothesis the
    beam reaches is lost to the top-k cut.

    Early stopping, exact for the 1-best we return: a live hypothesis with log-prob s <= 0 can only
    finish as some Y' with log P(Y') <= s (log-probs only fall) and |Y'| <= max_len, so for
    alpha >= 0 (lp grows with length, 0 < lp(Y') <= lp(max_len)):
        log P(Y') / lp(Y') <= log P(Y') / lp(max_len) <= s / lp(max_len).
    Once the best finished score is >= that bound for the best live hypothesis, nothing found
    later can win, and the result equals running to max_len. (tensor2tensor applies the same
    bound but waits until beam_size hypotheses are finished and its worst beats the bound, which
    keeps an exact k-best list; we return only the best, so only the best must be unbeatable.)
    With alpha < 0 lp shrinks with length and no such bound exists: sentences run to max_len.
    """
    B, k, dev = src.size(0), beam_size, src.device
    if B == 0:
        return []
    memory, src_mask = model.encode(src)
    rows = torch.arange(B, device=dev).repeat_interleave(k)  # each sentence once per beam
    memory, src_mask = memory.index_select(0, rows), src_mask.index_select(0, rows)
    cache = model.new_cache() if use_cache else None
    max_lens = max_lengths(model, src, max_len_offset, pad, max_len_cap)
    min_len = torch.as_tensor(min_len, device=dev).expand(B)  # one minimum per sentence
    lp_max = length_penalty(max_lens.float(), alpha)

    seqs = torch.full((B, k, 1), bos, dtype=torch.long, device=dev)  # bos + tokens so far
    scores = torch.full((B, k), NEG_INF, device=dev)
    scores[:, 0] = 0.0  # the k beams start identical: expand only one of them at the first step
    sent = torch.arange(B, device=dev)  # original index of each still-active sentence
    best_score = torch.full((B,), NEG_INF, device=dev)  # best finished hypothesis so far
    best = torch.full((B, int(max_lens.max())), pad, dtype=torch.long, device=dev)
    if tree is not None:  # one state per decoder row, rows ordered (sentence, beam) like seqs
        state = tree.start(torch.as_tensor(words, device=dev).repeat_interleave(k))

    for t in range(int(max_lens.max())):
        n, length = sent.numel(), t + 1  # hypotheses are `length` tokens long after this step
        inp = seqs[:, :, -1:] if use_cache else seqs  # the cache holds the past; else recompute
        logits = model.decode(inp.reshape(n * k, -1), memory, src_mask, cache)[:, -1].float()
        if tree is not None:  # mask before the softmax: forced symbols cost nothing
            ok = tree.allowed(state, t, max_lens[sent].repeat_interleave(k))
            ok[:, eos] |= ~ok.any(1)  # a row with no way on (never, by feasibility) ends here
            logits = logits.masked_fill(~ok, NEG_INF)
        logp = logits.log_softmax(-1)
        logp[:, [pad, bos]] = NEG_INF
        logp[(length <= min_len[sent]).repeat_interleave(k), eos] = NEG_INF
        V = logp.size(-1)
        cand = scores.unsqueeze(-1) + logp.view(n, k, V)  # (n, k, V) log-probs of extensions

        # finished this step: the best eos extension, or at the last step the best extension
        last = length >= max_lens[sent]
        top_all, top_all_idx = cand.view(n, -1).max(1)
        top_eos, top_eos_beam = cand[:, :, eos].max(1)
        fin = torch.where(last, top_all, top_eos) / length_penalty(length, alpha)
        fin_beam = torch.where(last, top_all_idx // V, top_eos_beam)
        fin_tok = torch.where(last, top_all_idx % V, eos)
        better = fin > best_score[sent]
        if better.any():
            won = sent[better]
            best_score[won] = fin[better]
            best[won] = pad
            best[won, :length] = torch.cat([seqs[better, fin_beam[better], 1:],
                                          fin_tok[better, None]], 1)

        # live: the k best extensions by any token but eos
        cand[:, :, eos] = NEG_INF
        scores, idx = cand.view(n, -1).topk(k, dim=1)
        beam, tok = idx // V, idx % V
        seqs = torch.cat([seqs.gather(1, beam[..., None].expand(-1, -1, seqs.size(2))),
                          tok[..., None]], 2)
        if tree is not None:
            parent = (torch.arange(n, device=dev)[:, None] * k + beam).flatten()
            state = tree.advance(tree.select(state, parent), tok.flatten())

        done = last | (scores[:, 0] == NEG_INF)
        if early_stop and alpha >= 0:
            done |= best_score[sent] >= scores[:, 0] / lp_max[sent]
        keep = (~done).nonzero().flatten()
        if keep.numel() == 0:
            break
        # decoder rows to carry on: the surviving beams of sentences not done (finished
        # sentences stop costing compute); rows of one sentence share memory and mask
        row = (keep[:, None] * k + beam[keep]).flatten()
        if cache is not None:
            cache = model.reorder_cache(cache, row)
        if keep.numel() < n:
            memory, src_mask = memory.index_select(0, row), src_mask.index_select(0, row)
            seqs, scores, sent = seqs[keep], scores[keep], sent[keep]
            if tree is not None:
                state = tree.select(state, (keep[:, None] * k + torch.arange(k, device=dev)).flatten())
    return [_strip(ids, eos, pad) for ids in best.tolist()]


def _strip(ids: list[int], eos: int, pad: int) -> list[int]:
    """Tokens before the first eos or pad (neither is ever generated inside a hypothesis)."""
    for i, x in enumerate(ids):
        if x in (eos, pad):
            return ids[:i]
    return ids


@_decoding
def beam_search(model, src: torch.Tensor, beam_size: int, alpha: float, max_len_offset: int,
                bos: int = BOS, eos: int = EOS, pad: int = PAD, max_len_cap: int | None = None,
                min_len: int | torch.Tensor = 0, early_stop: bool = True,
                tree: TreeConstraint | None = None, words: torch.Tensor | None = None) -> list[list[int]]:
    """Best hypothesis of each source row (src: (B, S) ids, pad-padded), decoded on the key/value
    cache. min_len: at least that many tokens before eos, one int or a (B,) tensor (benchmarks use
    it to fix the length); tree with words ((B,) word counts): only well-formed trees with one
    preterminal per word (TreeConstraint); early_stop=False runs every sentence to max_len
    (tests check it changes nothing)."""
    return _beam_search(model, src, beam_size, alpha, max_len_offset, bos, eos, pad, max_len_cap,
                        min_len, use_cache=True, early_stop=early_stop, tree=tree, words=words)


@_decoding
def beam_search_nocache(model, src: torch.Tensor, beam_size: int, alpha: float,
                        max_len_offset: int, bos: int = BOS, eos: int = EOS, pad: int = PAD,
                        max_len_cap: int | None = None, min_len: int | torch.Tensor = 0,
                        early_stop: bool = True) -> list[list[int]]:
    """The same search, recomputing the decoder over the whole prefix every step (reference)."""
    return _beam_search(model, src, beam_size, alpha, max_len_offset, bos, eos, pad, max_len_cap,
                        min_len, use_cache=False, early_stop=early_stop)


# ---------------------------------------------------------------------------- greedy
@_decoding
def greedy(model, src: torch.Tensor, max_len_offset: int, bos: int = BOS, eos: int = EOS,
           pad: int = PAD, max_len_cap: int | None = None) -> list[list[int]]:
    """Most probable next token at every step, on the cache; stops at eos or max_len."""
    B = src.size(0)
    memory, src_mask = model.encode(src)
    cache = model.new_cache()
    max_lens = max_lengths(model, src, max_len_offset, pad, max_len_cap)
    tok = torch.full((B, 1), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    steps = []
    for t in range(int(max_lens.max()) if B else 0):
        logits = model.decode(tok, memory, src_mask, cache)[:, -1].float()
        logits[:, [pad, bos]] = NEG_INF
        tok = logits.argmax(-1, keepdim=True)
        steps.append(tok)
        done |= (tok[:, 0] == eos) | (t + 1 >= max_lens)
        if done.all():
            break
    rows = torch.cat(steps, 1).tolist() if steps else []
    return [_strip(ids[:n], eos, pad) for ids, n in zip(rows, max_lens.tolist())]


# ---------------------------------------------------------------------------- text in, text out
def translate(model, sp, sentences: list[str], eval_spec, batch_size_tokens: int = 4000,
              max_len_cap: int | None = None, tgt=None) -> list[str]:
    """Beam-search translations of `sentences` (same order), with eval_spec's beam_size,
    length_penalty and max_len_offset. Sources are encoded as in training (ids + eos), sorted by
    length and cut into batches of at most batch_size_tokens source positions, padding included
    (the beam multiplies the decoder's work by beam_size). tgt: the target side's own vocabulary
    (parsing's trees.SymbolVocab), else sp decodes; eval_spec.tree_constraint turns on
    TreeConstraint with one preterminal per space-separated source word."""
    device = next(model.parameters()).device
    tgt = tgt or sp
    tree = TreeConstraint(tgt) if getattr(eval_spec, "tree_constraint", False) else None
    cap = getattr(getattr(model, "spec", None), "max_len", None)  # positions the model embeds
    ids = [x[: cap - 1 if cap else None] + [EOS] for x in sp.encode(list(sentences), out_type=int)]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[str] = [""] * len(ids)
    start = 0
    while start < len(order):
        end = start + 1  # sorted ascending, so the last sentence sets the padded width
        while end < len(order) and (end + 1 - start) * len(ids[order[end]]) <= batch_size_tokens:
            end += 1
        batch = order[start:end]
        src = torch.full((len(batch), len(ids[batch[-1]])), PAD, dtype=torch.long)
        for r, i in enumerate(batch):
            src[r, :len(ids[i])] = torch.tensor(ids[i])
        # a linearized tree holds one POS tag (>= 1 piece) per word: min_len_per_word 1 forbids the
        # 2-token "(S" that an under-trained parser's beam otherwise prefers at alpha 0.3
        n_words = [len(sentences[i].split()) for i in batch]  # an empty source may translate to nothing
        floor = getattr(eval_spec, "min_len", 1)
        min_len = torch.tensor([max(min(floor, w), int(w * eval_spec.min_len_per_word)) for w in n_words],
                               device=device)
        words = torch.tensor([len(sentences[i].split()) for i in batch], device=device)
        hyps = beam_search(model, src.to(device), eval_spec.beam_size, eval_spec.length_penalty,
                           eval_spec.max_len_offset, max_len_cap=max_len_cap, min_len=min_len,
                           tree=tree, words=words)
        for i, h in zip(batch, hyps):
            out[i] = tgt.decode(h)
        start = end
    return out
