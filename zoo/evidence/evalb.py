"""EVALB (Sekine & Collins 1997, with D. Ellis' 2006 quote fix) re-implemented in Python.

The parsing results of the paper's Table 4 are EVALB F1 scores, so this module follows
evalb.c step by step rather than computing "some bracket F1":

- a sentence is read character by character exactly as `read_line` does: a terminal is
  `(TAG word)`; a terminal whose TAG is a DELETE_LABEL is dropped *before* spans are
  computed (punctuation does not count for spans); every other bracket is kept, including
  the top-level one (so `(S ...)` counts, and `(TOP ...)` counts unless TOP is deleted);
- the length used for the `len<=CUTOFF_LEN` summary counts every terminal whose tag is not a
  DELETE_LABEL_FOR_LENGTH, punctuation included;
- status 2 (skip) when the test line has no words, status 1 (error) on a length or word
  mismatch (after the QUOTE_LABEL repair of 2006), status 0 otherwise; only status-0
  sentences enter the totals, but every sentence enters the sentence counts;
- brackets spanning nothing, and brackets whose label (cut at the first '-' or '=', and
  compared with EQ_LABEL) is a DELETE_LABEL, are ignored; duplicate brackets are matched
  one to one, greedily in order, as in evalb.c;
- crossing brackets are counted per test bracket; tags are compared with EQ_LABEL.

`format_report()` prints what the evalb binary prints (checked byte for byte against evalb.c
compiled from the 2006 source). `legacy=True` prints the older layout of EVALB's own
`sample.rsl` fixture (no F-measure line, gold word count on error lines, other total-line
widths and the no-crossing count in the total line's "Cross" column).

Not reproduced: C undefined behaviour (more than 200 words or brackets, lines over 4999
bytes, a ')' with no open bracket: here it is reported and ignored), and the DEBUG 2
trace lines (DEBUG >= 1 prints evalb.c's per-sentence tables).

The parameter files (`Params`, `COLLINS`, `load_params`) live in zoo.evidence.evalb_params and are re-exported here.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from zoo.evidence.evalb_params import COLLINS, WS, EvalbError, Params, load_params
from zoo.evidence.evalb_params import COLLINS_PRM, parse_params  # noqa: F401 (re-exported)

__all__ = ["evalb_main", "f1", "score"]  # what it lends outside its package (the door serves these)


_TERMINATORS = WS + "()"
_QUOTE_WORDS = ("'", '"', "/")  # evalb.c is_quote_term()


# ---------------------------------------------------------------------------- reading

class _Bracket:
    __slots__ = ("start", "end", "label", "result")

    def __init__(self, start: int, label: str):
        self.start, self.end, self.label, self.result = start, -1, label, 9  # 9: undefined


@dataclass
class _Quote:  # a QUOTE_LABEL terminal, remembered even when deleted (Ellis' fix)
    word: str
    label: str
    index: int  # position among the kept terminals
    bracket: int  # brackets opened before it
    ends: list[int]  # brackets open around it


@dataclass
class _Side:
    terms: list[list]  # [word, label, result]
    brackets: list[_Bracket]
    quotes: list[_Quote]
    length: int  # words for the len<=CUTOFF_LEN summary
    errors: list[str]


def _read_line(buf: str, p: Params) -> _Side:
    """evalb.c read_line(): terminals, brackets as [start, end) over kept terminals."""
    terms, brackets, quotes, stack, errors = [], [], [], [], []
    length, i, n = 0, 0, len(buf)
    while i < n:
        c = buf[i]
        if c in WS:
            i += 1
        elif c == "(":
            j = i + 1
            while j < n and buf[j] not in _TERMINATORS:
                j += 1
            label, i = buf[i + 1:j], j
            if j < n and buf[j] in WS:  # maybe a terminal "(TAG word)"
                q = j
                while q < n and buf[q] in WS:
                    q += 1
                k = q
                while k < n and buf[k] not in _TERMINATORS:
                    k += 1
                word, q = buf[q:k], k
                if q < n and buf[q] == ")":
                    if label not in p.delete_labels_for_length:
                        length += 1
                    if label in p.quote_labels and word in _QUOTE_WORDS:
                        quotes.append(_Quote(word, label, len(terms), len(brackets), list(stack)))
                    if label not in p.delete_labels:  # deleted terminals vanish before spans
                        terms.append([word, label, 9])
                    i = q + 1
                    continue
                if q >= n or buf[q] != "(":
                    errors.append("More than two elements in a bracket")
            brackets.append(_Bracket(len(terms), label))
            stack.append(len(brackets) - 1)
        elif c == ")":
            if stack:
                brackets[stack.pop()].end = len(terms)
            else:  # undefined behaviour in evalb.c; report and ignore
                errors.append("Bracketing unbalance (too many close bracket)")
            i += 1
        else:  # evalb.c loops on "Reading sentence" until MAX_ERROR and exits
            raise EvalbError(f"cannot read this tree: text outside brackets at column {i + 1} "
                             f"({buf.strip()[:80]!r}). EVALB needs one bracketed tree per line, "
                             "every word inside '(TAG word)'; EVALB itself stops here.")
    if stack:
        errors.append("Bracketing is unbalanced (too many open bracket)")
    return _Side(terms, brackets, quotes, length, errors)


def _same(a: str, b: str, pairs) -> bool:  # evalb.c label_comp()/word_comp()
    return a == b or any((a, b) in ((x, y), (y, x)) for x, y in pairs)


def _fix_quote(g: _Side, t: _Side, p: Params) -> None:
    """Ellis 2006: a quote deleted on one side but kept (mis-tagged) on the other is put back."""
    for i, tq in enumerate(t.quotes):
        ind = tq.index  # evalb.c keeps the value read at the start of the loop
        for j, gq in enumerate(g.quotes):
            if gq.index != ind or gq.label == tq.label:
                continue
            if gq.label in p.delete_labels and tq.label not in p.delete_labels:
                _reinsert(gq, g)
                for q in g.quotes[j:]:
                    q.index += 1
            elif tq.label in p.delete_labels and gq.label not in p.delete_labels:
                _reinsert(tq, t)
                for q in t.quotes[i:]:
                    q.index += 1


def _reinsert(q: _Quote, side: _Side) -> None:
    side.terms.insert(q.index, [q.word, q.label, 9])
    for b in side.brackets[q.bracket:]:  # brackets opened after it move right
        b.start += 1
        b.end += 1
    for k in q.ends:  # brackets around it grow
        side.brackets[k].end += 1


def _massage(side: _Side, p: Params) -> int:
    """Mark empty and deleted brackets (result 5), cut function tags; return brackets kept."""
    for b in side.brackets:
        b.result = 0
        if b.start == b.end:
            b.result = 5
            continue
        for k, ch in enumerate(b.label):  # evalb.c modify_label(): NP-SBJ-1 -> NP, NP=2 -> NP
            if ch in "-=":
                b.label = b.label[:k]
                break
        if any(_same(b.label, d, p.eq_labels) for d in p.delete_labels):
            b.result = 5
    return sum(b.result != 5 for b in side.brackets)


@dataclass
class Sentence:
    """One line of EVALB's per-sentence table."""
    id: int
    length: int  # words counted for the len<=CUTOFF_LEN summary
    status: int  # 0 ok, 1 error, 2 skip
    match: int = 0
    gold: int = 0  # brackets in gold (after deletion)
    test: int = 0
    crossing: int = 0
    words: int = 0  # words scored for tags (0 unless status 0)
    tags: int = 0  # correct tags
    gold_words: int = 0  # gold words after deletion (the 1997 layout prints it on error lines)
    debug: str = ""  # evalb.c dsp_info() block when DEBUG >= 1

    @property
    def recall(self) -> float:
        return 0.0 if self.gold == 0 else 100.0 * self.match / self.gold

    @property
    def precision(self) -> float:
        return 0.0 if self.test == 0 else 100.0 * self.match / self.test


