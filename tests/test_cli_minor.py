"""Issue 38, reliability round 4: the CLI's last minor mistakes, each now exit 2 with one paragraph and
no traceback (`zoo: error:`), where they used to be ignored without a word, planned as if nothing had
been said, printed a traceback or replaced committed pages."""
import re
import subprocess
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.spec import MAX_SEEDS

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "results" / "ablation-cpu2" / "zoo.db"
SMALL = REPO / "results" / "table4-cpu2" / "zoo.db"  # 2 trials: the quickest store to report


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def exit_2(code, out, err, *fragments):
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err and "zoo: error:" in err, err
    for f in fragments:
        assert f in err, (f, err)


# -- zoo run --max-seeds ---------------------------------------------------------------------------------

PLAN = ("run", "table3_A", "--profile", "quick", "--plan", "--no-measure")  # smoke can test no claim: refused


@pytest.mark.parametrize("k", [0, MAX_SEEDS + 1, 10**6])
def test_max_seeds_is_capped_like_a_spec_seeds_list(capsys, k):
    exit_2(*run(*PLAN, "--until-resolved", "--max-seeds", k, capsys=capsys), "--max-seeds",
           f"between 1 and {MAX_SEEDS}", str(k))


def test_max_seeds_without_until_resolved_is_refused_not_ignored(capsys):
    exit_2(*run(*PLAN, "--max-seeds", 20, capsys=capsys), "--max-seeds goes with --until-resolved")


def test_a_plan_under_until_resolved_says_later_rounds_are_not_in_it(capsys):
    code, out, err = run(*PLAN, "--until-resolved", "--max-seeds", 20, capsys=capsys)
    assert code == 0 and "A1" in out, out + err
    assert "--max-seeds 20" in err and "not in this plan" in err, err
    code, out, err = run(*PLAN, "--until-resolved", "--json", capsys=capsys)  # the note is not in the JSON
    assert code == 0 and out.lstrip().startswith("[") and "--max-seeds 10" in err, out + err


# -- zoo run --plan --power --pilot ----------------------------------------------------------------------

def test_a_missing_pilot_store_is_named_not_replaced_by_the_prior(tmp_path, capsys):
    missing = tmp_path / "pilot.db"
    exit_2(*run("run", "table3_C", "--plan", "--power", "--profile", "ablation", "--pilot", missing,
                capsys=capsys), f"--pilot {missing}", "no results store")
    exit_2(*run("run", "table3_C", "--plan", "--power", "--profile", "ablation", "--pilot", tmp_path,
                capsys=capsys), str(tmp_path / "zoo.db"))  # a folder: its zoo.db, named
    assert list(tmp_path.iterdir()) == []  # nothing created where the pilot was looked for


def test_pilot_without_power_is_refused(capsys):
    exit_2(*run(*PLAN, "--pilot", REFERENCE, capsys=capsys), "--pilot goes with --plan --power")


# -- zoo report --bootstrap-seed ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [-5000, -1, 2**32, 10**30])
def test_a_bootstrap_seed_outside_numpys_range_is_refused(tmp_path, capsys, seed):
    exit_2(*run("report", "--runs", REFERENCE, "--table", 3, "--format", "md", "--out", tmp_path / "o",
                "--bootstrap-seed", seed, capsys=capsys), "--bootstrap-seed", str(seed), str(2**32 - 1))
    assert not (tmp_path / "o").exists()


def test_the_largest_bootstrap_seed_is_a_report(tmp_path, capsys):
    code, out, err = run("report", "--runs", REFERENCE, "--table", 3, "--format", "md", "--out", tmp_path / "o",
                         "--bootstrap-seed", 2**32 - 1, capsys=capsys)
    assert code == 0, err
    assert f"bootstrap seed {2**32 - 1}" in (tmp_path / "o" / "table3.md").read_text()


# -- zoo report --out a folder of committed pages ----------------------------------------------------------

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
