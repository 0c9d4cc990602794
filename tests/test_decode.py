"""Beam search: finds what greedy misses, cache == recompute, length penalty, max length."""
import math
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from zoo.model.decode import beam_search, beam_search_nocache, greedy, length_penalty, translate
from zoo.model.transformer import Transformer
from zoo.config import ModelSpec

BOS, EOS = 2, 3
A, B, C, D, E = 4, 5, 6, 7, 8
V = 9


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    # tiny tensors: intra-op threads only add sync overhead, badly so on a busy machine
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


class Bigram(nn.Module):
    """A hand-set 'translation model': P(next | previous token), whatever the source.

    The distribution depends only on the last token, so the cached path (fed one token per step)
    and the recomputing path (fed the whole prefix) see the same logits."""

    def __init__(self, table: dict[int, dict[int, float]], max_len: int = 64):
        super().__init__()
        probs = torch.full((V, V), 1e-6)
        for prev, nxt in table.items():
            for tok, p in nxt.items():
                probs[prev, tok] = p
        self.register_buffer("logp", probs.log())
        self.spec = SimpleNamespace(max_len=max_len)

    def encode(self, src):
        return src.float().unsqueeze(-1), (src != 0)[:, None, None, :]

    def decode(self, tgt_in, memory, src_mask, cache=None):
        assert memory.size(0) == tgt_in.size(0) == src_mask.size(0)
        return self.logp[tgt_in]

    def new_cache(self):
        return []

    @staticmethod
    def reorder_cache(cache, index):
        return cache


def src_batch(*lengths):
    src = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for r, n in enumerate(lengths):
        src[r, :n] = 4
    return src


def test_beam_finds_global_best_that_greedy_misses():
    # a is locally best (0.6 > 0.4) but every sequence through it has P <= 0.6 * 0.55 = 0.33,
    # while b e <eos> has P = 0.4; all complete sequences have the same length.
    m = Bigram({BOS: {A: 0.6, B: 0.4}, A: {C: 0.55, D: 0.45}, C: {EOS: 1}, D: {EOS: 1},
                B: {E: 1}, E: {EOS: 1}})
    src = src_batch(3, 2)
    assert greedy(m, src, 10) == [[A, C], [A, C]]
    assert beam_search(m, src, 1, 0.0, 10) == [[A, C], [A, C]]
    for k in (2, 3, 5):
        assert beam_search(m, src, k, 0.6, 10) == [[B, E], [B, E]]
        assert beam_search_nocache(m, src, k, 0.6, 10) == [[B, E], [B, E]]


def test_length_penalty_changes_preference():
    # short: a <eos>, log P = log 0.55, |Y| = 2;  long: b c d e <eos>, log P = log 0.45, |Y| = 5
    m = Bigram({BOS: {A: 0.55, B: 0.45}, A: {EOS: 1}, B: {C: 1}, C: {D: 1}, D: {E: 1},
                E: {EOS: 1}})
    short, long = math.log(0.55), math.log(0.45)
    for alpha in (0.0, 0.6, 1.0, 2.0):
        expect = [A] if short / length_penalty(2, alpha) > long / length_penalty(5, alpha) else [B, C, D, E]
        assert beam_search(m, src_batch(3), 2, alpha, 10) == [expect], alpha
    assert beam_search(m, src_batch(3), 2, 0.0, 10) == [[A]]  # no penalty: the likelier, short one
    assert beam_search(m, src_batch(3), 2, 1.0, 10) == [[B, C, D, E]]  # alpha 1 rewards length


def test_max_length_respected():
    # eos is (nearly) impossible: every hypothesis runs to its sentence's own max length
    m = Bigram({BOS: {A: 0.7, B: 0.3}, A: {A: 0.9, B: 0.1}, B: {A: 0.5, B: 0.5}}, max_len=12)
    src = src_batch(2, 5, 9)
    for search in (beam_search, beam_search_nocache):
        out = search(m, src, 3, 0.6, 4)
        assert [len(y) for y in out] == [6, 9, 12]  # source length + 4, capped at spec.max_len 12
        assert [len(y) for y in search(m, src, 3, 0.6, 4, max_len_cap=7)] == [6, 7, 7]
    assert [len(y) for y in greedy(m, src, 4)] == [6, 9, 12]
    assert all(y == [A] * len(y) for y in greedy(m, src, 4))


