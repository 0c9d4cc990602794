"""The YAML a spec may hold, read with YAML 1.2 core-schema scalars and a line number for every key.

PyYAML implements YAML 1.1, whose implicit types surprise people who write specs: `1:30:00` is a
base-60 number (5400), `010` an octal 8, `on`/`yes` are booleans, `2024-01-01` a date. YAML 1.2's
core schema has none of these: a plain scalar is null, a boolean (`true`/`false`), a decimal, octal
(`0o17`) or hex (`0x1f`) integer, a float, or else the string as written. Mapping keys are always the
strings the user typed, so `010:` is the variant "010" and `on:` the variant "on".

What a spec never needs is refused rather than limited, since specs are shared and each extra is a
way for one file to hurt whoever reads it: anchors and aliases (a 2 KB "billion laughs" file expands
to gigabytes), merge keys (`<<`: hide where a value came from), tags other than the plain ones (can
name Python objects), nesting deeper than MAX_DEPTH, several documents in one file, and a `%YAML`
directive asking for another version (`%YAML 1.1` would make `010` mean 8).

libyaml's C parser turns the text into events; one pass over them here builds the data and its
locations (a 1 MB spec in about a second, where PyYAML's pure-Python loader took 14 s).
"""
from __future__ import annotations

import math
import re
from typing import Any

import yaml

from zoo.errors import UserError
from zoo.text import shorten

__all__ = ["YamlError"]  # what it lends outside its package (the door serves these)

MAX_DEPTH = 32  # the deepest real spec nests 5 levels (variants.A1.train.optimizer.betas)

_PARSER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)  # libyaml's parser (inside PyYAML's wheels); the events alone are used
_TAG = "tag:yaml.org,2002:"
_PLAIN_TAGS = {f"{_TAG}{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map")}

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution); `_` between digits is
# also read as in Python (`100_000`), which no other reading of the scalar could mean.
_NULL = re.compile(r"~|null|Null|NULL|")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT10 = re.compile(r"[-+]?[0-9]+(?:_[0-9]+)*")
_INT8 = re.compile(r"0o[0-7]+")
_INT16 = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+(?:_[0-9]+)*|[0-9]+(?:_[0-9]+)*(?:\.[0-9]*(?:_[0-9]+)*)?)(?:[eE][-+]?[0-9]+)?")
_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)")

# JSON writes a character past U+FFFF as a UTF-16 surrogate pair (`json.dumps` gives "\ud83d\ude00"
# for an emoji); YAML has no such pairs and libyaml refuses each half, so a pair becomes `\UXXXXXXXX`.
_HALF = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_ESCAPE = re.compile(r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|.)", re.S)
_BAD_ESCAPE = "found invalid Unicode character escape code"


class YamlError(UserError):
    """A file, or a `--set` value, that is not plain YAML. `line` is 1-based, `field` a dotted path."""

    def __init__(self, line: int, field: str, message: str):
        self.line, self.field, self.message = line, field, message
        super().__init__(f"{line}: {field + ': ' if field else ''}{message}")


def scalar(value: str, plain: bool = True, tag: str | None = None) -> Any:
    """One scalar as YAML 1.2's core schema reads it (quoted scalars and `!!str` stay strings)."""
    if tag is None and not plain or tag in ("!", f"{_TAG}str"):  # quoted, or `! x`, `!!str x`
        return value
    kind = tag.removeprefix(_TAG) if tag is not None else None
    if kind in (None, "null") and _NULL.fullmatch(value):
        return None
    if kind in (None, "bool") and value in _BOOL:
        return _BOOL[value]
    if kind in (None, "int"):
        if _INT10.fullmatch(value):
            return int(value)  # ValueError past Python's 4300-digit limit: reported by the caller
        if _INT8.fullmatch(value):
            return int(value[2:], 8)
        if _INT16.fullmatch(value):
            return int(value[2:], 16)
    if kind in (None, "float"):
        if _FLOAT.fullmatch(value) and any(c.isdigit() for c in value):
            return float(value)
        if _INF.fullmatch(value):
            return -math.inf if value.startswith("-") else math.inf
        if _NAN.fullmatch(value):
            return math.nan
    if kind is None:
        return value
    raise ValueError(f"'{shorten(value)}' is not a {kind}")


