"""Penn Treebank WSJ trees as a sequence-to-sequence parsing corpus (the paper's Table 4).

Data. The project's data directory holds the NLTK 10% sample of the WSJ treebank
(`ptb-wsj-sample/treebank_combined_mrg.tar.gz`, or the origin `treebank.zip`): files
wsj_0001..wsj_0199, 3,914 trees, all from sections 00-01. The standard split (train 02-21,
dev 22, test 23) is therefore impossible; the sample is split by file number instead:
train wsj_0001-0159, dev wsj_0160-0179, test wsj_0180-0199 (`SPLITS`, `describe_split()`).
A full licensed treebank laid out as `NN/wsj_NNNN.mrg` is read by `read_wsj_sections()`
and split by the standard sections. The sample is (C) LDC 1995, non-commercial use only:
it is read in place from the data directory and never copied into the project.

Cleaning (`clean`), as parsing work does: drop the empty root label `( (S ...) )`, remove
`-NONE-` traces and the constituents left empty, strip function tags and indices
(`NP-SBJ-1` -> `NP`, `PP-LOC=2` -> `PP`; labels written as `-XXX-`, such as `-LRB-`, stay).

Linearization (Vinyals, Kaiser et al. 2014, "Grammar as a Foreign Language"): the source is
the sentence's words joined by spaces; the target is the tree, depth first, as tokens:

    (LABEL   opens a constituent
    )LABEL   closes it (delinearize accepts any ')...' token and closes the innermost one)
    TAG      a preterminal: the POS tag stands in the word's place; the word itself is not
             in the target (it is a placeholder, like Vinyals' XX) and comes back from the
             source in `delinearize`

    Pierre Vinken will join the board .
    (S (NP NNP NNP )NP (VP MD (VP VB (NP DT NN )NP )VP )VP . )S

POS tags are kept because EVALB's COLLINS.prm deletes punctuation by its tag.
`delinearize` repairs whatever a model emits so that every output can be scored: unmatched
closers are dropped, open constituents are closed, constituents without words vanish, extra
preterminals are dropped and missing words are attached under the root with the tag XX.
"""
from __future__ import annotations

import functools
import re
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SymbolVocab", "Tree", "delinearize", "flat_tree", "malformed", "right_branching", "to_bracketed",
           "word_pointer_tables"]

# The sample has no sections 02-23: split by file number (inclusive ranges).
SPLITS = {"train": (1, 159), "dev": (160, 179), "test": (180, 199)}
# A full treebank: the standard WSJ sections.
WSJ_SECTIONS = {"train": tuple(range(2, 22)), "dev": (22,), "test": (23,)}
DEFAULT_TAG = "XX"  # tag for words a predicted sequence left out
MAX_DEPTH = 200  # deeper predicted nesting is ignored (PTB trees are < 30 deep)

_FILE_ID = re.compile(r"(?:^|/)(wsj_(\d{4}))\.mrg$", re.IGNORECASE)
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass
class Tree:
    """A constituent: a label and children, or a preterminal: a tag (label) and a word."""
    label: str
    children: list[Tree] = field(default_factory=list)
    word: str | None = None

    def words(self) -> list[str]:
        return [t.word for t in self.preterminals()]

    def tags(self) -> list[str]:
        return [t.label for t in self.preterminals()]

    def preterminals(self) -> list[Tree]:
        if self.word is not None:
            return [self]
        return [p for c in self.children for p in c.preterminals()]

    def __str__(self) -> str:
        return to_bracketed(self)


def parse_trees(text: str) -> list[Tree]:
    """All trees in PTB bracketed text: several per file, spanning lines, empty root labels."""
    trees, stack = [], []
    toks = _TOKEN.findall(text)
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok == "(":
            label = ""  # "( (S ...) )": the PTB root has no label
            if i + 1 < len(toks) and toks[i + 1] not in ("(", ")"):
                label, i = toks[i + 1], i + 1
            stack.append(Tree(label))
        elif tok == ")":
            if not stack:
                raise ValueError(f"unbalanced ')' at token {i}")
            node = stack.pop()
            (stack[-1].children if stack else trees).append(node)
        else:  # a word: must be the only child of a preterminal
            if not stack or stack[-1].children or stack[-1].word is not None:
                raise ValueError(f"word {tok!r} outside a (TAG word) preterminal at token {i}")
            stack[-1].word = tok
        i += 1
    if stack:
        raise ValueError("unbalanced '(': the text ends inside a tree")
    return trees


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # old treebank files may hold stray Latin-1 bytes
        return data.decode("latin-1")


