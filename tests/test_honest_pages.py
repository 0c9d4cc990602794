"""Pages and commands that say only what is so (issue 51): `zoo status FILE` lists that file's rows only,
NaN is never printed as a figure, `zoo compare` signs a difference as the pages do, LaTeX tables fit a page,
an empty report is refused."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from zoo.runner.store import Store
from helpers import run


def pages_of(db: Path, out: Path, formats: list[str]) -> list[Path]:
    """Every page of `zoo report` (its text: tables, notes, claims) in `formats`, without drawing its figures
    (the figures take minutes on a busy machine and print no number as text)."""
    from zoo.reports import pages, render, runs as runs_mod
    runs = runs_mod.load(db, None, ())
    built = pages.build(pages.Request(runs, db, tuple(pages.paper_tables()), None, None))
    meta = render.meta(db, None, len(runs.trials), runs.note) | {"index": True}
    written = [p for t in built for p in render.write_table(t, out, formats, meta, [], [], [])]
    from zoo.reports import share  # and the data files a whole report writes beside its pages
    (out / "results.csv").write_text(runs.csv())
    (out / "model-index.yml").write_text(share.model_index(runs))
    return [*written, *render.write_index(built, out, formats, meta, [], []), out / "results.csv",
            out / "model-index.yml"]


def test_status_of_a_spec_file_lists_only_that_files_rows(tmp_path, capsys, monkeypatch):
    """Two files of one name in two folders: `zoo status d1/exp.yaml` lists d1's rows, not d2's (it listed both:
    it matched the file's stem). The stem alone, as status prints it, still names both."""
    monkeypatch.chdir(tmp_path)
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "exp.yaml").write_text("base: base\n")
    st = Store(tmp_path / "zoo.db")
    st.upsert("d1/exp.yaml", "one-seed1", "smoke", status="finished", step=5, steps=5)
    st.upsert(str(tmp_path / "d2" / "exp.yaml"), "two-seed1", "smoke", status="finished", step=5, steps=5)
    code, out, err = run("status", "d1/exp.yaml", "--runs", "zoo.db", capsys=capsys)
    assert code == 0 and "one-seed1" in out and "two-seed1" not in out and "1 trials" in out, out + err
    code, out, _ = run("status", str(tmp_path / "d2" / "exp.yaml"), "--runs", "zoo.db", capsys=capsys)
    assert code == 0 and "two-seed1" in out and "one-seed1" not in out, out
    code, out, _ = run("status", "exp", "--runs", "zoo.db", capsys=capsys)
    assert code == 0 and "one-seed1" in out and "two-seed1" in out, out


def test_no_nan_reaches_a_page(tmp_path, capsys):
    """Every finished Table 3 row with the same BLEU and perplexity (a constant column): rank agreement is
    undefined, and the pages say so in words; no 'nan' is printed as a figure (Kendall printed
    `+nan, 95% interval [+nan, +nan]`)."""
    from test_report import synthetic_store
    db = synthetic_store(tmp_path / "zoo.db")
    st = Store(db)
    for t in st.trials():
        if t.status == "finished" and t.paper_table == 3:
            m = t.result.model_copy(deep=True)
            m.primary.bleu, m.dev_ppl = 5.0, 40.0
            st.upsert(t.spec, t.trial, t.profile, metrics=m)
    written = pages_of(db, tmp_path / "out", ["md", "html", "tex"])
    md = (tmp_path / "out" / "table3.md").read_text()
    assert "Kendall tau (BLEU, 11 rows): undefined where one side is constant" in md
    found = [f"{p.name}: {line}" for p in written
             for line in p.read_text().splitlines() if re.search(r"\bnan\b", line, re.I)]
    assert not found, found


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
@pytest.mark.parametrize("a,b,sign", [("C3", "C1", "-"), ("C1", "C3", "+")])
def test_compare_signs_a_difference_as_the_pages_do(a, b, sign, capsys):
    """How much better A is than B, positive when A is better, as the claims and Table 3's "yours against" sign
    it (compare printed A minus B in perplexity: +14.58 where C3 is worse), and the header says so."""
    repo = Path(__file__).resolve().parents[1]
    code, out, err = run("compare", a, b, "--runs", repo / "results/ablation2-cpu2/zoo.db", "--profile", "ablation",
                         capsys=capsys)
    assert code == 0, err
    assert f"Δ positive when {a} is better (lower dev perplexity), as the pages sign it" in out.splitlines()[0], out
    interval = "[-19.78, -9.37]" if sign == "-" else "[+9.37, +19.78]"
    assert f"Δ {sign}14.58 (how much better {a} is than {b}), 95% interval {interval}," in out, out
    assert "C1 beats C3 by 14.58 PPL" in out


