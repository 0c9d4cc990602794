"""The report's pages, each registered once: the paper's tables and the pages beside them (the scale trend, a
spec's page). `zoo report --table`, what a run builds, the nav, the index and the files a committed report
holds all read this list, so a new page is its builder, its template and one entry here.

A page's builder and figures import their modules when called: those pull the store, numpy, the evidence and
matplotlib, and this list is read by `zoo --help` too.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # types only: importing them here would lengthen every reader's import chain
    from zoo.reports.cells import Table
    from zoo.reports.runs import Runs

FORMATS = ("md", "html")  # what a report writes (`--format all`)
LATEX = "tex"  # `--format latex`: each table as booktabs tables to paste into a paper (name.tex), on request only
INDEX = "index"  # the whole report's front page (templates index.*.j2): links every page it built
DATA_FILES = ("results.csv", "model-index.yml", "img/*.png")  # the whole report's data files, and the figures


@dataclass(frozen=True)
class Request:
    """What `zoo report` was asked, as every builder reads it."""
    runs: Runs
    path: Path                       # the store (a page over other profiles' runs loads it again)
    tables: tuple[int, ...]          # the paper tables asked for (all of them: the whole report)
    plan: object | None = None       # --analysis: a zoo.evidence analysis plan
    bootstrap_seed: int | None = None

    @property
    def whole(self) -> bool:
        return len(self.tables) == len(paper_tables())


@dataclass(frozen=True)
class Page:
    name: str                  # file stem (name.md, name.html); "x-*": a family, one page per spec
    title: str | None          # its link in every page's nav; None: not in the nav
    build: Callable[[Request], list[Table]]  # its Tables from what was asked ([]: none this time)
    table: int | None = None   # the paper's table number: `zoo report --table N` builds this page alone
    template: str = "table"    # reports/templates/<template>.{md,html}.j2
    figures: Callable[[Table, Path], list[tuple[str, str]]] | None = None  # (table, img) -> [(caption, file)]
    on_index: bool = False     # the index shows this page's first figure

    def draw(self, table: Table, img: Path) -> list[tuple[str, str]]:
        return self.figures(table, img) if self.figures else []

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(f"{self.name}.{fmt}" for fmt in FORMATS)


def _table2(r: Request) -> list[Table]:
    from zoo.reports.tables import table2
    return [table2(r.runs)]


def _table3(r: Request) -> list[Table]:
    from zoo.reports.tables import table3
    return [table3(r.runs, bootstrap_seed=r.bootstrap_seed, plan=r.plan)]


def _table3_figures(t: Table, img: Path) -> list[tuple[str, str]]:
    from zoo.reports import plots
    return plots.table3_scatters(t, img) + plots.claims(t, img)


def _table4(r: Request) -> list[Table]:
    from zoo.reports.tables import table4
    return [table4(r.runs)]


def _trend(r: Request) -> list[Table]:
    """Beside Table 3, under a plan with a `trend:`; it reads every width's profile, so the whole store."""
    if r.plan is None or r.plan.trend is None or 3 not in r.tables:
        return []
    from zoo.reports.runs import load
    from zoo.reports.trend import trend_table
    every = r.runs if r.runs.profile is None and r.runs.store is not None else load(r.path)  # read once when whole
    return [trend_table(every, r.plan, r.bootstrap_seed)]


def _trend_figures(t: Table, img: Path) -> list[tuple[str, str]]:
    from zoo.reports import plots
    return plots.trend(t, img)


def _spec_pages(r: Request) -> list[Table]:
    """The whole report's page per user spec (not the paper's), listed in the index."""
    if not r.whole:
        return []
    from zoo.reports.sweep import sweep_table
    from zoo.reports.verdicts import user_specs
    return [sweep_table(r.runs, spec) for spec in user_specs(r.runs)]


def _sweep_figures(t: Table, img: Path) -> list[tuple[str, str]]:
    from zoo.reports import plots
    return plots.sweep(t, img)


PAGES = (  # in the order of the nav and the index
    Page("table2", "Table 2", _table2, table=2),
    Page("table3", "Table 3", _table3, table=3, figures=_table3_figures, on_index=True),
    Page("table4", "Table 4", _table4, table=4),
    Page("trend", "Scale trend", _trend, figures=_trend_figures),
    Page("sweep-*", None, _spec_pages, figures=_sweep_figures),
)


def paper_tables() -> tuple[int, ...]:
    """`zoo report --table`'s choices; all of them (the default) is the whole report."""
    return tuple(p.table for p in PAGES if p.table is not None)


def build(request: Request) -> list[Table]:
    """The pages asked for, in the list's order: a paper table when chosen, any other page when its builder
    has something to show."""
    return [t for p in PAGES if p.table is None or p.table in request.tables for t in p.build(request)]


def page_of(name: str) -> Page:
    """The registered page a built table is (sweep-modern is sweep-*)."""
    return next(p for p in PAGES if fnmatch.fnmatchcase(name, p.name))


def page_of_table(n: int) -> Page:
    """The page of paper table `n`."""
    return next(p for p in PAGES if p.table == n)


def titles() -> dict[str, str]:
    """The nav's pages, name -> link text."""
    return {p.name: p.title for p in PAGES if p.title}


def nav(built: list[Table], out: Path) -> list[str]:
    """The nav of every page written into `out`: the pages built now and those an earlier run left there."""
    names = {t.name for t in built}
    return [name for name in titles() if name in names or (out / f"{name}.html").exists()]


def report_files() -> tuple[str, ...]:
    """What a report writes into --out (git pathspecs, relative to it): its pages, its data files, its figures."""
    return (*(f"{INDEX}.{fmt}" for fmt in FORMATS), *(f for p in PAGES for f in p.files), *DATA_FILES)