TINY = ModelSpec(N=2, d_model=32, d_ff=64, h=4, d_k=8, d_v=8, dropout=0.1, max_len=64)


class EosRamp(Transformer):
    """A random tiny Transformer whose eos logit rises with the position, so that hypotheses end
    at many different lengths (a plain random model either always or never ends at once)."""

    slope, at = 0.5, 6

    def decode(self, tgt_in, memory, src_mask, cache=None, packed=None):
        start = cache[0]["k"].size(2) if cache is not None and "k" in cache[0] else 0
        logits = super().decode(tgt_in, memory, src_mask, cache, packed)
        pos = torch.arange(start, start + tgt_in.size(1), dtype=torch.float)
        logits[..., EOS] += self.slope * (pos - self.at)
        return logits


def tiny_model(seed=0, vocab=12, slope=0.5):
    torch.manual_seed(seed)
    m = EosRamp(TINY, vocab)
    m.slope = slope
    return m


def test_cached_equals_nocache_on_transformer():
    for slope in (0.5, 1.0):
        m = tiny_model(slope=slope)
        src = torch.randint(4, 12, (6, 7))
        src[1, 4:] = 0  # padding
        src[3, 2:] = 0
        for k, alpha in ((1, 0.0), (4, 0.6), (3, 1.0)):
            cached = beam_search(m, src, k, alpha, 8)
            if alpha > 0:
                assert len({len(y) for y in cached}) > 1  # sentences finish at different steps
            assert cached == beam_search_nocache(m, src, k, alpha, 8)
            assert cached == beam_search(m, src, k, alpha, 8, early_stop=False)  # exact early stop
            assert all(BOS not in y and EOS not in y and 0 not in y for y in cached)
    assert m.training  # the training flag is restored


def test_early_stop_saves_steps():
    m = tiny_model(slope=1.0)
    calls, decode = [0], m.decode

    def counting(*args, **kwargs):
        calls[0] += 1
        return decode(*args, **kwargs)

    m.decode = counting
    src = torch.randint(4, 12, (6, 7))
    beam_search(m, src, 4, 0.6, 8)
    assert calls[0] < 7 + 8  # stopped before max_len = 15 steps


def test_beam_scores_at_least_greedy_on_transformer():
    # with alpha 0 beam search maximizes log P, so greedy's sequence can never score higher
    m = tiny_model(2, slope=1.0).eval()
    src = torch.randint(4, 12, (4, 6))

    def logprob(i, ys):
        with torch.no_grad():
            lp = m(src[i:i + 1], torch.tensor([[BOS] + ys]))[0].log_softmax(-1)
        ids = ys + [EOS] if len(ys) < 6 + 5 else ys  # a hypothesis cut at max_len has no eos
        return sum(lp[t, y].item() for t, y in enumerate(ids))

    beams, greedies = beam_search(m, src, 4, 0.0, 5), greedy(m, src, 5)
    assert beams != greedies
    for i in range(4):
        assert logprob(i, beams[i]) >= logprob(i, greedies[i]) - 1e-5


def test_min_len_forces_length():
    m = tiny_model(2, slope=3.0)
    src = torch.randint(4, 12, (3, 5))
    assert [len(y) for y in beam_search(m, src, 2, 0.6, 10, min_len=13)] == [13, 13, 13]
    assert all(len(y) < 13 for y in beam_search(m, src, 2, 0.6, 10))  # eos earlier without it
    per_sentence = beam_search(m, src, 2, 0.6, 10, min_len=torch.tensor([13, 0, 14]))
    assert len(per_sentence[0]) == 13 and len(per_sentence[1]) < 13 and len(per_sentence[2]) == 14