@dataclass
class Summary:
    """One '-- All --' or '-- len<=N --' block."""
    sentences: int = 0
    errors: int = 0
    skips: int = 0
    gold: int = 0
    test: int = 0
    match: int = 0
    complete: int = 0
    words: int = 0
    tags: int = 0
    crossing: int = 0
    no_crossing: int = 0
    two_or_less: int = 0

    def add(self, s: Sentence) -> None:
        self.sentences += 1
        if s.status == 1:
            self.errors += 1
        elif s.status == 2:
            self.skips += 1
        else:
            self.gold += s.gold
            self.test += s.test
            self.match += s.match
            self.complete += s.gold == s.test == s.match
            self.words += s.words
            self.tags += s.tags
            self.crossing += s.crossing
            self.no_crossing += s.crossing == 0
            self.two_or_less += s.crossing <= 2

    @property
    def valid(self) -> int:
        return self.sentences - self.errors - self.skips

    @property
    def recall(self) -> float:
        return 100.0 * self.match / self.gold if self.gold > 0 else 0.0

    @property
    def precision(self) -> float:
        return 100.0 * self.match / self.test if self.test > 0 else 0.0

    @property
    def fmeasure(self) -> float:  # NaN when P+R == 0, as in evalb.c
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else math.nan

    def _per_sent(self, k: int, scale: float) -> float:
        return scale * k / self.valid if self.valid > 0 else 0.0

    @property
    def complete_match(self) -> float:
        return self._per_sent(self.complete, 100.0)

    @property
    def average_crossing(self) -> float:
        return self._per_sent(self.crossing, 1.0)

    @property
    def no_crossing_pct(self) -> float:
        return self._per_sent(self.no_crossing, 100.0)

    @property
    def two_or_less_pct(self) -> float:
        return self._per_sent(self.two_or_less, 100.0)

    @property
    def tagging_accuracy(self) -> float:
        return 100.0 * self.tags / self.words if self.words > 0 else 0.0


