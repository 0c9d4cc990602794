"""How the terminal shows things: one duration format, one text table and one did-you-mean, for every command's
output (`zoo status`, `zoo run --plan`, the live table, `zoo train`, `zoo power`), the report's cells and errors."""
from __future__ import annotations

import difflib


def duration(s: float | None) -> str:
    """Seconds as a person reads them: '42 s', '12.5 min', '3.2 h' ('-' when unknown)."""
    if s is None:
        return "-"
    return f"{s / 3600:.1f} h" if s >= 5400 else f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


def text_table(rows: list[tuple], right: tuple[int, ...] = (), last_free: bool = False) -> str:
    """Rows of cells (the first the header) in aligned columns, two spaces apart. `right`: columns
    aligned right (numbers); last_free: the last column is not padded (an error text may be long)."""
    rows = [tuple(str(x) for x in r) for r in rows]
    n = len(rows[0]) - (1 if last_free else 0)
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    lines = []
    for r in rows:
        cells = [x.rjust(w) if i in right else x.ljust(w) for i, (x, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells + list(r[n:])).rstrip())
    return "\n".join(lines)


def closest(word: str, choices) -> str:
    """"; did you mean 'x'?" naming the choice closest to a word not among them, or "" when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def did_you_mean(word: str, choices) -> str:
    """"; did you mean 'x'? Allowed: ..." for a word not among the choices, ". Allowed: ..." when none is close."""
    return f"{closest(word, choices) or '.'} Allowed: {', '.join(sorted(set(choices)))}"  # each once: callers may
    # pool lists that overlap


def shorten(text: object, n: int = 60) -> str:
    """A user value for an error message: long values cut, control characters made visible."""
    s = str(text)
    s = s if len(s) <= n else s[:n] + f"... ({len(s)} characters)"
    return s.encode("unicode_escape").decode("ascii") if not s.isprintable() else s