def _find_sample(root: Path) -> Path:
    """The sample archive (tar.gz or NLTK zip) or a folder of combined .mrg files under root."""
    if root.is_file():
        return root
    for d in (root, root / "ptb-wsj-sample"):
        for name in ("treebank_combined_mrg.tar.gz", "treebank.zip"):
            if (d / name).is_file():
                return d / name
        for d2 in (d, d / "combined"):
            if any(d2.glob("wsj_*.mrg")):
                return d2
    raise FileNotFoundError(
        f"no WSJ treebank sample under {root}: expected ptb-wsj-sample/treebank_combined_mrg.tar.gz "
        "or treebank.zip (the NLTK 'treebank' package), or a folder of combined wsj_NNNN.mrg files")


@functools.lru_cache(maxsize=4)
def _read_source(src: str) -> dict[str, list[Tree]]:
    path, texts = Path(src), {}
    if path.is_dir():
        for f in sorted(path.glob("wsj_*.mrg")):
            texts[f.stem] = _decode(f.read_bytes())
    elif path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():  # the zip also has parsed/*.prd: only combined/ has tags
                m = _FILE_ID.search(name)
                if m and "combined/" in name:
                    texts[m.group(1)] = _decode(z.read(name))
    else:
        with tarfile.open(path, "r:*") as tar:  # read in place, never extracted
            for member in tar.getmembers():
                m = _FILE_ID.search(member.name)
                if m and member.isfile():
                    texts[m.group(1)] = _decode(tar.extractfile(member).read())
    return {fid: parse_trees(texts[fid]) for fid in sorted(texts)}


def read_trees(root: Path) -> dict[str, list[Tree]]:
    """Raw trees of the WSJ sample by file id ('wsj_0001': [...]), from the data directory,
    its ptb-wsj-sample folder, the .tar.gz or .zip itself, or a folder of .mrg files.
    Cached: treat the trees as read-only (clean() builds new ones)."""
    return dict(_read_source(str(_find_sample(Path(root)).resolve())))


def _wsj_dir(root: Path) -> Path | None:
    """The folder holding section folders 00..24 of a full treebank, if root has one."""
    for d in (root, root / "wsj", root / "parsed" / "mrg" / "wsj",
              root / "treebank_3" / "parsed" / "mrg" / "wsj"):
        if (d / "23").is_dir() and any((d / "23").glob("wsj_*.mrg")):
            return d
    return None


def read_wsj_sections(root: Path, sections=None) -> dict[str, list[Tree]]:
    """Raw trees of a full licensed WSJ treebank (root/NN/wsj_NNNN.mrg) by file id;
    `sections` (ints) limits what is read."""
    d = _wsj_dir(Path(root))
    if d is None:
        raise FileNotFoundError(f"no WSJ treebank sections under {root}: expected NN/wsj_NNNN.mrg "
                                "(e.g. 02/wsj_0200.mrg ... 23/wsj_2300.mrg)")
    out = {}
    for f in sorted(d.glob("[0-9][0-9]/wsj_*.mrg")):
        if sections is None or int(f.parent.name) in sections:
            out[f.stem] = parse_trees(_decode(f.read_bytes()))
    return out


def strip_label(label: str) -> str:
    """NP-SBJ-1 -> NP, PP-LOC=2 -> PP; -NONE-, -LRB-, -RRB- are names, not tags: kept."""
    if len(label) > 1 and label.startswith("-") and label.endswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def clean(tree: Tree) -> Tree | None:
    """The tree parsers are trained and scored on (None if nothing but traces is left)."""
    def walk(t: Tree) -> Tree | None:
        if t.word is not None:
            return None if t.label == "-NONE-" else Tree(strip_label(t.label), word=t.word)
        kids = [k for k in map(walk, t.children) if k is not None]
        return Tree(strip_label(t.label), kids) if kids else None

    t = walk(tree)
    if t is not None and t.label == "":  # the PTB's unlabeled root
        t = t.children[0] if len(t.children) == 1 else Tree("TOP", t.children)
    return t


def split_of(file_id: str, full: bool = False) -> str | None:
    """'train', 'dev', 'test' or None for a file id such as 'wsj_0163'."""
    num = int(file_id[-4:])
    for name in SPLITS:
        if full and num // 100 in WSJ_SECTIONS[name]:
            return name
        if not full and SPLITS[name][0] <= num <= SPLITS[name][1]:
            return name
    return None


def describe_split(root: Path | None = None) -> str:
    """How the trees are split (with tree counts when root is given)."""
    if root is not None and _wsj_dir(Path(root)) is not None:
        text = "full WSJ treebank: standard sections, train 02-21, dev 22, test 23"
    else:
        text = ("WSJ sample (NLTK 10%, sections 00-01 only, so not the standard 02-21/22/23 "
                "split): split by file number, train wsj_0001-0159, dev wsj_0160-0179, "
                "test wsj_0180-0199")
    if root is not None:
        text += " (" + ", ".join(f"{s} {len(load_trees(root, s))} trees" for s in SPLITS) + ")"
    return text


