"""The analysis plan (issue 34): a file validated like a spec, a hash that is the analysis and not its text,
and the post hoc rule."""
import pytest

from zoo.evidence import analysis
from zoo.cli import main
from zoo.spec import SpecError

PLAN = """\
# the trend reference's plan, say
name: trend-cpu2
primary: ppl
secondary: [bleu]
alpha: 0.05
tie_margin: 0.015
seeds: {base: 5, A1: 5}
max_looks: 1
"""


def test_a_plan_loads_and_its_hash_ignores_comments_and_key_order(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(PLAN)
    b.write_text("\n".join(reversed([x for x in PLAN.splitlines() if not x.startswith("#")])) + "\n# a comment\n")
    pa, pb = analysis.load_plan(a), analysis.load_plan(b)
    assert pa == pb and pa.hash() == pb.hash() and len(pa.hash()) == 16
    assert pa.families() == {"ppl": "primary", "bleu": "secondary"}
    c = tmp_path / "c.yaml"
    c.write_text(PLAN.replace("alpha: 0.05", "alpha: 0.1"))  # another level is another analysis
    assert analysis.load_plan(c).hash() != pa.hash()


@pytest.mark.parametrize("line, field, says", [
    ("alpha: 0.05", "alpha", "less than or equal to 0.5"),
    ("primary: ppl", "primary", "'ppl' or 'bleu'"),
    ("max_looks: 1", "max_looks", "greater than or equal to 1"),
    ("seeds: {base: 5, A1: 5}", "seeds", "seed count is 2-100"),
    ("tie_margin: 0.015", "tie_margn", "a plan holds: name, primary"),
])
def test_a_mistake_names_the_file_line_and_field(tmp_path, line, field, says):
    bad = {"alpha": "alpha: 5", "primary": "primary: acc", "max_looks": "max_looks: 0",
           "seeds": "seeds: {base: 1}", "tie_margn": "tie_margn: 0.01"}[field]
    f = tmp_path / "plan.yaml"
    f.write_text(PLAN.replace(line, bad))
    with pytest.raises(SpecError) as e:
        analysis.load_plan(f)
    n = PLAN.splitlines().index(line) + 1
    assert str(e.value).startswith(f"{f}:{n}: {field}") and says in str(e.value), str(e.value)


def test_zoo_run_refuses_a_bad_plan_before_anything_starts(tmp_path, capsys):
    f = tmp_path / "plan.yaml"
    f.write_text("name: x\nalpha: -1\n")
    assert main(["run", "table3_A", "--profile", "smoke", "--storage", str(tmp_path / "runs"),
                 "--analysis", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:2: alpha" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_post_hoc_when_trials_ran_under_another_plan_or_none(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text(PLAN)
    plan = analysis.load_plan(f)
    assert analysis.post_hoc(plan, [plan.hash(), plan.hash()]) == ""
    assert "another plan" in analysis.post_hoc(plan, [plan.hash(), "0123456789abcdef"])
    assert "no analysis plan" in analysis.post_hoc(plan, [plan.hash(), None])
    assert analysis.post_hoc(None, [None]) == ""  # no plan named: nothing to be post hoc against


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_report_under_a_plan_marks_claims_whose_trials_ran_under_another(tmp_path, capsys):
    """The v2 store's trials ran under no plan: every tested claim is post hoc under one; once its trials
    carry the plan's hash (as `zoo run --analysis` stores it), none is."""
    import shutil
    import sqlite3
    from pathlib import Path
    store = tmp_path / "zoo.db"
    from zoo.runner.storefile import unpacked
    shutil.copy(unpacked(Path(__file__).resolve().parents[1] / "results/ablation2-cpu2/zoo.db.xz"), store)
    f = tmp_path / "plan.yaml"
    f.write_text("name: v2-as-if\nresamples: 1000\n")

    def claims_md(out):
        assert main(["report", "--runs", str(store), "--out", str(out), "--table", "3", "--format", "md",
                     "--profile", "ablation", "--analysis", str(f)]) == 0
        text = (out / "table3.md").read_text()
        return text, [line for line in text.splitlines() if line.startswith(("| B-small-dk", "| C-width"))]
    text, lines = claims_md(tmp_path / "a")
    assert lines and all("(post hoc)" in line for line in lines), lines
    assert "Analysis plan: v2-as-if" in text and "ran under no analysis plan" in text
    with sqlite3.connect(store) as c:
        c.execute("ALTER TABLE trials ADD COLUMN analysis TEXT")
        c.execute("UPDATE trials SET analysis = ?", (analysis.load_plan(f).hash(),))
    text, lines = claims_md(tmp_path / "b")
    assert lines and not any("(post hoc)" in line for line in lines), lines
    assert "every claim's trials ran under it" in text
    capsys.readouterr()


TREND = PLAN + """\
trend:
  profiles: {trend_32: 5, trend_64: 5, trend_128: 3}
  comparisons: {A-one-head: [base, A1], C-depth: [C3, C1]}
"""


def test_a_plan_without_a_trend_keeps_the_hash_it_had_before_trends_existed(tmp_path):
    """`trend:` came later: left out of the hash while unset, so no earlier plan (or its trials) changes."""
    assert analysis.AnalysisPlan(name="x").hash() == "cc9919ee48f56619"  # its hash before `trend` existed
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(PLAN)
    b.write_text(TREND)
    pa, pb = analysis.load_plan(a), analysis.load_plan(b)
    assert pb.trend.profiles == {"trend_32": 5, "trend_64": 5, "trend_128": 3} and pa.hash() != pb.hash()
    assert list(pb.trend.profiles) == ["trend_32", "trend_64", "trend_128"]  # the widths' order is kept


@pytest.mark.parametrize("bad, says", [
    ("[base, A9]", "two different Table 3 rows"),
    ("[base, base]", "two different Table 3 rows"),
])
def test_a_trend_names_table_3_rows(tmp_path, bad, says):
    f = tmp_path / "p.yaml"
    f.write_text(TREND.replace("[C3, C1]", bad))
    with pytest.raises(SpecError) as e:
        analysis.load_plan(f)
    assert says in str(e.value) and f"{f}:" in str(e.value)


def test_the_trend_reference_plan_loads():
    from pathlib import Path
    plan = analysis.load_plan(Path(__file__).parents[1] / "results" / "trend-cpu2" / "plan.yaml")
    assert len(plan.trend.comparisons) == 6 and plan.primary == "ppl"
