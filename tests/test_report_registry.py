"""The report's pages are one list (reports/pages.py): `zoo report --table`, the pages built, the nav, the index
and the files a committed report holds all read it, so registering a page there is all a new table needs."""
from dataclasses import dataclass

import pytest

from zoo.cli import main
from zoo.reports import pages
from zoo.reports.cells import Section, Table, columns, text_col
from zoo.reports.render import TEMPLATES
from zoo.runner.store import Store


@dataclass
class NoteRow:
    name: str = ""
    group: str | None = None
    note: str | None = text_col("", "note")


def _table(name: str, title: str) -> Table:
    section = Section("", columns(NoteRow), [NoteRow("r1", None, "hi")])
    return Table(name, title, f"{title}, registered by a test.", [section], [], [], {"done": 1})


def table5_page(request) -> list[Table]:  # paper tables the paper never had
    return [_table("table5", "Table 5")]


def table6_page(request) -> list[Table]:
    return [_table("table6", "Table 6")]


def extra_page(request) -> list[Table]:  # a page beside the tables, built whenever a report is
    return [_table("extra", "Extra")]


@pytest.fixture
def dummy(monkeypatch, tmp_path):
    """The registry holding only a test's pages, and a store of one pending row to report from (an empty store
    is refused: nothing to report)."""
    monkeypatch.setattr(pages, "PAGES", (pages.Page("table5", "Table 5", table5_page, table=5),
                                         pages.Page("table6", "Table 6", table6_page, table=6),
                                         pages.Page("extra", "Extra", extra_page)))
    Store(tmp_path / "zoo.db").upsert("specs/base.yaml", "base", "smoke", status="pending")
    return tmp_path


def report(*argv, capsys):
    code = main(["report", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_the_cli_choices_and_default_come_from_the_list(dummy, capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert "--table {5,6}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:  # argparse's refusal: the paper's tables are not in this list
        main(["report", "--table", "2"])
    assert e.value.code == 2 and "invalid choice: 2 (choose from 5, 6)" in capsys.readouterr().err
    code, err = report("--table", 5, "--runs", dummy / "zoo.db", "--out", dummy / "one", capsys=capsys)
    assert code == 0, err  # one table: its page and the pages beside it, no index
    assert sorted(p.name for p in (dummy / "one").iterdir()) == ["extra.html", "extra.md", "table5.html", "table5.md"]


def test_the_pages_nav_and_index_come_from_the_list(dummy, capsys):
    code, err = report("--runs", dummy / "zoo.db", "--out", dummy / "o", capsys=capsys)  # the default: all
    assert code == 0, err
    out = dummy / "o"
    assert sorted(p.name for p in out.iterdir()) == sorted(["index.md", "index.html", "results.csv", "model-index.yml",
                                                            *(f for p in pages.PAGES for f in p.files)])
    index = (out / "index.md").read_text()
    assert "[Table 5](table5.md)" in index and "[Table 6](table6.md)" in index and "[Extra](extra.md)" in index
    nav = (out / "table5.html").read_text()
    assert '<a href="table5.html" class="current">Table 5</a>' in nav and '<a href="extra.html">Extra</a>' in nav
    assert nav.index('"table6.html"') < nav.index('"extra.html"')  # in the list's order
    assert {"table5.md", "extra.html"} <= set(pages.report_files())  # what --force protects in a checkout


def test_every_registered_page_has_its_template():
    assert pages.paper_tables() == (2, 3, 4)
    for p in pages.PAGES:
        assert all((TEMPLATES / f"{p.template}.{fmt}.j2").exists() for fmt in pages.FORMATS), p
    assert pages.page_of("sweep-modern").name == "sweep-*" and pages.page_of("table3").table == 3