@dataclass
class Result:
    params: Params
    sentences: list[Sentence]
    errors: list[str]  # what evalb.c prints on stderr ("12 : Words unmatch (is|was)")
    all: Summary
    cutoff: Summary  # sentences with length <= params.cutoff_len


# ---------------------------------------------------------------------------- scoring

def _debug_block(g: _Side, t: _Side) -> str:
    """evalb.c dsp_info()."""
    out = [f"-<1>---(wn1={len(g.terms):3d}, bn1={len(g.brackets):3d})-           "
           f"-<2>---(wn2={len(t.terms):3d}, bn2={len(t.brackets):3d})-"]
    for i in range(max(len(g.terms), len(t.terms))):
        a, b = (s.terms[i] if i < len(s.terms) and s.terms[i][0] else None for s in (g, t))
        left = f"{i:3d} : {a[2]} : {a[1]:<6}  {a[0]:<16}      " if a else " " * 40
        out.append(left + (f"{i:3d} : {b[2]} : {b[1]:<6}  {b[0]:<16}" if b else ""))
    out.append("")
    for i in range(max(len(g.brackets), len(t.brackets))):
        a, b = (s.brackets[i] if i < len(s.brackets) else None for s in (g, t))
        left = f"{i:3d} : {a.result} : {a.start:3d}  {a.end:3d}  {a.label:<6}      " if a else " " * 32
        out.append(left + (f"{i:3d} : {b.result} : {b.start:3d}  {b.end:3d}  {b.label:<6}" if b else ""))
    out += ["", "========"]
    return "\n".join(out)


