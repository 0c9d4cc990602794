"""zoo's words to a user: did you mean, each allowed name once, help and figures printed as counted, a --set
or a folder that is no zoo run named in the message."""
import os
import sys

import pytest

from helpers import ran, run
from zoo.cli import main


def test_validate_takes_set_so_a_set_mistake_shows_before_a_run(repo, capsys):
    r = ran("validate", repo / "specs/base.yaml", "--set", "model.dropotu=0.3", capsys=capsys)
    assert r.returncode == 2 and "did you mean 'dropout'?" in r.stdout and "Traceback" not in r.stderr, r
    assert ran("validate", repo / "specs/base.yaml", "--set", "model.dropout=0.3", capsys=capsys).returncode == 0


def test_extends_a_missing_spec_suggests_the_built_in_one(tmp_path, capsys):
    (tmp_path / "x.yaml").write_text("extends: table3_Z\n")
    (tmp_path / "y.yaml").write_text("extends: base.yml\n")
    r = ran("validate", tmp_path, capsys=capsys)
    assert "did you mean 'table3_E'?" in r.stdout and "did you mean 'base'?" in r.stdout, r.stdout
    assert "a built-in spec by name: base, big" in r.stdout
    (tmp_path / "x.yaml").write_text("extends: far/qqqq.yaml\n")  # nothing close: the sentence still ends
    (tmp_path / "y.yaml").unlink()
    r = ran("validate", tmp_path, capsys=capsys)
    assert "did you mean" not in r.stdout and "qqqq.yaml). A spec extends a file relative to it" in r.stdout, r.stdout


def test_params_print_their_figures_as_counted(capsys):
    r = ran("params", "base", capsys=capsys)
    row = r.stdout.splitlines()[-1].split()
    assert row[:3] == ["base", "63,045,632", "63.0"] and "63.00" not in r.stdout, r.stdout


def test_show_prints_a_small_budget_in_tokens_not_0_0m(capsys):
    r = ran("show", "base", "--profile", "smoke", capsys=capsys)
    assert "= 18,000 tokens" in r.stdout and "0.0M" not in r.stdout, r.stdout


def allowed(err: str) -> list[str]:
    return err.split("Allowed: ")[1].split(")")[0].strip().split(", ")


def test_errors_list_each_allowed_name_once(repo, capsys):
    r = ran("show", "modrn", capsys=capsys)
    names = allowed(r.stderr)
    assert r.returncode == 2 and "table3_A" in names and len(names) == len(set(names)), r.stderr
    assert r.stderr.count("table3_A") == 1, r.stderr
    r = ran("compare", "C11", "C1", "--runs", repo / "results/quick-cpu2/zoo.db", capsys=capsys)
    names = allowed(r.stderr)
    assert r.returncode == 2 and "C1" in names and len(names) == len(set(names)), r.stderr
    assert r.stderr.count(" C2,") == 1, r.stderr


def test_did_you_mean_lists_pooled_choices_once():
    from zoo.text import did_you_mean
    assert did_you_mean("bse", ["base", "A1", "base"]) == "; did you mean 'base'? Allowed: A1, base"
    assert did_you_mean("zzz", ["base", "A1"]) == ". Allowed: A1, base"  # nothing close: a sentence of its own


def help_text(capsys, *argv) -> str:
    """`zoo ARGV --help` in this process: argparse prints the help and exits 0."""
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_compare_help_prints_one_percent_sign(capsys):
    out = help_text(capsys, "compare")
    assert "95% interval" in out and "%%" not in out, out
    assert "95% interval" in help_text(capsys)  # the one-line help, %-formatted by argparse


def test_set_with_a_list_index_blames_the_set(tmp_path, capsys):
    code, _, err = run("show", "base", "--set", "train.optimizer.betas.0=0.5", capsys=capsys)
    assert code == 2 and "--set train.optimizer.betas.0=0.5: train.optimizer.betas.0: a list is set whole" in err


def test_translate_on_a_folder_that_is_not_a_zoo_run(tmp_path, capsys, monkeypatch):
    (tmp_path / "config.json").write_text('{"model": 1}')
    (tmp_path / "summary.json").write_text("not json")
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    code, _, err = run("translate", tmp_path, capsys=capsys)
    assert code == 2 and "is not a zoo run's file" in err and "Traceback" not in err