class Copy(nn.Module):
    """Copies the source (which ends in eos, as translate builds it): tests translate's plumbing."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))  # translate reads the device from a parameter

    def encode(self, src):
        return src, (src != 0)[:, None, None, :]

    def decode(self, tgt_in, memory, src_mask, cache=None):
        start = cache[0].setdefault("n", 0) if cache is not None else 0
        if cache is not None:
            cache[0]["n"] += tgt_in.size(1)
        src = torch.cat([memory, torch.full_like(memory[:, :1], EOS)], 1)
        pos = (start + torch.arange(tgt_in.size(1))).clamp(max=src.size(1) - 1)
        return torch.nn.functional.one_hot(src[:, pos], 20).float() * 10

    def new_cache(self):
        return [{}]

    @staticmethod
    def reorder_cache(cache, index):
        return cache


class WordPieces:
    """A sentencepiece stand-in: one id per word."""
    words = "zero unk bos eos ein Hund läuft im Park zwei Kinder spielen".split()

    def encode(self, sentences, out_type=int):
        return [[self.words.index(w) for w in s.split()] for s in sentences]

    def decode(self, ids):
        return " ".join(self.words[i] for i in ids)


def test_translate_keeps_order():
    sents = ["ein Hund läuft im Park", "zwei Kinder", "", "Kinder spielen im Park ein Hund", "ein"]
    spec = SimpleNamespace(beam_size=3, length_penalty=0.6, max_len_offset=5, min_len_per_word=0)
    for budget in (1, 12, 1000):  # one sentence per batch ... all in one batch
        assert translate(Copy(), WordPieces(), sents, spec, batch_size_tokens=budget) == sents


class EosFirst(Copy):
    """Prefers ending at once (an under-trained model's empty output), then copies the source."""

    def decode(self, tgt_in, memory, src_mask, cache=None):
        out = super().decode(tgt_in, memory, src_mask, cache)
        if tgt_in.size(1) == 1 and (cache is None or cache[0]["n"] == 1):  # the first step
            out[:, :, EOS] = 100.0
        return out


def test_eos_is_banned_at_the_first_step_by_default():
    sents = ["ein Hund läuft", "zwei Kinder", ""]
    spec = SimpleNamespace(beam_size=3, length_penalty=0.6, max_len_offset=5, min_len_per_word=0, min_len=0)
    assert translate(EosFirst(), WordPieces(), sents, spec) == ["", "", ""]  # empty outputs win without the ban
    spec.min_len = 1  # the spec's default
    out = translate(EosFirst(), WordPieces(), sents, spec)
    assert all(out[:2]) and out[2] == ""  # nothing forces words out of an empty source


def greedy_nocache(m, src, max_len_offset):
    """greedy's choices, recomputing the decoder over the whole prefix every step (reference)."""
    memory, mask = m.encode(src)
    max_lens = [min(int(n) + max_len_offset, m.spec.max_len) for n in (src != 0).sum(1)]
    out = []
    for r in range(src.size(0)):
        ys = [BOS]
        while len(ys) - 1 < max_lens[r] and ys[-1] != EOS:
            logits = m.decode(torch.tensor([ys]), memory[r:r + 1], mask[r:r + 1])[0, -1].float()
            logits[[0, BOS]] = float("-inf")
            ys.append(int(logits.argmax()))
        out.append([y for y in ys[1:] if y != EOS])
    return out


@pytest.mark.parametrize("change", [
    {"positional_encoding": "rope"}, {"positional_encoding": "alibi"}, {"positional_encoding": "none"},
    {"h_kv": 1}, {"h_kv": 2}, {"norm_position": "pre"}, {"norm": "rmsnorm"}, {"ffn": "swiglu"},
    {"norm_position": "pre", "norm": "rmsnorm", "ffn": "swiglu", "positional_encoding": "rope", "h_kv": 2},
], ids=lambda c: "+".join(f"{k}={v}" for k, v in c.items()))
def test_cached_equals_nocache_for_every_component(change):
    """The key/value cache stays right beyond the paper: rotary keys turned once by their absolute
    position, ALiBi biased by the distance to the current query, shared key/value heads, a final norm."""
    torch.manual_seed(0)
    m = EosRamp(TINY.model_copy(update=change), 12)
    src = torch.randint(4, 12, (5, 7))
    src[1, 4:] = 0  # padding
    src[3, 2:] = 0
    for k, alpha in ((1, 0.0), (4, 0.6)):
        cached = beam_search(m, src, k, alpha, 8)
        assert cached == beam_search_nocache(m, src, k, alpha, 8), (k, alpha)
    m.eval()
    with torch.no_grad():
        assert greedy(m, src, 8) == greedy_nocache(m, src, 8)
        tgt = torch.randint(4, 12, (5, 9))
        memory, mask = m.encode(src)
        cache = m.new_cache()
        steps = [m.decode(tgt[:, t:t + 1], memory, mask, cache) for t in range(tgt.size(1))]
        torch.testing.assert_close(torch.cat(steps, 1), m(src, tgt), atol=1e-5, rtol=1e-5)
