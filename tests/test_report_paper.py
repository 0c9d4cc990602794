"""Out to a paper (issue 46, item 3): `zoo report --format latex` writes each table as booktabs tables that
compile, and `zoo.table(zoo.results(store), n)` gives a notebook the page's table as a DataFrame."""
import re
import shutil
import subprocess

import pytest

from zoo.reports.render import tex


def test_tex_escapes_what_latex_reads_as_commands():
    assert tex("d_model & 5% {x} #1 $2 ~^\\") == \
        r"d\_model \& 5\% \{x\} \#1 \$2 \textasciitilde{}\textasciicircum{}\textbackslash{}"
    assert tex("Δ ±0.2 ≥ 1") == r"\ensuremath{\Delta} \ensuremath{\pm}0.2 \ensuremath{\geq} 1"


@pytest.fixture(scope="module")
def latex(repo, tmp_path_factory):
    out = tmp_path_factory.mktemp("latex")
    from zoo.cli import main  # in this process: a new one spends seconds importing what this one holds
    assert main(["report", "--runs", str(repo / "results/quick-cpu2/zoo.db"), "--format", "latex", "--out", str(out)]) == 0
    return out


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_latex_tables_are_whole_booktabs_tables(latex):
    assert {p.name for p in latex.glob("*.tex")} == {"table2.tex", "table3.tex", "table4.tex"}
    assert not list(latex.glob("*.md")) and not list(latex.glob("*.html"))  # asked for LaTeX alone
    text = (latex / "table3.tex").read_text()
    tables = re.findall(r"\\begin\{tabular\}\{([lr]+)\}(.*?)\\end\{tabular\}", text, re.S)
    assert len(tables) >= 2  # the table and its claims
    for spec, body in tables:
        assert body.count(r"\toprule") == body.count(r"\midrule") == body.count(r"\bottomrule") == 1
        for line in body.splitlines():
            if line.endswith(r"\\") and r"\multicolumn" not in line:  # a row: one cell a column, no stray &
                assert len(re.split(r"(?<!\\)&", line)) == len(spec), line
    assert r"d\_model" in text and "d_model" not in text.replace(r"d\_model", "")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine on this machine")
def test_latex_tables_compile(latex, tmp_path):
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage{booktabs}\n"
                   "\\usepackage[landscape,margin=1cm]{geometry}\n\\begin{document}\n\\tiny\n"
                   + "".join(f"\\input{{{latex / n}}}\n" for n in ("table2.tex", "table3.tex", "table4.tex"))
                   + "\\end{document}\n")
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]


def test_a_table_as_a_dataframe_has_one_row_per_table_row(repo):
    import zoo
    runs = zoo.results(repo / "results/quick-cpu2/zoo.db")
    df = zoo.table(runs, 3)
    assert df.index.name == "row" and list(df.index[:3]) == ["base", "A1", "A2"] and len(df) == 20
    assert df.loc["A1", "h"] == 1 and df.loc["A1", "d_k"] == 64 and isinstance(df.loc["A1", "measured PPL"], float)
    claims = zoo.table(runs, 3, section=1)
    assert {"verdict", "measured Δ", "measured 95% interval", "measured p (Holm)"} <= set(claims.columns)
    assert len(claims) == 19  # the paper's 19 claims, one row each
    from zoo.errors import UserError
    with pytest.raises(UserError, match="no Table 5"):
        zoo.table(runs, 5)
