"""The small habits of a good CLI (issue 46, item 4), each as a new user met it."""
import subprocess
import sys


def zoo(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "zoo.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_validate_takes_set_so_a_set_mistake_shows_before_a_run(repo):
    r = zoo("validate", repo / "specs/base.yaml", "--set", "model.dropotu=0.3")
    assert r.returncode == 2 and "did you mean 'dropout'?" in r.stdout and "Traceback" not in r.stderr, r
    assert zoo("validate", repo / "specs/base.yaml", "--set", "model.dropout=0.3").returncode == 0


def test_extends_a_missing_spec_suggests_the_built_in_one(tmp_path):
    (tmp_path / "x.yaml").write_text("extends: table3_Z\n")
    (tmp_path / "y.yaml").write_text("extends: base.yml\n")
    r = zoo("validate", tmp_path)
    assert "did you mean 'table3_E'?" in r.stdout and "did you mean 'base'?" in r.stdout, r.stdout
    assert "a built-in spec by name: base, big" in r.stdout


def test_params_print_their_figures_as_counted():
    r = zoo("params", "base")
    row = r.stdout.splitlines()[-1].split()
    assert row[:3] == ["base", "63,045,632", "63.0"] and "63.00" not in r.stdout, r.stdout


def test_show_prints_a_small_budget_in_tokens_not_0_0m():
    r = zoo("show", "base", "--profile", "smoke")
    assert "= 18,000 tokens" in r.stdout and "0.0M" not in r.stdout, r.stdout


def test_report_spec_that_is_no_spec_says_so(repo, tmp_path):
    store = repo / "results/quick-cpu2/zoo.db"
    r = zoo("report", "--runs", store, "--spec", "nonexist.yaml", "--out", tmp_path / "a")
    assert r.returncode == 2 and "no such spec file" in r.stderr and "run `zoo run" not in r.stderr, r.stderr
    r = zoo("report", "--runs", store, "--spec", "", "--out", tmp_path / "b")
    assert r.returncode == 2 and "--spec needs a spec" in r.stderr and not (tmp_path / "b").exists(), r.stderr


def test_a_partial_report_links_no_index_and_the_index_counts_the_users_rows(repo, tmp_path):
    r = zoo("report", "--runs", repo / "results/quick-cpu2/zoo.db", "--table", "3", "--out", tmp_path / "t3")
    assert r.returncode == 0 and 'href="index.html"' not in (tmp_path / "t3/table3.html").read_text()
    r = zoo("report", "--runs", repo / "results/modern-cpu2/zoo.db", "--out", tmp_path / "all")
    assert 'href="index.html"' in (tmp_path / "all/table3.html").read_text()
    line = next(l for l in (tmp_path / "all/index.md").read_text().splitlines() if l.startswith("- [Table 3:"))
    assert "your rows" in line, line
