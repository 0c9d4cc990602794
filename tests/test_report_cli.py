"""zoo report's options and its --out folder: --spec, --bootstrap-seed, --analysis, a partial report's links,
an --out that cannot be a folder or holds pages committed to git."""
import re
import subprocess
from pathlib import Path

import pytest

from helpers import REPO, exit_2, ran, run, spec


REFERENCE = REPO / "results" / "ablation-cpu2" / "zoo.db"


SMALL = REPO / "results" / "table4-cpu2" / "zoo.db"  # 2 trials: the quickest store to report


def test_report_spec_that_is_no_spec_says_so(repo, tmp_path, capsys):
    store = repo / "results/quick-cpu2/zoo.db"
    r = ran("report", "--runs", store, "--spec", "nonexist.yaml", "--out", tmp_path / "a", capsys=capsys)
    assert r.returncode == 2 and "no such spec file" in r.stderr and "run `zoo run" not in r.stderr, r.stderr
    r = ran("report", "--runs", store, "--spec", "", "--out", tmp_path / "b", capsys=capsys)
    assert r.returncode == 2 and "--spec needs a spec" in r.stderr and not (tmp_path / "b").exists(), r.stderr


@pytest.mark.slow  # two reports with their figures
def test_a_partial_report_links_no_index_and_the_index_counts_the_users_rows(repo, tmp_path, capsys):
    """Table 3 alone links no index; a whole report links it from its pages and its index counts the user's rows
    (modern-cpu2's store cut to base and two of the user's rows, a seed each: its pages in seconds, not a minute)."""
    import shutil
    import sqlite3
    from zoo.runner.storefile import unpacked
    store = tmp_path / "zoo.db"
    shutil.copy(unpacked(repo / "results/modern-cpu2/zoo.db.xz"), store)
    with sqlite3.connect(store) as c:
        for table in ("trials", "points"):
            c.execute(f"DELETE FROM {table} WHERE trial NOT IN ('base-seed1', 'rope-seed1', 'swiglu-seed1')")
    c.close()
    r = ran("report", "--runs", store, "--table", "3", "--out", tmp_path / "t3", capsys=capsys)
    assert r.returncode == 0 and 'href="index.html"' not in (tmp_path / "t3/table3.html").read_text()
    r = ran("report", "--runs", store, "--out", tmp_path / "all", capsys=capsys)
    assert r.returncode == 0 and 'href="index.html"' in (tmp_path / "all/table3.html").read_text()
    line = next(l for l in (tmp_path / "all/index.md").read_text().splitlines() if l.startswith("- [Table 3:"))
    assert "1 done" in line and "2 your rows" in line, line


@pytest.mark.parametrize("seed", [-5000, -1, 2**32, 10**30])
def test_a_bootstrap_seed_outside_numpys_range_is_refused(tmp_path, capsys, seed):
    exit_2(*run("report", "--runs", REFERENCE, "--table", 3, "--format", "md", "--out", tmp_path / "o",
                "--bootstrap-seed", seed, capsys=capsys), "--bootstrap-seed", str(seed), str(2**32 - 1))
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # a bootstrapped Table 3 of a reference store
def test_the_largest_bootstrap_seed_is_a_report(tmp_path, capsys):
    code, out, err = run("report", "--runs", REFERENCE, "--table", 3, "--format", "md", "--out", tmp_path / "o",
                         "--bootstrap-seed", 2**32 - 1, capsys=capsys)
    assert code == 0, err
    assert f"bootstrap seed {2**32 - 1}" in (tmp_path / "o" / "table3.md").read_text()


def git(repo: Path, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          check=True, capture_output=True, text=True, timeout=60)


