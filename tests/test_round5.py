"""Issue 45 item 8, reliability round 5 (and the open kinds of rounds 3-4), and issue 46's "validation
reports only the first error of a file": each kind a user mistake refused at the line written (exit 2,
file:line, field, what is allowed) or handled as a user would expect. One test per kind, named for it."""
from pathlib import Path

import pytest

from zoo.cli import main


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def spec(tmp_path, text: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def refused(code, out, err, *fragments):
    msg = (out + err).strip()
    assert code == 2 and "Traceback" not in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


MINE = "extends: table3_A\n{paper}variants:\n  mine: {{model: {{h: 2, d_k: 256, d_v: 256}}}}\n"


@pytest.mark.parametrize("value", ['"yes"', "1", "yes"])
def test_paper_row_yes_or_1_is_refused_not_read_as_false(tmp_path, capsys, value):
    f = spec(tmp_path, MINE.format(paper=f"paper: {{paper_row: {value}}}\n"))
    refused(*run("validate", f, capsys=capsys), f"{f}:2: paper.paper_row: ", "valid boolean")


def test_paper_row_true_on_a_row_the_table_lacks(tmp_path, capsys):
    f = spec(tmp_path, MINE.format(paper="paper: {paper_row: true}\n"))
    refused(*run("validate", f, capsys=capsys), f"{f}:2: paper.paper_row: ", "'mine'", "no such row", "A1")
    ok = spec(tmp_path, MINE.format(paper="paper: {paper_row: true}\n").replace("mine", "A1"), "ok.yaml")
    assert run("validate", ok, capsys=capsys)[0] == 0  # on purpose, for a row the paper has: as before
