"""A third round of mistakes (issue 23): a fresh clone's README test command, sweeps bounded before they
expand, foreign stores never written, YAML 1.2 scalars, cross-field errors at the line to change,
mistakes that used to pass silently, legitimate specs that used to be refused, and tracebacks."""
import hashlib
import os
import re
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.spec import MAX_TRIALS, resolve, variant_names

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "results" / "ablation-cpu2" / "zoo.db"


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def spec(tmp_path, text: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def fails_at(tmp_path, capsys, text: str, line: int, field: str, *more, command="validate", fragment=""):
    f = spec(tmp_path, text)
    code, out, err = run(command, f, *more, capsys=capsys)
    msg = (out + err).strip()
    assert code == 2 and "Traceback" not in msg, msg
    assert f"{f}:{line}: {field}: " in msg, msg
    assert fragment in msg, msg
    return msg


# -- README's block, as a reader runs it ---------------------------------------------------------

def readme_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"^```bash\n(.*?)^```", text, re.S | re.M).group(1)
    return [l for l in block.splitlines() if l.strip() and not l.startswith("#")]


def test_readme_block_is_set_up_run_test_with_a_relative_data_dir():
    setup, job, test = readme_block()
    assert "pip install -c constraints.txt" in setup and "scripts/system-deps.sh" in setup  # chromium, iproute2
    assert job.startswith("ZOO_DATA_DIR=../shared/data ") and test.startswith("ZOO_DATA_DIR=../shared/data ")
    assert "pytest" in test