def score(gold_lines, test_lines, params: Params = COLLINS) -> Result:
    """Score test trees against gold trees, one bracketed tree per line (blank = no tree)."""
    p, errors, sents = params, [], []
    n_errors = 0

    def error(line_no: int, msg: str) -> None:  # evalb.c Error(): stop after MAX_ERROR + 1
        nonlocal n_errors
        errors.append(f"{line_no} : {msg}")
        n_errors += 1
        if n_errors - 1 > p.max_error:
            raise EvalbError(f"EVALB stops after more than MAX_ERROR={p.max_error} errors (the gold "
                             "and test files disagree on words or lines; first: "
                             f"{errors[0]}; last: {errors[-1]}). Check that both files hold the same "
                             "sentences in the same order and tokenization.")

    test_iter = iter(test_lines)
    line_no = 0
    for line_no, gold_line in enumerate(gold_lines, 1):
        g = _read_line(gold_line, p)
        for e in g.errors:
            error(line_no, e)
        test_line = next(test_iter, None)
        if test_line is None:
            error(line_no, "Number of lines unmatch (too many lines in gold file)")
            break
        t = _read_line(test_line, p)
        for e in t.errors:
            error(line_no, e)
        s = Sentence(line_no, g.length, 1 if g.errors or t.errors else 0)
        sents.append(s)
        if not t.terms:
            s.status = 2
        else:
            if len(g.terms) != len(t.terms):
                _fix_quote(g, t, p)
            if len(g.terms) != len(t.terms):
                s.status = 1
                error(line_no, f"Length unmatch ({len(g.terms)}|{len(t.terms)})")
            else:
                bad = next(((a[0], b[0]) for a, b in zip(g.terms, t.terms)
                            if not _same(a[0], b[0], p.eq_words)), None)
                if bad:
                    s.status = 1
                    error(line_no, f"Words unmatch ({bad[0]}|{bad[1]})")
                else:
                    _count(s, g, t, p)
        s.gold_words = len(g.terms)
        if p.debug >= 1:
            s.debug = _debug_block(g, t)
    else:
        line_no += 1
    if next(test_iter, None) is not None:
        error(line_no, "Number of lines unmatch (too many lines in test file)")

    every, short = Summary(), Summary()
    for s in sents:
        every.add(s)
        if s.length <= p.cutoff_len:
            short.add(s)
    return Result(p, sents, errors, every, short)


def _count(s: Sentence, g: _Side, t: _Side, p: Params) -> None:
    """evalb.c calc_result() for a sentence whose words agree."""
    s.gold, s.test = _massage(g, p), _massage(t, p)
    for a in g.brackets:  # greedy one-to-one matching: duplicates count once each
        if a.result == 5:
            continue
        for b in t.brackets:
            if b.result == 0 and a.start == b.start and a.end == b.end and (
                    p.labeled == 0 or _same(a.label, b.label, p.eq_labels)):
                a.result = b.result = 1
                s.match += 1
                break
    for b in t.brackets:  # a test bracket crossing any gold bracket counts once
        if b.result == 5:
            continue
        s.crossing += any(a.result != 5 and (
            a.start < b.start < a.end < b.end or b.start < a.start < b.end < a.end)
            for a in g.brackets)
    for a, b in zip(g.terms, t.terms):
        a[2] = b[2] = int(_same(a[1], b[1], p.eq_labels))
        s.tags += a[2]
    s.words = len(g.terms)


# ---------------------------------------------------------------------------- report

