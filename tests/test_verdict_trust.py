"""Verdicts only where they can be trusted (issue 45, items 1 and 5): a row cut short by
train.time_limit_minutes gets no held/flipped/within-noise verdict and no winner in `zoo compare`; rows
that share fewer than 2 seeds are not compared "paired by seed"; a damaged trial row is named; `zoo run
--plan` names the time limit and the trials it would cut; a run's count line counts cut-short trials apart.

The stores here are SYNTHETIC: rows written with the real Store API (as tests/test_report.py writes them),
holding made-up dev perplexities. They are inputs to the report, not results."""
import io
import json
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

from zoo.evidence import claims as C
from zoo.runner.store import Store
from zoo.spec import resolve
from helpers import run

REPO = Path(__file__).resolve().parents[1]
MINE = """extends: table3_A
variants:
  two_heads: {model: {h: 2, d_k: 256, d_v: 256}, train: {label_smoothing: 0.0}}
claims:
  - {id: two-heads-better, better: two_heads, than: base, metric: dev_ppl}
"""
PPL = {"base": 40.0, "two_heads": 60.0}  # two_heads far worse: a claim on it would flip, were it judged


def put(st: Store, key: str, spec: Path, variant: str | None, seeds, steps_done: int | None = None,
        profile: str = "quick"):
    """Finished trials of one row, one per seed, as `zoo run --seeds` records them (steps_done: where a
    time limit stopped them; default the planned steps); `key`: the spec as the store names it."""
    t0 = time.time() - 3600
    for cfg in resolve(spec, variant, profile, seeds=list(seeds)):
        seed = cfg.train.seed
        done = steps_done or cfg.train.steps
        m = {"steps_done": done, "tokens_seen": done * 1000, "train_seconds": 300.0, "eval_split": "dev",
             "dev_ppl": PPL[cfg.variant] + (seed * (7 if variant else 3)) % 5 * 0.5, "dataset": cfg.data.dataset}
        st.upsert(key, cfg.trial, profile, variant=cfg.variant, config_hash=cfg.config_hash(), config=cfg.model_dump(mode="json"),
                  paper_table=cfg.paper.table, paper_group=cfg.paper.group, paper_row=cfg.paper.row,
                  status="finished", step=done, steps=cfg.train.steps, metrics=m, created_at=t0,
                  finished_at=t0 + seed)


def store_of(tmp_path: Path, base_seeds=(1, 2), mine_seeds=(1, 2), mine_steps=None) -> Path:
    (tmp_path / "mine.yaml").write_text(MINE)
    db = tmp_path / "runs" / "zoo.db"
    db.parent.mkdir()
    st = Store(db)
    put(st, "specs/base.yaml", REPO / "specs" / "base.yaml", None, base_seeds)
    put(st, str(tmp_path / "mine.yaml"), tmp_path / "mine.yaml", "two_heads", mine_seeds, mine_steps)
    return db


def claim_cells(md: str, cid: str) -> list[str]:
    claims = md[md.index("## Claims"):]
    return [c.strip() for c in next(l for l in claims.splitlines() if l.startswith(f"| {cid}")).split("|")]


def test_a_claim_on_a_row_cut_short_by_the_time_limit_gets_no_verdict(tmp_path, capsys):
    db = store_of(tmp_path, mine_steps=240)  # the quick profile's 5 minutes stopped two_heads at 240 of 500
    code, out, err = run("report", "--runs", db, "--out", tmp_path / "out", "--table", "3", capsys=capsys)
    assert code == 0, err
    md = (tmp_path / "out" / "table3.md").read_text()
    cells = claim_cells(md, "two-heads-better")
    verdict = cells[2]
    assert verdict.split(" (")[0].split(":")[0] not in C.VERDICTS, cells
    assert verdict.startswith("cut short: two_heads ran 240 of 500 steps"), cells
    assert "5-minute" in verdict and not any(c.startswith(("+", "-")) and c[1:2].isdigit() for c in cells[5:]), cells
    # its row in group A: Δ against base not measured, for the same reason
    row = next(l for l in md.splitlines() if l.startswith("| two_heads |"))
    assert "cut short: two_heads ran 240 of 500 steps" in row and "truncated: step 240 of 500" in row, row

    code, out, err = run("compare", "two_heads", "base", "--runs", db, capsys=capsys)
    assert code == 0 and "is better (p" not in out and "\n  Δ " not in out, out  # the header's sign convention aside
    assert "no verdict: cut short: two_heads ran 240 of 500 steps" in out, out
    code, out, err = run("compare", "two_heads", "base", "--runs", db, "--json", capsys=capsys)
    j = json.loads(out)
    assert j["delta"] is None and j["p"] is None and j["verdict"] == "no verdict" and "cut short" in j["missing"]


