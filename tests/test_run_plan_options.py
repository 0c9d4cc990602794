"""zoo run --plan's options: an analysis plan, --power, --until-resolved with --max-seeds, --pilot, --no-measure;
each mistake refused (exit 2, the option or file:line:field) before anything runs."""
import pytest

from helpers import REPO, exit_2, refused, run, spec
from zoo.spec import MAX_SEEDS


PLAN = ("run", "table3_A", "--profile", "smoke", "--plan", "--no-measure")
QUICK = ("run", "table3_A", "--profile", "quick", "--plan", "--no-measure")  # smoke can test no claim: refused
REFERENCE = REPO / "results" / "ablation-cpu2" / "zoo.db"


def test_plan_with_analysis_reads_the_plan(tmp_path, capsys):
    bad = spec(tmp_path, "name: x\nalpha: 7\n", "plan.yaml")
    refused(*run(*PLAN, "--analysis", bad, capsys=capsys), f"{bad}:2: alpha: ")
    refused(*run(*PLAN, "--analysis", tmp_path / "none.yaml", capsys=capsys), "no such analysis plan file")
    good = spec(tmp_path, "name: ref\nseeds: {A1: 3, base: 3}\n", "good.yaml")
    code, out, err = run(*PLAN, "--analysis", good, capsys=capsys)
    assert code == 0 and "A1" in out and f"analysis plan: {good} (ref, " in err, out + err


@pytest.mark.parametrize("text, line, field, name", [
    ("name: x\nseeds: {A1: 3, A9: 3}\n", 2, "seeds.A9", "'A9'"),
    ("name: x\nclaims:\n  - A-one-head-bleu\n  - A-one-hed-ppl\n", 4, "claims.1", "'A-one-hed-ppl'")])
def test_a_plan_naming_rows_or_claims_that_do_not_exist(tmp_path, capsys, text, line, field, name):
    f = spec(tmp_path, text, "plan.yaml")
    refused(*run(*PLAN, "--analysis", f, capsys=capsys), f"{f}:{line}: {field}: no ", name, "Allowed")
    mine = spec(tmp_path, "extends: table3_A\nclaims: [{id: mine-wins, better: mine, than: A1, metric: dev_ppl}]\n"
                          "variants:\n  mine: {model: {h: 2, d_k: 256, d_v: 256}}\n")
    f = spec(tmp_path, "name: x\nclaims: [mine-wins]\nseeds: {mine: 2, A1: 2, C3_pre: 2}\n", "yours.yaml")
    assert run("run", mine, "--profile", "smoke", "--plan", "--no-measure", "--analysis", f, capsys=capsys)[0] == 0


def test_plan_power_until_resolved_says_what_the_rounds_reach(tmp_path, capsys):
    code, out, err = run("run", "table3_A", "--profile", "smoke", "--plan", "--power", "--until-resolved",
                         "--max-seeds", 4, "--storage", tmp_path, capsys=capsys)
    assert code == 0 and "A-one-head-bleu" in out, out + err
    assert "--until-resolved" in out and "--max-seeds 4" in out and "would stay open" in out, out
@pytest.mark.parametrize("k", [0, MAX_SEEDS + 1, 10**6])
def test_max_seeds_is_capped_like_a_spec_seeds_list(capsys, k):
    exit_2(*run(*QUICK, "--until-resolved", "--max-seeds", k, capsys=capsys), "--max-seeds",
           f"between 1 and {MAX_SEEDS}", str(k))


def test_max_seeds_without_until_resolved_is_refused_not_ignored(capsys):
    exit_2(*run(*QUICK, "--max-seeds", 20, capsys=capsys), "--max-seeds goes with --until-resolved")