def test_latex_tables_fit_a_page_and_draw_no_figure_they_do_not_use(tmp_path, capsys):
    """`--format latex`: no tabular wider than the row names and 8 columns (Table 3 was 26 columns, its claims 12
    with 100-character sentences in `l` columns), no cell over 24 characters (a longer one is a numbered
    reference, its text listed below the table), and no PNG that no .tex includes (23 were drawn)."""
    from zoo.reports.latex import MAX_CELL, MAX_COLS
    repo = Path(__file__).resolve().parents[1]
    code, _, err = run("report", "--runs", repo / "results/quick-cpu2/zoo.db", "--format", "latex",
                       "--out", tmp_path, capsys=capsys)
    assert code == 0, err
    text = "".join(p.read_text() for p in sorted(tmp_path.glob("*.tex")))
    specs = re.findall(r"\\begin\{tabular\}\{([lr]+)\}", text)
    assert specs and max(map(len, specs)) <= MAX_COLS + 1, specs
    unescape = lambda c: re.sub(r"\\ensuremath\{\\(\w+)\}|\\textgreater\{\}|\\(.)", "x", c).strip()
    bodies = re.findall(r"\\midrule(.*?)\\bottomrule", text, re.S)  # the rows, below the headers
    cells = [unescape(c) for body in bodies for line in body.splitlines() if line.endswith("\\\\")
             and "\\multicolumn" not in line for c in re.split(r"(?<!\\)&", line[:-2])[1:]]
    assert cells and max(map(len, cells)) <= MAX_CELL, max(cells, key=len)
    assert re.search(r"\\item\[\(\d+\)\] C-depth-ppl, sentence: C3 against C1 on PPL", text)  # the sentences, below
    used = set(re.findall(r"\\includegraphics(?:\[[^]]*\])?\{([^}]+)\}", text))
    drawn = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.png")}
    assert drawn == used and all((tmp_path / f).is_file() for f in used), (drawn, used)


@pytest.mark.parametrize("text, lines", [
    # a variant of the wrong shape (read before the values) beside another variant's wrong value
    ("extends: base\nvariants:\n  a: {model: {dropout: 2}}\n  b: {seeds: [1, 2]}\n", [3, 4]),
    ("extends: base\nvariants:\n  a: {compare_to: nosuch}\n  b: {model: {dropout: 2}}\n", [3, 4]),
    # a claim naming no row (checked once the variants resolve) beside a variant's wrong value
    ("extends: base\nclaims:\n  - {id: x, metric: bleu, better: a, than: zz}\nvariants:\n  a: {model: {h: 2}}\n"
     "  b: {model: {dropout: 2}}\n", [3, 6])])
def test_every_mistake_of_a_file_in_one_pass(tmp_path, capsys, text, lines):
    """Two mistakes in two variants found by different layers: both said, by line (only one was, one layer
    at a time: fix it, run again, meet the next)."""
    f = tmp_path / "exp.yaml"
    f.write_text(text)
    code, out, err = run("validate", f, capsys=capsys)
    fails = [line for line in out.splitlines() if line.startswith("FAIL  ")]
    assert code == 2 and [int(x.split(":")[1]) for x in fails] == lines, out + err