@functools.lru_cache(maxsize=8)
def _load_trees(root: str, split: str) -> tuple[Tree, ...]:
    full = _wsj_dir(Path(root)) is not None
    by_file = read_wsj_sections(Path(root), WSJ_SECTIONS[split]) if full else read_trees(Path(root))
    out = []
    for fid, trees in by_file.items():
        if split_of(fid, full) == split:
            out += [t for t in map(clean, trees) if t is not None]
    return tuple(out)


def load_trees(root: Path, split: str) -> list[Tree]:
    """Cleaned trees of a split, in file order (full treebank if root has sections 00-24)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: expected one of {', '.join(SPLITS)}")
    return list(_load_trees(str(Path(root).resolve()), split))


def to_bracketed(tree: Tree) -> str:
    """One-line PTB bracketing, the format EVALB reads: (S (NP (NNP Pierre)) ...)."""
    if tree.word is not None:
        return f"({tree.label} {tree.word})"
    return f"({tree.label} " + " ".join(map(to_bracketed, tree.children)) + ")"


def linearize(tree: Tree) -> str:
    """The target sequence: (S (NP NNP NNP )NP ... )S (see the module docstring)."""
    if tree.word is not None:
        return tree.label
    return " ".join([f"({tree.label}", *map(linearize, tree.children), f"){tree.label}"])


def _safe(label: str, default: str) -> str:
    """A label EVALB can read back: no brackets inside, never empty."""
    return re.sub(r"[()]", "", label) or default


def delinearize(seq: str, words: list[str], tags: list[str] | None = None) -> Tree:
    """A tree over exactly `words` from a (possibly malformed) predicted sequence.

    `tags`, if given (gold POS tags, one per word), replace the predicted ones: EVALB deletes
    punctuation by tag, so a mis-tagged ',' or '.' would make the sentence a length-mismatch
    error (and more than MAX_ERROR such errors stop EVALB)."""
    root = Tree("")  # collects the top-level constituents
    stack, n, skipped = [root], 0, 0

    def close():  # pop the innermost constituent; one that got no words vanishes
        node = stack.pop()
        if not node.children:
            stack[-1].children.pop()

    for tok in seq.split():
        if tok.startswith("("):
            if len(stack) > MAX_DEPTH:  # runaway nesting: ignore it (and its closer)
                skipped += 1
                continue
            node = Tree(_safe(tok[1:], "X"))
            stack[-1].children.append(node)
            stack.append(node)
        elif tok.startswith(")"):
            if skipped:
                skipped -= 1
            elif len(stack) > 1:  # closers with nothing open are dropped
                close()
        elif n < len(words):  # a preterminal takes the next word; extra ones are dropped
            tag = tags[n] if tags else _safe(tok, DEFAULT_TAG)
            stack[-1].children.append(Tree(tag, word=words[n]))
            n += 1
    while len(stack) > 1:  # constituents still open are closed
        close()
    kids = root.children
    missing = [Tree(tags[i] if tags else DEFAULT_TAG, word=words[i]) for i in range(n, len(words))]
    if len(kids) == 1 and kids[0].word is None:
        kids[0].children += missing  # missing words go under the root
        return kids[0]
    if len(kids) == 1 and not missing:
        return kids[0]  # a one-word sentence: a lone preterminal
    return Tree("TOP", kids + missing)  # several roots (or none): TOP, which EVALB ignores


def load_pairs(root: Path, split: str) -> list[tuple[str, str]]:
    """(source words, linearized target) for every cleaned tree of the split."""
    return [(" ".join(t.words()), linearize(t)) for t in load_trees(root, split)]


def load_gold(root: Path, split: str) -> list[str]:
    """The split's cleaned gold trees, one EVALB line each (same order as load_pairs)."""
    return [to_bracketed(t) for t in load_trees(root, split)]


# ---------------------------------------------------------------------------- whole-symbol targets
PLACEHOLDER = "XX"  # every preterminal in a symbol target (Vinyals, Kaiser et al. 2014 normalize tags)
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")  # ids 0-3, as in the BPE models
# The Penn Treebank II phrase labels (Bies et al. 1995), so a label rare enough to miss the
# training split (the sample's dev has one WHADJP) still has its symbols.
PTB_LABELS = ("ADJP ADVP CONJP FRAG INTJ LST NAC NP NX PP PRN PRT QP RRC S SBAR SBARQ SINV SQ UCP "
              "VP WHADJP WHADVP WHNP WHPP X").split()
# ... and its part-of-speech tags (Santorini 1990), for targets that keep them (data.preterminals: tags)
PTB_TAGS = ("CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH "
            "VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB # $ '' `` , . : -LRB- -RRB- -NONE-").split()