def test_a_plan_under_until_resolved_says_later_rounds_are_not_in_it(capsys):
    code, out, err = run(*QUICK, "--until-resolved", "--max-seeds", 20, capsys=capsys)
    assert code == 0 and "A1" in out, out + err
    assert "--max-seeds 20" in err and "not in this plan" in err, err
    code, out, err = run(*QUICK, "--until-resolved", "--json", capsys=capsys)  # the note is not in the JSON
    assert code == 0 and out.lstrip().startswith("[") and "--max-seeds 10" in err, out + err


def test_a_missing_pilot_store_is_named_not_replaced_by_the_prior(tmp_path, capsys):
    missing = tmp_path / "pilot.db"
    exit_2(*run("run", "table3_C", "--plan", "--power", "--profile", "ablation", "--pilot", missing,
                capsys=capsys), f"--pilot {missing}", "no results store")
    exit_2(*run("run", "table3_C", "--plan", "--power", "--profile", "ablation", "--pilot", tmp_path,
                capsys=capsys), str(tmp_path / "zoo.db"))  # a folder: its zoo.db, named
    assert list(tmp_path.iterdir()) == []  # nothing created where the pilot was looked for


def test_pilot_without_power_is_refused(capsys):
    exit_2(*run(*QUICK, "--pilot", REFERENCE, capsys=capsys), "--pilot goes with --plan --power")


def test_plan_without_measuring_says_so(capsys):
    code, out, _ = run("run", "table3_A", "--profile", "smoke", "--plan", "--no-measure", capsys=capsys)
    assert code == 0 and "est. 0 s" not in out and "not estimated" in out


def test_several_specs_each_run_the_variant_names_they_have(tmp_path, capsys):
    """`--variant` over several specs: each runs the names it has, one with none of them runs nothing, and a name
    no spec has is refused naming every spec's variants; one spec still refuses a name it lacks."""
    mine = spec(tmp_path, "extends: base\nname: mine\nmodel: {h: 2, d_k: 256, d_v: 256}\n", "mine.yaml")
    code, out, err = run("run", "table3_A", mine, "table3_B", "--variant", "A2", "--variant", "mine", "--profile",
                         "smoke", "--plan", "--no-measure", capsys=capsys)
    trials = [x.split()[0] for x in out.splitlines()[1:] if x.strip() and not x[0].isdigit()]
    assert code == 0 and trials == ["A2", "mine"], out + err
    refused(*run("run", "table3_A", mine, "--variant", "A9", *PLAN[2:], capsys=capsys),
            "--variant: no spec of this run (", "has a variant 'A9'. Allowed: A1, A2, A3, A4, mine")
    refused(*run(*PLAN, "--variant", "mine", capsys=capsys), "--variant: no variant 'mine'")


def test_a_missing_spec_file_is_said_alike_with_one_spec_or_several(tmp_path, capsys):
    """One message for a spec file that is not there, whether it is the run's one spec or one of several (with
    --variant or not): its path, and where the paper's specs are."""
    gone = tmp_path / "nope.yaml"
    for argv in [(gone,), (gone, "table3_A"), (gone, "table3_A", "--variant", "A1")]:
        exit_2(*run("run", *argv, *PLAN[2:], capsys=capsys), f"{gone}: no such spec file (the paper's are in specs/")


def test_several_specs_are_one_experiment_unless_a_scheduler_or_a_shared_name_keeps_them_apart():
    """zoo run SPEC SPEC...: one Tune experiment, its trials side by side (tests/test_reference_parts.py runs one);
    one after another where a spec's scheduler compares its own trials, or two specs name a trial alike (the live
    table and Tune name a trial by its name)."""
    from types import SimpleNamespace as NS
    from zoo.runner.sweep import apart
    part = lambda names, asha=None: (NS(asha=asha), [], [NS(trial=n) for n in names])
    assert apart([part(["base"])]) == "" and apart([part(["base"]), part(["A1", "A2"])]) == ""
    assert "scheduler" in apart([part(["base"]), part(["A1"], asha=object())])
    assert apart([part(["base", "A1"]), part(["A1", "mine"])]) == "two specs name a trial alike (A1)"
