"""Parsing as the paper's Table 4 runs it: whole-symbol tree vocabulary, tree-constrained beam
search (property test on random tiny models), malformed counts and trivial-parser baselines."""
import random

import pytest
import torch

from zoo.evidence import metrics

from zoo.model import decode
from zoo.data import trees
from zoo.model.transformer import build_model
from zoo.config import ModelSpec
from zoo.spec import SpecError, resolve


@pytest.fixture(scope="module")
def vocab(data_root):
    return trees.SymbolVocab.from_targets(t for _, t in trees.load_pairs(data_root, "train"))


def test_symbol_vocab_round_trips_every_tree_of_the_sample(data_root, vocab):
    assert vocab.get_piece_size() < 100 and vocab.id_to_piece(3) == "</s>"
    n = 0
    for split in trees.SPLITS:
        for t in trees.load_trees(data_root, split):
            ids = vocab.encode(trees.linearize(t))
            assert 1 not in ids, split  # no <unk>: every label of dev and test is seen in training
            back = trees.delinearize(vocab.decode(ids), t.words(), tags=t.tags())
            assert trees.to_bracketed(back) == trees.to_bracketed(t)
            assert trees.malformed(vocab.decode(ids), len(t.words())) is None
            n += 1
    assert n == 3914


def test_malformed_reasons():
    assert trees.malformed("(S (NP XX )NP XX )S", 2) is None
    assert "match" in trees.malformed("(S (NP XX )VP XX )S", 2)
    assert "open" in trees.malformed("(S (NP XX )NP XX", 2)
    assert "preterminals" in trees.malformed("(S (NP XX )NP )S", 2)
    assert "roots" in trees.malformed("(S XX )S (S XX )S", 2)
    assert "empty" in trees.malformed("(S (NP )NP XX XX )S", 2)
    assert trees.malformed("", 1) is not None


def _random_model(seed: int, vocab, V_src: int = 30):
    torch.manual_seed(seed)
    pointer = seed % 2 == 1  # odd seeds: with the word pointer (every source piece a word)
    m = ModelSpec(N=1, d_model=16, d_ff=32, h=2, d_k=8, d_v=8, dropout=0.0, max_len=128, word_pointer=pointer)
    model = build_model(m, V_src, vocab.get_piece_size()).eval()
    if pointer:
        V = vocab.get_piece_size()
        model.set_word_pointer([True] * V_src, [vocab.is_preterminal(i) for i in range(V)])
    with torch.no_grad():  # a peaked, arbitrary distribution: the model "wants" malformed trees
        model.tgt_embed.weight.mul_(8 * random.Random(seed).random() + 1)
    return model


@pytest.mark.parametrize("seed", range(12))
def test_constrained_search_only_emits_well_formed_trees(vocab, seed):
    rng = random.Random(seed)
    model = _random_model(seed, vocab)
    tree = decode.TreeConstraint(vocab)
    B = 6
    words = torch.tensor([rng.randint(1, 12) for _ in range(B)])
    src = torch.zeros(B, int(words.max()) + 1, dtype=torch.long)
    for r, w in enumerate(words.tolist()):
        src[r, :w] = torch.tensor([rng.randint(4, 29) for _ in range(w)])
        src[r, w] = decode.EOS
    # offsets from the tightest feasible (max_len = words + 3 leaves room for (S XX.. )S) upwards
    for offset in (2, 5, 40):
        for k in (1, 3):
            hyps = decode.beam_search(model, src, k, rng.choice([0.0, 0.6, 1.0]), offset,
                                      tree=tree, words=words)
            for h, w in zip(hyps, words.tolist()):
                seq = vocab.decode(h)
                assert 4 + 0 <= min(h) and trees.malformed(seq, w) is None, (seq, w)
                assert len(h) + 1 <= w + 1 + offset  # within the length limit, eos included
    # without the constraint the same model emits malformed sequences: the test can fail
    free = [vocab.decode(h) for h in decode.beam_search(model, src, 3, 0.6, 40)]
    assert any(trees.malformed(s, w) for s, w in zip(free, words.tolist()))


def test_parse_f1_counts_malformed_and_scores_baselines(data_root):
    pairs = trees.load_pairs(data_root, "dev")[:40]
    srcs, refs = [s for s, _ in pairs], [t for _, t in pairs]
    r = metrics.parse_f1(srcs, refs, refs)
    assert r["f1"] == 100.0 and r["malformed"] == 0
    assert 5 < r["f1_flat"] < r["f1_right_branching"] < 40
    flat = [trees.linearize(trees.flat_tree(trees.delinearize(t, s.split(" ")))) for s, t in pairs]
    assert metrics.parse_f1(srcs, flat, refs)["f1"] == pytest.approx(r["f1_flat"])
    bad = metrics.parse_f1(srcs, ["(S"] * len(refs), refs)
    assert bad["malformed"] == len(refs) and bad["malformed_rate"] == 1.0


