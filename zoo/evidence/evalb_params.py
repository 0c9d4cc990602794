"""EVALB's parameter files (`.prm`): what to delete, what counts for length, which labels and words
are equal, read exactly as evalb.c reads them; `COLLINS` is EVALB's COLLINS.prm, the paper's setting.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from zoo.errors import UserError

__all__ = ["EvalbError"]  # what it lends outside its package (the door serves these)


WS = " \t\n\r\v\f"  # C isspace() in the "C" locale (Python's isspace() is wider)

# A copy of EVALB's COLLINS.prm (public domain), so the project works without ../shared.
COLLINS_PRM = """\
##------------------------------------------##
## Debug mode                               ##
##   0: No debugging                        ##
##   1: print data for individual sentence  ##
##------------------------------------------##
DEBUG 0

##------------------------------------------##
## MAX error                                ##
##    Number of error to stop the process.  ##
##    This is useful if there could be      ##
##    tokanization error.                   ##
##    The process will stop when this number##
##    of errors are accumulated.            ##
##------------------------------------------##
MAX_ERROR 10

##------------------------------------------##
## Cut-off length for statistics            ##
##    At the end of evaluation, the         ##
##    statistics for the senetnces of length##
##    less than or equal to this number will##
##    be shown, on top of the statistics    ##
##    for all the sentences                 ##
##------------------------------------------##
CUTOFF_LEN 40

##------------------------------------------##
## unlabeled or labeled bracketing          ##
##    0: unlabeled bracketing               ##
##    1: labeled bracketing                 ##
##------------------------------------------##
LABELED 1                 

##------------------------------------------##
## Delete labels                            ##
##    list of labels to be ignored.         ##
##    If it is a pre-terminal label, delete ##
##    the word along with the brackets.     ##
##    If it is a non-terminal label, just   ##
##    delete the brackets (don't delete     ##
##    deildrens).                           ##
##------------------------------------------##
DELETE_LABEL TOP
DELETE_LABEL -NONE-
DELETE_LABEL ,
DELETE_LABEL :
DELETE_LABEL ``
DELETE_LABEL ''
DELETE_LABEL .

##------------------------------------------##
## Delete labels for length calculation     ##
##    list of labels to be ignored for      ##
##    length calculation purpose            ##
##------------------------------------------##
DELETE_LABEL_FOR_LENGTH -NONE-

##------------------------------------------##
## Equivalent labels, words                 ##
##     the pairs are considered equivalent  ##
##     This is non-directional.             ##
##------------------------------------------##
EQ_LABEL ADVP PRT

# EQ_WORD  Example example
"""


class EvalbError(UserError):
    """A mistake in the input (missing file, unreadable .prm, unreadable tree): EVALB stops; the
    CLI prints it as one paragraph and exits 2."""


@dataclass(frozen=True)
class Params:
    """The settings of an EVALB .prm file; the defaults are evalb.c's when no -p is given."""
    debug: int = 0
    max_error: int = 10
    cutoff_len: int = 40
    labeled: int = 1
    delete_labels: tuple[str, ...] = ()
    delete_labels_for_length: tuple[str, ...] = ()
    quote_labels: tuple[str, ...] = ()
    eq_labels: tuple[tuple[str, str], ...] = ()
    eq_words: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)  # what evalb.c prints on stderr


def _atoi(s: str) -> int:
    s = s.lstrip(WS)
    n = 0
    while n < len(s) and (s[n].isdigit() or (n == 0 and s[n] in "+-")):
        n += 1
    try:
        return int(s[:n])
    except ValueError:
        return 0


def parse_params(text: str) -> Params:
    """Parse .prm text the way evalb.c's read_parameter_file() does (unknown keys warn)."""
    kw: dict = {"delete_labels": [], "delete_labels_for_length": [], "quote_labels": [],
                "eq_labels": [], "eq_words": []}
    warnings, known = [], 0
    lines = text.split("\n")
    for no, line in enumerate(lines[:-1] if lines and lines[-1] == "" else lines, 1):
        line = line[:1] + line[1:].rstrip(WS)  # evalb.c trims the tail but never char 0
        if line.startswith("#") or len(line) < 3:
            continue
        i = 0
        while i < len(line) and line[i] not in WS:
            i += 1
        while i < len(line) and line[i] in WS:
            i += 1
        value = line[i:]
        if not value:
            warnings.append(f"Empty value in parameter file ({no})")

        def key(name: str) -> bool:  # evalb.c STRNCMP: the line starts with the whole keyword
            return line.startswith(name) and (len(line) == len(name) or line[len(name)] in WS)

        if key("DEBUG"):
            kw["debug"] = _atoi(value)
        elif key("MAX_ERROR"):
            kw["max_error"] = _atoi(value)
        elif key("CUTOFF_LEN"):
            kw["cutoff_len"] = _atoi(value)
        elif key("LABELED"):
            kw["labeled"] = _atoi(value)
        elif key("DELETE_LABEL"):
            kw["delete_labels"].append(value)
        elif key("DELETE_LABEL_FOR_LENGTH"):
            kw["delete_labels_for_length"].append(value)
        elif key("QUOTE_LABEL"):
            kw["quote_labels"].append(value)
        elif key("EQ_LABEL") or key("EQ_WORD"):
            name = "EQ_LABEL" if key("EQ_LABEL") else "EQ_WORD"
            parts = [x for x in re.split(f"[{WS}]+", value) if x]
            if len(parts) != 2:
                warnings.append(f"{name} requires two values")
            else:
                kw["eq_labels" if name == "EQ_LABEL" else "eq_words"].append(tuple(parts))
        else:
            warnings.append(f"Unknown keyword ({line}) in parameter file")
            continue
        known += 1
    if known == 0 and warnings:
        raise EvalbError("this does not look like an EVALB parameter file: none of its lines is a "
                         "known setting (DEBUG, MAX_ERROR, CUTOFF_LEN, LABELED, DELETE_LABEL, "
                         "DELETE_LABEL_FOR_LENGTH, QUOTE_LABEL, EQ_LABEL, EQ_WORD); first problem: "
                         f"{warnings[0]}. Pass a .prm file such as COLLINS.prm, or none for COLLINS.")
    return Params(**{k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()},
                  warnings=tuple(warnings))


def load_params(path: str | Path) -> Params:
    """Read an EVALB .prm file; raises EvalbError if it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as e:
        raise EvalbError(f"cannot read the EVALB parameter file {path}: {e.strerror or e}. Give the "
                         "path of a .prm file (for example COLLINS.prm), or no parameter file to "
                         "use the built-in COLLINS settings.") from None
    try:
        return parse_params(text)
    except EvalbError as e:
        raise EvalbError(f"{path}: {e}") from None


COLLINS = parse_params(COLLINS_PRM)