def test_ci_runs_readme_block_verbatim():
    """CI can no longer differ from a reader: it sets no data path and runs no command of its own."""
    ci = (REPO / ".ci" / "run").read_text()
    code = [l for l in ci.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    assert "README.md" in ci and not any(re.search(r"ZOO_DATA_DIR|pytest|\bpip\b", l) for l in code)
    got = subprocess.run(["awk", r"/^```bash$/ {f = 1; next} /^```$/ {if (f) exit} f", "README.md"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert [l for l in got.splitlines() if l.strip() and not l.startswith("#")] == readme_block()


def test_data_dir_is_absolute_for_everything_the_tests_start():
    """README's relative ZOO_DATA_DIR would point nowhere from a test's temporary folder."""
    d = Path(os.environ["ZOO_DATA_DIR"])
    assert d.is_absolute() and (d / "MANIFEST.tsv").exists()


def test_pytest_prints_its_summary_line(pytestconfig):
    assert pytestconfig.getoption("verbose") >= -1  # -qq (README's -q plus one in addopts) drops it


# -- 1. bounded expansion --------------------------------------------------------------------------

def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # validation stays under 1 GB


def _validate_capped(f: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zoo.cli", "validate", str(f)], capture_output=True, text=True,
                          timeout=60, preexec_fn=_limit_memory, cwd=f.parent)


def test_a_billion_point_grid_is_refused_by_arithmetic(tmp_path):
    axes = "\n".join(f"    {k}: [{', '.join(str(i) for i in range(10))}]" for k in (
        "model.dropout", "train.schedule.lr_scale", "model.attention_dropout", "model.ff_dropout",
        "train.label_smoothing", "eval.length_penalty", "train.schedule.warmup_steps", "eval.beam_size", "train.seed"))
    f = spec(tmp_path, f"extends: base\nsweep:\n  grid:\n{axes}\n")
    ok = spec(tmp_path, "extends: base\n", "ok.yaml")
    r = subprocess.run([sys.executable, "-m", "zoo.cli", "validate", str(f), str(ok)], capture_output=True,
                       text=True, timeout=60, preexec_fn=_limit_memory)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert f"{f}:2: sweep: makes 1,000,000,000 trials" in r.stdout and f"ok    {ok}" in r.stdout  # the other file too


def test_trials_are_capped_across_variants_sweep_and_seeds(tmp_path, capsys):
    variants = "\n".join(f"  v{i}: {{}}" for i in range(30))
    fails_at(tmp_path, capsys, f"extends: base\nseeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nsweep:\n  random:\n"
                   f"    samples: 10\n    model.dropout: {{uniform: [0.0, 0.5]}}\nvariants:\n{variants}\n",
                   3, "sweep", fragment=f"makes 3,000 trials (30 variants x 10 sweep points x 10 seeds); at most {MAX_TRIALS:,}")


def test_a_megabyte_of_variants_validates_in_little_memory(tmp_path):
    lines, i = ["extends: base", "variants:"], 0
    while sum(map(len, lines)) + len(lines) < 990_000:
        lines.append(f"  v{i}: {{model: {{h: 8}}}}")
        i += 1
    f = spec(tmp_path, "\n".join(lines) + "\n")
    r = _validate_capped(f)
    assert r.returncode == 2 and f"{f}:2: variants: makes {i:,} trials" in r.stdout, r.stdout + r.stderr[-2000:]


# -- 2. a SQLite file that is not a zoo store ------------------------------------------------------

def _foreign(tmp_path) -> Path:
    f = tmp_path / "other.db"
    c = sqlite3.connect(f)
    c.execute("CREATE TABLE trials (id INTEGER, name TEXT)")  # its own `trials`, not zoo's
    c.execute("INSERT INTO trials VALUES (1, 'x')")
    c.commit()
    c.close()
    return f


@pytest.mark.parametrize("argv", [
    ("status", "--runs", "{f}"), ("status", "--runs", "{f}", "--json"), ("report", "--runs", "{f}", "--out", "{o}"),
    ("merge", "{f}", "{zoo}"), ("merge", "{zoo}", "{f}"), ("merge", "{f}", "{f2}")])
def test_a_foreign_sqlite_file_is_never_written(tmp_path, capsys, argv):
    f, zoo_db = _foreign(tmp_path), tmp_path / "mine.db"
    f2 = tmp_path / "f2.db"
    f2.write_bytes(f.read_bytes())
    from zoo.runner.store import Store
    Store(zoo_db).upsert("s.yaml", "v", "smoke", status="finished")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (f, f2)}
    args = [a.format(f=f, f2=f2, zoo=zoo_db, o=tmp_path / "o") for a in argv]
    code, out, err = run(*args, capsys=capsys)
    assert code == 2 and "is not a zoo results store" in err and "Traceback" not in out + err, (out, err)
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (f, f2)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f2.db", "mine.db", "other.db"]  # no -wal, -shm, report


def test_stores_say_they_are_zoos_and_older_ones_still_load(tmp_path, capsys):
    from zoo.runner.store import APPLICATION_ID, Store
    Store(tmp_path / "new.db")
    assert int.from_bytes((tmp_path / "new.db").read_bytes()[68:72], "big") == APPLICATION_ID
    legacy = tmp_path / "legacy.db"
    from zoo.runner.storefile import unpacked
    legacy.write_bytes(unpacked(REFERENCE.with_name("zoo.db.xz")).read_bytes())  # from before the application_id
    digest = hashlib.sha256(legacy.read_bytes()).hexdigest()
    code, out, _ = run("status", "--runs", legacy, capsys=capsys)
    assert code == 0 and "62 trials" in out and hashlib.sha256(legacy.read_bytes()).hexdigest() == digest
    assert run("merge", tmp_path / "new.db", legacy, capsys=capsys)[0] == 0  # read as a source, adopted as INTO
    assert len(Store(tmp_path / "new.db", readonly=True).trials()) == 62


def test_merge_into_a_new_store_from_a_missing_one_creates_nothing(tmp_path, capsys):
    code, _, err = run("merge", tmp_path / "new.db", tmp_path / "missing.db", capsys=capsys)
    assert code == 2 and "no results store there" in err and not (tmp_path / "new.db").exists()


def test_report_on_dev_null_is_an_error(tmp_path, capsys):
    code, _, err = run("report", "--runs", "/dev/null", "--out", tmp_path / "o", capsys=capsys)
    assert code == 2 and "not a regular file" in err


# -- 3. YAML 1.2 scalars, keys as typed ------------------------------------------------------------

def test_sexagesimal_is_a_string_not_5400(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\ntrain:\n  time_limit_minutes: 1:30:00\n", 3,
             "train.time_limit_minutes", fragment="'1:30:00'")


def test_variant_keys_are_the_strings_typed(tmp_path):
    f = spec(tmp_path, "extends: base\nvariants:\n  010: {}\n  8: {model: {h: 4}}\n  on: {}\n  2024-01-01: {}\n"
             "  0.5: {}\n  null: {}\n")
    assert variant_names(f) == ["010", "8", "on", "2024-01-01", "0.5", "null"]
    cfgs = {c.variant: c for c in resolve(f)}
    assert cfgs["8"].model.h == 4 and cfgs["010"].model.h == 8


def test_core_schema_values(tmp_path):
    f = spec(tmp_path, "extends: base\nmodel:\n  d_ff: 0x800\n  N: 0o6\ntrain:\n  steps: 100_000\n"
             "  optimizer: {eps: 1e-9}\n")
    c = resolve(f)[0]
    assert (c.model.d_ff, c.model.N, c.train.steps, c.train.optimizer.eps) == (2048, 6, 100_000, 1e-9)


@pytest.mark.parametrize("value", ["yes", "on", "off"])
def test_yaml11_booleans_are_strings_with_a_hint(tmp_path, capsys, value):
    fails_at(tmp_path, capsys, f"extends: base\nmodel:\n  share_embeddings: {value}\n", 3, "model.share_embeddings",
             fragment="only true and false are booleans")


# -- 4. cross-field rules at the line to change ----------------------------------------------------

def test_averaging_beyond_kept_checkpoints_points_at_the_field_set(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\ndescription: x\neval:\n  average_checkpoints: 9\n", 4,
             "eval.average_checkpoints")
    fails_at(tmp_path, capsys, "extends: base\neval:\n  average_checkpoints: 5\ntrain:\n  keep_checkpoints: 2\n", 3,
             "eval.average_checkpoints")  # both set in the file: the rule's first field


def test_kept_checkpoints_blamed_when_only_it_was_set(tmp_path, capsys):
    base = spec(tmp_path, "extends: base\neval: {average_checkpoints: 5}\ntrain: {keep_checkpoints: 5}\n", "b.yaml")
    fails_at(tmp_path, capsys, f"extends: {base}\nmodel: {{N: 6}}\ntrain:\n  keep_checkpoints: 2\n", 4,
             "train.keep_checkpoints")


def test_set_with_a_list_index_blames_the_set(tmp_path, capsys):
    code, _, err = run("show", "base", "--set", "train.optimizer.betas.0=0.5", capsys=capsys)
    assert code == 2 and "--set train.optimizer.betas.0=0.5: train.optimizer.betas.0: a list is set whole" in err


def test_random_samples_errors_point_at_samples_and_echo_it(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nsweep:\n  random:\n    samples: 0\n    model.dropout: {uniform: [0, 1]}\n",
             4, "sweep.random.samples", fragment="(got 0)")


def test_parsing_only_options_on_a_translation_corpus(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\ndata:\n  dataset: multi30k\neval:\n  metric: f1\n", 5, "eval.metric",
             fragment="multi30k is a translation corpus")
    fails_at(tmp_path, capsys, "extends: base\ndata:\n  dataset: multi30k\n  target_vocab: symbols\n", 4,
             "data.target_vocab")


# -- 5. mistakes that used to pass silently --------------------------------------------------------

def test_model_max_len_must_hold_the_training_sentences(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nmodel:\n  max_len: 256\n", 3, "model.max_len", fragment="data.max_len + 2")


def test_asha_grace_beyond_the_trials_steps(tmp_path, capsys):
    text = ("extends: base\nsweep:\n  grid: {model.dropout: [0.0, 0.1]}\n  scheduler:\n    asha:\n"
            "      grace_steps: 200\n")
    fails_at(tmp_path, capsys, text, 6, "sweep.scheduler.asha.grace_steps", "--profile", "smoke",
             fragment="ASHA would never stop a trial")
    assert resolve(spec(tmp_path, text, "ok.yaml"))  # at the paper's 100k steps it is fine


def test_unreachable_min_len(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\neval:\n  min_len: 1024\n", 3, "eval.min_len", fragment="never be reached")


def test_randint_takes_whole_numbers(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nsweep:\n  random:\n    samples: 2\n    model.N: {randint: [1.5, 4]}\n",
             5, "sweep.random.model.N", fragment="whole-number bounds")


def test_seed_swept_and_on_a_seeds_axis(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nseeds: [1, 2]\nsweep:\n  grid:\n    train.seed: [1, 2]\n", 5,
             "sweep.grid.train.seed", fragment="keep one of the two")


def test_random_draws_never_repeat_a_point(tmp_path, capsys):
    f = spec(tmp_path, "extends: base\nsweep:\n  random:\n    samples: 6\n    model.h: {choice: [1, 2, 4, 8, 16, 32]}\n")
    assert sorted(c.model.h for c in resolve(f)) == [1, 2, 4, 8, 16, 32]
    fails_at(tmp_path, capsys, "extends: base\nsweep:\n  random:\n    samples: 7\n    model.h: {randint: [1, 4]}\n",
             4, "sweep.random.samples", fragment="only 3 different points")


def test_extends_inherits_variants_unless_the_file_names_its_own(tmp_path):
    child = spec(tmp_path, "extends: table3_A\ntrain: {steps: 100}\n")
    cfgs = resolve(child)
    assert [c.variant for c in cfgs] == ["A1", "A2", "A3", "A4"] and {c.train.steps for c in cfgs} == {100}
    assert cfgs[0].model.h == 1  # the variant's overrides still apply
    named = spec(tmp_path, "extends: table3_A\nname: mine\n", "named.yaml")
    assert variant_names(named) == ["mine"]


# -- 6. legitimate inputs ---------------------------------------------------------------------------

def test_a_section_whose_lines_are_all_commented_out(tmp_path):
    f = spec(tmp_path, "extends: base\nmodel:\n  # N: 4\ntrain:\n  optimizer:\n  # eps: 1e-8\nvariants:\n")
    assert resolve(f)[0].model.N == 6


def test_a_63_character_variant_on_a_seeds_axis(tmp_path):
    name = "v" * 63
    cfgs = resolve(spec(tmp_path, f"extends: base\nseeds: [1, 2, 3]\nvariants:\n  {name}: {{}}\n"))
    assert [c.variant for c in cfgs] == [name] * 3
    trials = [c.trial for c in cfgs]
    assert len(set(trials)) == 3 and all(len(t) <= 64 and t.endswith(f"-seed{i}") for i, t in enumerate(trials, 1))


# -- 7. tracebacks ----------------------------------------------------------------------------------

def test_translate_on_a_folder_that_is_not_a_zoo_run(tmp_path, capsys, monkeypatch):
    (tmp_path / "config.json").write_text('{"model": 1}')
    (tmp_path / "summary.json").write_text("not json")
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    code, _, err = run("translate", tmp_path, capsys=capsys)
    assert code == 2 and "is not a zoo run's file" in err and "Traceback" not in err


@pytest.mark.parametrize("out", ["/proc/zoo-report", "FILE"])
def test_report_out_that_cannot_be_a_folder(tmp_path, capsys, out):
    if out == "FILE":
        out = tmp_path / "a-file"
        out.write_text("keep")
    code, _, err = run("report", "--runs", REFERENCE, "--table", "4", "--out", out, capsys=capsys)
    assert code == 2 and "--out" in err and "Traceback" not in err
    assert out == "/proc/zoo-report" or Path(out).read_text() == "keep"


# -- 8. small ---------------------------------------------------------------------------------------

def test_plan_without_measuring_says_so(capsys):
    code, out, _ = run("run", "table3_A", "--profile", "smoke", "--plan", "--no-measure", capsys=capsys)
    assert code == 0 and "est. 0 s" not in out and "not estimated" in out


def test_a_look_alike_letter_in_an_enum_value(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nmodel:\n  positional_encoding: sinus\u043eidal\n", 3,
             "model.positional_encoding", fragment="look-alike")


@pytest.mark.slow
def test_sigterm_says_how_to_resume(tmp_path):
    import signal
    import time
    p = subprocess.Popen([sys.executable, "-m", "zoo.cli", "train", "base", "--profile", "smoke", "--set",
                          "train.steps=100000", "--out", str(tmp_path / "r")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not list((tmp_path / "r").glob("metrics.jsonl")):
            time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 143 and "interrupted by SIGTERM; run the same command again to resume" in err, err[-2000:]


def test_a_misspelt_compare_to_is_refused_at_its_line(tmp_path, capsys):
    """A reference row that does not exist would leave 'yours against' as 'not run' in every report."""
    text = ("extends: base\npaper: {table: 3, group: A}\nvariants:\n  mine: {model: {h: 4}}\n"
            "  theirs:\n    model: {h: 2}\n    paper: {compare_to: bsae}\n")
    fails_at(tmp_path, capsys, text, 7, "paper.compare_to", fragment="did you mean 'base'")
    ok = spec(tmp_path, text.replace("bsae", "mine"), "ok.yaml")
    assert run("validate", ok, capsys=capsys)[0] == 0