def test_constraint_needs_symbol_targets(tmp_path):
    spec = tmp_path / "p.yaml"
    spec.write_text("data: {dataset: wsj_sample}\neval: {tree_constraint: true}\n")
    with pytest.raises(SpecError, match="target_vocab"):
        resolve(spec)
    spec.write_text("data: {dataset: wsj_sample, target_vocab: symbols}\neval: {tree_constraint: true}\n")
    assert resolve(spec)[0].eval.tree_constraint


def test_word_pointer_decodes_incrementally_as_in_training(vocab):
    """The pointer's count of preterminals carries over the key/value cache (and its reordering):
    logits step by step equal the full teacher-forced pass, and word k's state is what is added."""
    torch.manual_seed(0)
    m = ModelSpec(N=2, d_model=16, d_ff=32, h=2, d_k=8, d_v=8, dropout=0.0, max_len=64, word_pointer=True)
    V_src = 30
    model = build_model(m, V_src, vocab.get_piece_size()).eval()
    word_start = [i == 3 or i % 2 == 0 for i in range(V_src)]  # even ids begin a word, eos (3) ends
    model.set_word_pointer(word_start, [vocab.is_preterminal(i) for i in range(vocab.get_piece_size())])
    src = torch.tensor([[4, 5, 6, 7, 9, 8, 3, 0], [10, 11, 12, 3, 0, 0, 0, 0]])
    memory, mask = model.encode(src)
    plain = model.w_pointer
    model.w_pointer = None  # the unreordered memory, for the check below
    memory0, _ = model.encode(src)
    model.w_pointer = plain
    # row 0: words start at 0, 2, 4 (ids 4, 6, 8... position 5 holds 8), eos at 6
    assert torch.allclose(memory[0, :4], memory0[0, [0, 2, 5, 6]])
    assert mask[0, 0, 0].tolist() == [True] * 7 + [False] and mask[1, 0, 0, :4].all()
    xx, np_, cnp = vocab.ids["XX"], vocab.ids["(NP"], vocab.ids[")NP"]
    tgt = torch.tensor([[2, np_, xx, xx, cnp, xx], [2, np_, xx, cnp, xx, xx]])
    full = model.decode(tgt, memory, mask)
    cache = model.new_cache()
    steps = []
    for t in range(tgt.size(1)):
        steps.append(model.decode(tgt[:, t:t + 1], memory, mask, cache))
        cache = model.reorder_cache(cache, torch.tensor([0, 1]))
    assert torch.allclose(full, torch.cat(steps, 1), atol=1e-5)
    assert cache[0]["n_pre"].flatten().tolist() == [3, 3]


def test_symbol_targets_may_keep_the_pos_tags():
    """data.preterminals: tags keeps each preterminal's tag in the target (XX by default); every tag is
    a preterminal for the constraint and the word pointer, and an unseen one becomes XX."""
    from zoo.data.trees import PLACEHOLDER, SymbolVocab
    train = ["(S (NP DT NN )NP (VP VBZ )VP . )S"]
    plain, tagged = SymbolVocab.from_targets(train), SymbolVocab.from_targets(train, tags=True)
    assert plain.decode(plain.encode(train[0])) == "(S (NP XX XX )NP (VP XX )VP XX )S"
    assert tagged.decode(tagged.encode(train[0])) == train[0]
    assert tagged.decode(tagged.encode("(S FOO )S")) == f"(S {PLACEHOLDER} )S"  # not a tag it knows
    assert all(tagged.is_preterminal(i) for i in tagged.encode("DT NN VBZ . -LRB- PRP$"))
    assert not any(tagged.is_preterminal(i) for i in tagged.encode("(S )S (NP"))
    assert tagged.get_piece_size() > plain.get_piece_size() + 40  # the PTB's tags are always in


def test_tags_as_preterminals_needs_the_symbol_vocabulary():
    from zoo.spec import resolve
    c = resolve("table4_wsj", "wsj_only", "smoke", ["data.preterminals=tags"])[0]
    assert c.data.preterminals == "tags" and c.config_hash() != resolve("table4_wsj", "wsj_only", "smoke")[0].config_hash()
    with pytest.raises(Exception, match="data.preterminals: tags needs data.target_vocab: symbols"):
        resolve("base", None, "smoke", ["data.preterminals=tags"])