def format_report(result: Result, legacy: bool = False) -> str:
    """The text evalb prints on stdout (legacy=True: the 1997 layout of EVALB's sample.rsl)."""
    out = ["  Sent.                        Matched  Bracket   Cross        Correct Tag",
           " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy",
           "=" * 76]
    for s in result.sentences:
        words = s.gold_words if legacy else s.words
        acc = 0.0 if words == 0 else 100.0 * s.tags / words
        out.append(f"{s.id:4d}  {s.length:3d}    {s.status}  {s.recall:6.2f} {s.precision:6.2f}   "
                   f"{s.match:3d}    {s.gold:3d}  {s.test:3d}    {s.crossing:3d}   "
                   f"{words:4d}  {s.tags:4d}   {acc:6.2f}")
        if s.debug:
            out.append(s.debug)
    out.append("=" * 76)
    a = result.all
    total = ""
    if a.gold > 0 and a.test > 0:
        if legacy:  # sample.rsl prints the no-crossing sentence count in the "Cross" column
            total = (f"                {a.recall:6.2f} {a.precision:6.2f} {a.match:6d} {a.gold:6d} "
                     f"{a.test:4d}  {a.no_crossing:5d}")
        else:
            total = (f"                {a.recall:6.2f} {a.precision:6.2f} {a.match:6d} {a.gold:5d} "
                     f"{a.test:5d}  {a.crossing:5d}")
    out.append(total + f"  {a.words:5d} {a.tags:5d}   {a.tagging_accuracy:6.2f}")
    out.append("=== Summary ===")
    for title, b in (("All", a), (f"len<={result.params.cutoff_len}", result.cutoff)):
        out += ["", f"-- {title} --",
                f"Number of sentence        = {b.sentences:6d}",
                f"Number of Error sentence  = {b.errors:6d}",
                f"Number of Skip  sentence  = {b.skips:6d}",
                f"Number of Valid sentence  = {b.valid:6d}",
                f"Bracketing Recall         = {b.recall:6.2f}",
                f"Bracketing Precision      = {b.precision:6.2f}"]
        if not legacy:  # glibc prints the sign of evalb's 0/0 NaN
            f = "  -nan" if math.isnan(b.fmeasure) else f"{b.fmeasure:6.2f}"
            out.append(f"Bracketing FMeasure       = {f}")
        out += [f"Complete match            = {b.complete_match:6.2f}",
                f"Average crossing          = {b.average_crossing:6.2f}",
                f"No crossing               = {b.no_crossing_pct:6.2f}",
                f"2 or less crossing        = {b.two_or_less_pct:6.2f}",
                f"Tagging accuracy          = {b.tagging_accuracy:6.2f}"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- entry points

def read_lines(path: str | Path, what: str) -> list[str]:
    """A file's lines as evalb.c's fgets() sees them (split on '\\n' only)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as e:
        raise EvalbError(f"cannot open the {what} file {path}: {e.strerror or e}. EVALB needs a gold "
                         "file and a test file, each with one bracketed tree per line in the same "
                         "order (a blank test line marks a sentence the parser skipped).") from None
    if "\0" in text:  # trees are text; a NUL byte means an image, an archive, a model file...
        raise EvalbError(f"the {what} file {path} is binary, not text (a NUL byte at offset "
                         f"{text.index(chr(0))}). EVALB needs one bracketed tree per line, as written by "
                         "a parser or a treebank's .mrg files flattened to one line per tree.")
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def evalb_main(gold_path, test_path, params_path=None, legacy: bool = False) -> str:
    """`evalb -p PARAMS GOLD TEST`: the report text. Errors per sentence go to stderr like
    EVALB's; without a parameter file the built-in COLLINS settings are used."""
    params = COLLINS if params_path is None else load_params(params_path)
    for w in params.warnings:
        print(w, file=sys.stderr)
    result = score(read_lines(gold_path, "gold"), read_lines(test_path, "test"), params)
    for e in result.errors:
        print(e, file=sys.stderr)
    return format_report(result, legacy=legacy)


def f1(gold_trees, test_trees, params: Params = COLLINS) -> float:
    """Bracketing F-measure (percent, EVALB 'All' block) for training-time evaluation.

    Trees are one-line bracketed strings or objects whose str() is one (zoo.data.trees.Tree).
    Never stops on errors (MAX_ERROR is lifted); 0.0 when nothing matches."""
    gold, test = [str(t) for t in gold_trees], [str(t) for t in test_trees]
    if len(gold) != len(test):
        raise ValueError(f"f1: {len(gold)} gold trees but {len(test)} test trees")
    r = score(gold, test, replace(params, max_error=sys.maxsize))
    return 0.0 if math.isnan(r.all.fmeasure) else r.all.fmeasure
