"""zoo.data.trees on the real WSJ sample (../shared/data/ptb-wsj-sample)."""
import pytest

from zoo.evidence import evalb
from zoo.data import trees
from zoo.data.trees import Tree, clean, delinearize, linearize, parse_trees, to_bracketed


@pytest.fixture(scope="module")
def sample(data_root):
    return trees.read_trees(data_root)


def test_reads_all_trees_from_tar_and_zip(data_root, sample):
    assert len(sample) == 199 and list(sample)[0] == "wsj_0001" and list(sample)[-1] == "wsj_0199"
    assert sum(map(len, sample.values())) == 3914
    z = trees.read_trees(data_root / "ptb-wsj-sample" / "treebank.zip")
    assert {k: list(map(str, v)) for k, v in z.items()} == {k: list(map(str, v)) for k, v in sample.items()}


def test_every_tree_round_trips(sample):
    n = 0
    for tree in (t for ts in sample.values() for t in ts):
        t = clean(tree)
        line = to_bracketed(t)
        assert to_bracketed(delinearize(linearize(t), t.words())) == line
        assert [to_bracketed(x) for x in parse_trees(line)] == [line]
        n += 1
    assert n == 3914


def test_splits(data_root, sample):
    sizes = {s: len(trees.load_pairs(data_root, s)) for s in trees.SPLITS}
    print(trees.describe_split(data_root))
    assert sizes == {"train": 3396, "dev": 273, "test": 245}
    assert sum(sizes.values()) == 3914  # every tree is used once (none is all traces)
    by_split = {s: {f for f in sample if trees.split_of(f) == s} for s in trees.SPLITS}
    assert set().union(*by_split.values()) == set(sample)
    assert sum(map(len, by_split.values())) == len(sample)  # no file in two splits
    assert "file number" in trees.describe_split()
    gold = trees.load_gold(data_root, "dev")
    pairs = trees.load_pairs(data_root, "dev")
    assert len(gold) == len(pairs)
    assert parse_trees(gold[0])[0].words() == pairs[0][0].split(" ")


def test_clean_by_hand(sample):
    t = parse_trees("( (S (NP-SBJ-1 (-NONE- *)) (VP (VBD went) (SBAR (-NONE- 0) (S (-NONE- *T*-2))) "
                    "(PP-LOC=2 (IN to) (NP (-LRB- -LRB-) (NNP X) (-RRB- -RRB-)))) (. .)) )")[0]
    assert t.label == ""
    assert to_bracketed(clean(t)) == (
        "(S (VP (VBD went) (PP (IN to) (NP (-LRB- -LRB-) (NNP X) (-RRB- -RRB-)))) (. .))")
    assert to_bracketed(clean(sample["wsj_0001"][0])) == (
        "(S (NP (NP (NNP Pierre) (NNP Vinken)) (, ,) (ADJP (NP (CD 61) (NNS years)) (JJ old)) (, ,)) "
        "(VP (MD will) (VP (VB join) (NP (DT the) (NN board)) (PP (IN as) (NP (DT a) (JJ nonexecutive) "
        "(NN director))) (NP (NNP Nov.) (CD 29)))) (. .))")
    assert [trees.strip_label(x) for x in ["NP-SBJ-1", "PP-LOC=2", "NP=3", "-NONE-", "-LRB-", "PRP$"]] == \
        ["NP", "PP", "NP", "-NONE-", "-LRB-", "PRP$"]
    assert clean(parse_trees("( (S (NP-SBJ (-NONE- *)) (VP (-NONE- *?*))) )")[0]) is None


def test_linearize_example():
    t = parse_trees("(S (NP (NNP Pierre) (NNP Vinken)) (VP (MD will) (VP (VB join) (NP (DT the) "
                    "(NN board)))) (. .))")[0]
    assert linearize(t) == "(S (NP NNP NNP )NP (VP MD (VP VB (NP DT NN )NP )VP )VP . )S"


WORDS = "Pierre Vinken will join the board .".split()