def load(text: str, locs: dict | None = None) -> tuple[Any, int]:
    """(data, line of the top-level node) of one YAML document; (None, 1) when it holds nothing.
    `locs` receives every mapping key's path -> its 1-based line. YamlError for anything refused."""
    locs = {} if locs is None else locs
    text = _join_surrogate_pairs(text)
    parser = _PARSER(text)
    try:
        events = _Events(parser)
        events.expect(yaml.StreamStartEvent)
        if events.peek_is(yaml.StreamEndEvent):
            return None, 1
        start = events.expect(yaml.DocumentStartEvent)
        if start.version not in (None, (1, 2)):  # PyYAML's event gives (major, minor)
            raise _version_error(start.start_mark.line + 1, ".".join(map(str, start.version)))
        first = events.peek()
        data = _node(events, (), locs, 1)
        events.expect(yaml.DocumentEndEvent)
        if not events.peek_is(yaml.StreamEndEvent):
            raise YamlError(events.line(), "", "a spec is one YAML document; remove the second `---`")
        return data, first.start_mark.line + 1
    except yaml.reader.ReaderError as e:  # a control or non-printable character
        pos = max(e.position, 0)
        if _PARSER is yaml.BaseLoader:  # PyYAML's Python reader counts characters
            line = text[:pos].count("\n") + 1
        else:  # libyaml counts bytes of the UTF-8 text: `é` is 2, `日` 3, so a count in characters ran late
            line = text.encode("utf-8", "surrogatepass")[:pos].count(b"\n") + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)
        raise YamlError(line, "", f"character U+{code:04X} is not allowed in YAML "
                        "(a binary file, or a control character in the text?)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        if problem == "found incompatible YAML document" and mark:  # libyaml's word for `%YAML 1.0` or `2.0`
            asked = re.search(r"%YAML\s+(\S+)", "\n".join(text.splitlines()[mark.line:mark.line + 1]))
            raise _version_error(mark.line + 1, asked.group(1) if asked else "other than 1.2") from None
        if problem == _BAD_ESCAPE:  # what is left after _join_surrogate_pairs
            problem = ("a \\u escape is half of a UTF-16 surrogate pair (\\uD800-\\uDFFF) without its other half, "
                       "or past U+10FFFF; write the character itself, or its \\UXXXXXXXX escape")
        raise YamlError(mark.line + 1 if mark else 1, "", f"YAML syntax error: {problem}") from None
    finally:
        parser.dispose()


def _version_error(line: int, asked: str) -> YamlError:
    return YamlError(line, "%YAML", f"the file asks for YAML {shorten(asked)}, but specs are read as YAML 1.2 "
                     "(where `010` is 10, not YAML 1.1's 8, and `on` a string, not true); "
                     "remove the line or write `%YAML 1.2`")


def _join_surrogate_pairs(text: str) -> str:
    """`text` with each surrogate-pair escape of a double-quoted scalar written as one `\\U` escape.
    Only double quotes read escapes (`'\\ud83d'` is six characters as typed), so libyaml's scanner
    finds them first, over a copy whose halves are made harmless `\\u0041`s of the same length."""
    if not _HALF.search(text):
        return text  # nearly every spec: no scan
    spans, scanner = [], _PARSER(_HALF.sub(r"\\u0041", text))
    try:
        while (token := scanner.get_token()) is not None:
            if isinstance(token, yaml.ScalarToken) and token.style == '"':
                spans.append((token.start_mark.index, token.end_mark.index))  # in characters
    except yaml.YAMLError:
        pass  # a syntax error further on: the parse reports it
    finally:
        scanner.dispose()

    def one(m: re.Match) -> str:  # an escape: `\\` and `\"` are consumed whole, so `\\\\ud83d` is not one
        if m.group(1) is None:
            return m.group(0)
        code = 0x10000 + ((int(m.group(1), 16) - 0xD800) << 10) + int(m.group(2), 16) - 0xDC00
        return f"\\U{code:08X}"

    pieces, done = [], 0  # one join: a 1 MB file may hold thousands of such scalars
    for a, b in spans:
        pieces += [text[done:a], _ESCAPE.sub(one, text[a:b])]
        done = b
    return "".join(pieces) + text[done:]


class _Events:
    def __init__(self, parser):
        self.parser = parser

    def peek(self):
        return self.parser.peek_event()

    def peek_is(self, kind) -> bool:
        return isinstance(self.peek(), kind)

    def next(self):
        return self.parser.get_event()

    def expect(self, kind):
        e = self.next()
        if not isinstance(e, kind):  # libyaml's grammar already guarantees the order
            raise YamlError(e.start_mark.line + 1, "", f"YAML syntax error: unexpected {type(e).__name__}")
        return e

    def line(self) -> int:
        return self.peek().start_mark.line + 1


def _node(ev: _Events, path: tuple, locs: dict, depth: int) -> Any:
    e = ev.next()
    line, field = e.start_mark.line + 1, ".".join(map(str, path))
    if isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None):
        raise YamlError(line, field, "YAML anchors and aliases (&name, *name) are not allowed in specs; "
                        "reuse settings with `extends:` or variants instead")
    if depth > MAX_DEPTH:
        raise YamlError(line, field, f"nested deeper than {MAX_DEPTH} levels; a spec needs at most 6")
    tag = getattr(e, "tag", None)
    if tag not in (None, "!") and tag not in _PLAIN_TAGS:
        shown = tag.replace(_TAG, "!!")
        raise YamlError(line, field, f"the YAML tag '{shorten(shown)}' is not allowed; specs hold plain "
                        "mappings, lists, strings, numbers, booleans and null")
    collection = {yaml.SequenceStartEvent: "seq", yaml.MappingStartEvent: "map"}.get(type(e))
    if collection and tag not in (None, "!", f"{_TAG}{collection}"):  # `!!int` on a mapping, `!!str` on a list
        kinds = {"seq": "list", "map": "mapping"}
        raise YamlError(line, field, f"the YAML tag '{tag.replace(_TAG, '!!')}' is for a "
                        f"{kinds.get(tag.removeprefix(_TAG), 'single value')}, not a {kinds[collection]}; remove the tag")
    if isinstance(e, yaml.ScalarEvent):
        try:
            return scalar(e.value, e.implicit[0], tag)
        except (ValueError, OverflowError) as err:  # a 5000-digit int, `!!int abc`
            raise YamlError(line, field, f"cannot read this value: {shorten(str(err).split(';')[0], 200)}") from None
    if isinstance(e, yaml.SequenceStartEvent):
        out = []
        while not ev.peek_is(yaml.SequenceEndEvent):
            locs[path + (len(out),)] = ev.line()  # an item's own line: a list of names names each at its line
            out.append(_node(ev, path + (len(out),), locs, depth + 1))
        ev.next()
        return out
    out, seen = {}, {}
    while not ev.peek_is(yaml.MappingEndEvent):
        k = ev.peek()
        kline = k.start_mark.line + 1
        if not isinstance(k, yaml.ScalarEvent) or getattr(k, "anchor", None) or k.tag not in (None, "!", f"{_TAG}str"):
            if isinstance(k, yaml.AliasEvent) or getattr(k, "anchor", None):
                _node(ev, path, locs, depth + 1)  # raises the anchor error
            kind = {yaml.SequenceStartEvent: "list", yaml.MappingStartEvent: "mapping"}.get(type(k), "tagged value")
            raise YamlError(kline, field, f"a key must be a plain name, not a {kind}")
        ev.next()
        key = k.value  # the key as typed: `010:` is "010", `on:` is "on", `1.5:` is "1.5"
        if key == "<<" and k.implicit[0]:
            raise YamlError(kline, field, "YAML merge keys (<<) are not allowed in specs; reuse settings "
                            "with `extends:` or variants instead")
        if key in seen:
            raise YamlError(kline, ".".join(map(str, path + (key,))),
                            f"duplicate key '{shorten(key)}' (first set on line {seen[key]}); "
                            "YAML would silently keep only the last one")
        seen[key] = kline
        locs[path + (key,)] = kline
        out[key] = _node(ev, path + (key,), locs, depth + 1)
    ev.next()
    return out