class SymbolVocab:
    """The tree side's own vocabulary: one id per whole symbol, `(NP`, `)NP` or `XX`.

    Preterminals are normalized to XX by default: the F1 we report puts the gold POS tags back on the
    words (zoo.evidence.metrics.parse_f1), so the tags are not scored. With `tags` (data.preterminals: tags)
    each keeps its POS tag: the model predicts them too, a richer target for the same words (the
    search constraint counts any non-bracket symbol as a preterminal; a tag never seen becomes XX).
    Built from the training targets only (sorted, so the ids are a function of the data);
    the PTB's phrase labels are always in; other labels first seen in dev or test map to <unk>. Same calls as a sentencepiece model where the
    code shares them: encode, decode, get_piece_size, id_to_piece."""

    def __init__(self, symbols, tags: bool = False):
        self.tags = tags  # keep each preterminal's POS tag (else XX for all)
        ptb = {b + x for x in PTB_LABELS for b in "()"} | (set(PTB_TAGS) if tags else set())
        self.pieces = list(SPECIALS) + sorted(set(symbols) | ptb | {PLACEHOLDER})
        self.ids = {p: i for i, p in enumerate(self.pieces)}

    @classmethod
    def from_targets(cls, targets, tags: bool = False) -> "SymbolVocab":
        return cls((s for t in targets for s in t.split() if tags or s[0] in "()"), tags)

    def normalize(self, tok: str) -> str:
        return tok if tok[0] in "()" or (self.tags and tok in self.ids) else PLACEHOLDER

    def encode(self, text: str) -> list[int]:
        return [self.ids.get(self.normalize(t), 1) for t in text.split()]

    def decode(self, ids) -> str:
        return " ".join(self.pieces[i] for i in ids if i >= len(SPECIALS))

    def get_piece_size(self) -> int:
        return len(self.pieces)

    def id_to_piece(self, i: int) -> str:
        return self.pieces[i]

    def is_preterminal(self, i: int) -> bool:
        """Symbol i covers one word (XX, or a tag an older vocabulary kept)."""
        return i >= len(SPECIALS) and self.pieces[i][0] not in "()"

    def closer(self, i: int) -> int | None:
        """The id of the symbol that closes opener i (None if i opens nothing or has no closer)."""
        p = self.pieces[i]
        return self.ids.get(")" + p[1:]) if p.startswith("(") else None


def malformed(seq: str, n_words: int) -> str | None:
    """Why a predicted sequence is not a well-formed tree over n_words words (None if it is):
    one root, every closer matching its opener, no empty constituent, one preterminal per word.
    delinearize repairs all of these; this counts what it had to repair."""
    stack, n, roots, empty = [], 0, 0, False
    for tok in seq.split():
        if tok.startswith("("):
            if not stack:
                roots += 1
            stack.append([tok[1:], 0])
        elif tok.startswith(")"):
            if not stack or stack[-1][0] != tok[1:]:
                return f"closer {tok} does not match " + (f"({stack[-1][0]}" if stack else "any opener")
            label, kids = stack.pop()
            empty |= kids == 0
            if stack:
                stack[-1][1] += 1
        else:
            if not stack:
                return "preterminal outside the root"
            stack[-1][1] += 1
            n += 1
    if stack:
        return f"{len(stack)} constituents left open"
    if roots != 1:
        return f"{roots} roots"
    if empty:
        return "empty constituent"
    if n != n_words:
        return f"{n} preterminals for {n_words} words"
    return None


# ---------------------------------------------------------------------------- trivial parsers
def flat_tree(gold: Tree) -> Tree:
    """Baseline: (S tag tag ... )S, one S over the sentence's preterminals and nothing inside."""
    return Tree("S", [Tree(t, word=w) for t, w in zip(gold.tags(), gold.words())])


def right_branching(gold: Tree, label: str = "VP") -> Tree:
    """Baseline: S over the sentence, then every suffix of two or more words a constituent
    labelled `label` (VP: of NP, VP and S the best on the dev split)."""
    pre = [Tree(t, word=w) for t, w in zip(gold.tags(), gold.words())]
    node = pre[-1]
    for i in range(len(pre) - 2, -1, -1):
        node = Tree("S" if i == 0 else label, [pre[i], node])
    return node if node.word is None else Tree("S", [node])


def word_pointer_tables(sp, vocab: SymbolVocab) -> tuple[list[bool], list[bool]]:
    """What the model's word pointer needs from the vocabularies: which source pieces begin a word
    (sentencepiece marks them with a leading U+2581; eos stands for the end of the sentence) and
    which target symbols are preterminals. A source sentence's words are its space-separated tokens,
    so the word-initial pieces count its words (as TreeConstraint counts them)."""
    eos = sp.eos_id()
    word_start = [sp.id_to_piece(i).startswith("\u2581") or i == eos for i in range(sp.get_piece_size())]
    return word_start, [vocab.is_preterminal(i) for i in range(vocab.get_piece_size())]