def test_report_refuses_to_replace_committed_pages_without_force(tmp_path, capsys):
    repo = tmp_path / "checkout"
    repo.mkdir()
    git(repo, "init", "-q")
    out = repo / "results" / "ref"
    report = ("report", "--runs", SMALL, "--table", 4, "--out", out)
    code, _, err = run(*report, capsys=capsys)  # a fresh folder in a checkout: written as before
    assert code == 0, err
    code, _, err = run(*report, capsys=capsys)  # written, not committed: nothing to lose, written again
    assert code == 0, err
    git(repo, "add", "results")
    git(repo, "commit", "-qm", "reference report")
    committed = (out / "table4.md").read_bytes()
    (out / "table4.md").write_text("edited by hand, committed\n")
    git(repo, "commit", "-qam", "edit")
    exit_2(*run(*report, capsys=capsys), f"--out {out}", "committed to git", "table4.md", "--force")
    assert (out / "table4.md").read_text() == "edited by hand, committed\n"  # untouched
    code, _, err = run(*report, "--force", capsys=capsys)
    assert code == 0, err
    stamp = lambda b: [x for x in b.splitlines() if not x.startswith(b"Generated ")]  # to the minute: may tick
    assert stamp((out / "table4.md").read_bytes()) == stamp(committed)
    # a sibling folder with no committed report files, inside the same checkout: no --force needed
    (repo / "results" / "other").mkdir()
    (repo / "results" / "other" / "README.md").write_text("notes\n")
    git(repo, "add", "results/other")
    git(repo, "commit", "-qm", "notes")
    code, _, err = run(*report[:-1], repo / "results" / "other", capsys=capsys)
    assert code == 0, err


def test_report_into_a_folder_outside_git_is_unchanged(tmp_path, capsys):
    out = tmp_path / "plain"
    for _ in range(2):  # fresh, then over its own pages: no git, no question
        code, _, err = run("report", "--runs", SMALL, "--table", 4, "--out", out, capsys=capsys)
        assert code == 0 and (out / "table4.md").exists(), err


def test_the_reference_scripts_rebuild_their_committed_pages_with_force():
    """results/*/*.sh write their pages into results/...: those pages are committed, so each says --force."""
    lines = [(sh, line) for sh in sorted(REPO.glob("results/*/*.sh"))
             for line in sh.read_text().splitlines() if re.search(r"\bzoo report\b", line)]
    assert lines
    for sh, line in lines:
        assert "--force" in line.split(), (sh, line)


@pytest.mark.parametrize("out", ["/proc/zoo-report", "FILE"])
def test_report_out_that_cannot_be_a_folder(tmp_path, capsys, out):
    if out == "FILE":
        out = tmp_path / "a-file"
        out.write_text("keep")
    code, _, err = run("report", "--runs", REFERENCE, "--table", "4", "--out", out, capsys=capsys)
    assert code == 2 and "--out" in err and "Traceback" not in err
    assert out == "/proc/zoo-report" or Path(out).read_text() == "keep"


MODERN = REPO / "results" / "modern-cpu2"


@pytest.mark.slow  # two reports of a reference store: about a minute
def test_a_changed_plan_marks_a_specs_own_claims_post_hoc(tmp_path, capsys):
    changed = spec(tmp_path, (MODERN / "plan.yaml").read_text().replace("\nalpha: 0.05", "\nalpha: 0.04"), "plan.yaml")
    assert changed.read_text() != (MODERN / "plan.yaml").read_text()
    for plan, out in ((changed, tmp_path / "changed"), (MODERN / "plan.yaml", tmp_path / "same")):
        code, _, err = run("report", "--runs", MODERN / "zoo.db", "--analysis", plan, "--table", 3, "--format", "md",
                           "--out", out, capsys=capsys)
        assert code == 0, err
    line = lambda out: next(x for x in (out / "table3.md").read_text().splitlines()
                            if x.startswith("| pre-ln-better (specs/modern.yaml) |"))
    assert "post hoc: its trials ran under another plan" in line(tmp_path / "changed"), line(tmp_path / "changed")
    assert "post hoc" not in line(tmp_path / "same"), line(tmp_path / "same")  # the plan they ran under