@pytest.mark.parametrize("seq", [
    "(S (NP NNP NNP )NP (VP MD (VP VB (NP DT NN )NP )VP )VP . )S",  # well formed
    "(S (NP NNP NNP )NP )NP )VP (VP MD (VP VB (NP DT NN . )S",  # unmatched closers, unclosed
    "(S (NP NNP NNP )NP (VP MD )VP )S",  # too short: 3 words missing
    "(S (NP NNP NNP NNP NN )NP (VP MD VB (NP DT NN NN NN )NP )VP . . )S",  # too long
    ")S NN (NP NNP )NP (VP VB",  # starts with a closer, several roots
    "(S (NP )NP (VP )VP )S",  # no preterminals at all
    "",  # nothing
    "(S (( NN( )) NN NN NN NN NN NN )S",  # junk labels
])
def test_repair_gives_valid_trees_with_the_right_words(seq):
    t = delinearize(seq, WORDS)
    line = to_bracketed(t)
    assert t.words() == WORDS
    assert to_bracketed(parse_trees(line)[0]) == line
    gold = "(S (NP (NNP Pierre) (NNP Vinken)) (VP (MD will) (VP (VB join) (NP (DT the) (NN board)))) (. .))"
    tagged = to_bracketed(delinearize(seq, WORDS, tags=parse_trees(gold)[0].tags()))
    s = evalb.score([gold], [tagged]).sentences[0]
    assert s.status == 0  # with gold tags every repaired output scores


def test_repair_details():
    short = delinearize("(S (NP NNP NNP )NP )S", WORDS)
    assert to_bracketed(short) == ("(S (NP (NNP Pierre) (NNP Vinken)) (XX will) (XX join) (XX the) "
                                   "(XX board) (XX .))")
    assert to_bracketed(delinearize("NN", ["Hi"])) == "(NN Hi)"
    assert delinearize("(S NN )S (S NN )S", ["a", "b"]).label == "TOP"
    deep = delinearize("(NP " * 5000 + "NN" + " )NP" * 5000, ["x"])  # no RecursionError
    assert deep.words() == ["x"] and to_bracketed(deep).count("(") == trees.MAX_DEPTH + 1


def test_repair_random_sequences():
    import random
    rng = random.Random(0)
    vocab = ["(S", "(NP", "(VP", ")S", ")NP", ")VP", ")", "NN", "VB", ".", ",", "DT"]
    for _ in range(500):
        seq = " ".join(rng.choices(vocab, k=rng.randrange(40)))
        line = to_bracketed(delinearize(seq, WORDS))
        assert parse_trees(line)[0].words() == WORDS, seq


def test_delinearized_gold_scores_100(data_root):
    for split in ("dev", "test"):
        gold = trees.load_gold(data_root, split)
        test = [to_bracketed(delinearize(tgt, src.split(" "))) for src, tgt in trees.load_pairs(data_root, split)]
        r = evalb.score(gold, test)
        assert r.errors == [] and r.all.valid == len(gold)
        assert r.all.fmeasure == 100.0 and r.all.tagging_accuracy == 100.0
        assert evalb.f1(gold, test) == 100.0


def test_full_wsj_layout(tmp_path, sample):
    # a stand-in for the licensed treebank: NN/wsj_NNNN.mrg, standard sections
    text = "\n".join(to_bracketed(t) for t in sample["wsj_0001"])
    for sec, fid in [("02", "wsj_0200"), ("21", "wsj_2101"), ("22", "wsj_2200"), ("23", "wsj_2300"), ("24", "wsj_2400")]:
        (tmp_path / sec).mkdir()
        (tmp_path / sec / f"{fid}.mrg").write_text(text)
    assert set(trees.read_wsj_sections(tmp_path)) == {"wsj_0200", "wsj_2101", "wsj_2200", "wsj_2300", "wsj_2400"}
    n = len(sample["wsj_0001"])
    assert [len(trees.load_trees(tmp_path, s)) for s in ("train", "dev", "test")] == [2 * n, n, n]
    assert "sections" in trees.describe_split(tmp_path)


def test_tree_type():
    t = Tree("S", [Tree("NN", word="a"), Tree("VP", [Tree("VB", word="b")])])
    assert (t.words(), t.tags(), str(t)) == (["a", "b"], ["NN", "VB"], "(S (NN a) (VP (VB b)))")
    with pytest.raises(ValueError):
        parse_trees("(S (NP a b))")
    with pytest.raises(ValueError):
        parse_trees("(S (NP (NN a))")
