"""A page's table as a pandas DataFrame, for a notebook: `zoo.table(zoo.results(store), 3)`.

Built from the report's own page (its registry entry, its cells, its markdown labels), so the frame and the
page never disagree; the runs (reports/runs.py) stay data, and this module, above the pages, reads them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.errors import UserError
from zoo.reports import pages
from zoo.reports.cells import State
from zoo.reports.render import grid

if TYPE_CHECKING:
    import pandas as pd

    from zoo.reports.runs import Runs

__all__ = ["table"]


def table(runs: Runs, n: int, section: int = 0, bootstrap_seed: int | None = None, plan=None) -> pd.DataFrame:
    """Paper table `n` as its page shows it: one row per table row (its name the index), the page's columns by
    the labels of its markdown page, numbers as numbers, a state as its words. `section` picks another of the
    page's tables (Table 3's claims: 1, with delta, interval, p and verdict)."""
    import pandas as pd
    if n not in pages.paper_tables():
        raise UserError(f"no Table {n}: choose from {', '.join(map(str, pages.paper_tables()))}")
    (t,) = [x for x in pages.build(pages.Request(runs, runs.path, (n,), plan, bootstrap_seed))
            if x.name == pages.page_of_table(n).name]
    if not 0 <= section < len(t.sections):
        raise UserError(f"Table {n} has {len(t.sections)} sections: " + "; ".join(
            f"{i}: {s.heading or t.title}" for i, s in enumerate(t.sections)))
    s = t.sections[section]
    cell = lambda c, r: (c.text(v) if isinstance(v := c.value(r), State) else v)
    frame = pd.DataFrame([[cell(c, r) for c in s.columns] for r in s.rows], columns=grid(s)["md_labels"],
                         index=pd.Index([r.name for r in s.rows], name=s.index))
    frame.attrs = {"table": t.title, "section": s.heading, "notes": list(s.notes)}
    return frame