def test_the_same_rows_run_to_their_steps_are_judged(tmp_path, capsys):
    """The control: the store above with two_heads not cut short gets a verdict and a winner."""
    db = store_of(tmp_path)
    assert run("report", "--runs", db, "--out", tmp_path / "out", "--table", "3", capsys=capsys)[0] == 0
    assert claim_cells((tmp_path / "out" / "table3.md").read_text(), "two-heads-better")[2] == "flipped"
    code, out, _ = run("compare", "two_heads", "base", "--runs", db, capsys=capsys)
    assert "verdict: base is better" in out and "paired over seeds 1, 2" in out, out


def test_rows_sharing_one_seed_are_not_compared_paired_by_seed(tmp_path, capsys):
    db = store_of(tmp_path, base_seeds=(1, 2), mine_seeds=(2, 3))
    code, out, err = run("compare", "two_heads", "base", "--runs", db, capsys=capsys)
    assert code == 0, err
    assert "paired over" not in out and "unpaired" in out, out
    assert "two_heads on seeds 2, 3" in out and "base on seeds 1, 2" in out and "share only seed 2" in out, out
    j = json.loads(run("compare", "two_heads", "base", "--runs", db, "--json", capsys=capsys)[1])
    assert j["paired"] is False and j["a_seeds"] == [2, 3] and j["b_seeds"] == [1, 2]


def test_a_damaged_trial_row_is_named(tmp_path, capsys):
    db = store_of(tmp_path, mine_seeds=(1, 2, 3))
    c = sqlite3.connect(db)
    with c:
        c.execute("UPDATE trials SET metrics = substr(metrics, 1, 20) WHERE trial = 'two_heads-seed3'")
    c.close()
    code, out, err = run("compare", "two_heads", "base", "--runs", db, capsys=capsys)
    assert code == 0 and "Traceback" not in err
    assert "two_heads-seed3 (profile quick)" in err and "damaged" in err, err
    assert "left out: 1 damaged row" in out and "two_heads-seed3" in out, out
    assert "paired over seeds 1, 2" in out, out


def test_plan_names_the_time_limit_and_the_trials_it_would_cut(tmp_path):
    from zoo.runner import plan
    (tmp_path / "mine.yaml").write_text(MINE)
    cfgs = resolve(tmp_path / "mine.yaml", "two_heads", "quick", seeds=[1, 2])
    rows = plan.plan(cfgs, measure=False)
    rows[0].est_seconds, rows[1].est_seconds = 600.0, 120.0  # as measured on a slow machine: one over 5 minutes
    out = io.StringIO()
    plan.print_plan(rows, False, out)
    text = out.getvalue()
    assert "train.time_limit_minutes: 5" in text and "two_heads-seed1" in text.split("time limit:")[1], text
    assert "would stop 1 of 2 trials" in text and "two_heads-seed2" not in text.split("time limit:")[1], text
    assert json.loads(_json(rows))[0]["time_limit_minutes"] == 5
    rows[0].est_seconds = 60.0
    out = io.StringIO()
    plan.print_plan(rows, False, out)
    assert "train.time_limit_minutes: 5" in out.getvalue() and "would stop none" in out.getvalue(), out.getvalue()


def _json(rows) -> str:
    from zoo.runner import plan
    out = io.StringIO()
    plan.print_plan(rows, True, out)
    return out.getvalue()


def test_a_runs_count_line_counts_cut_short_trials_apart(tmp_path):
    from zoo.runner import sweep
    db = store_of(tmp_path, mine_steps=240)
    st = Store(db)
    spec = str(tmp_path / "mine.yaml")
    rows = ["two_heads-seed1", "two_heads-seed2"]
    live = SimpleNamespace(rows=rows, spec_of=dict.fromkeys(rows, spec))
    where = SimpleNamespace(store_path=db.resolve(), root=tmp_path / "runs")
    out = io.StringIO()
    assert sweep._summary(live, st, "quick", where, out) == 0
    text = out.getvalue()
    assert "0 finished, 2 cut short" in text and "two_heads-seed1 cut short: step 240 of 500" in text, text
