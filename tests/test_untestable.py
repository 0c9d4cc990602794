"""Rows run at a profile too small for any claim (issue 51, item 4): a profile's `untestable:` (smoke's) makes
every claim on its rows "untestable at this budget" with its reason, never held / flipped / within noise /
equivalent, on Table 3's Claims, in `zoo compare` and in what the claims figure is drawn from.

The stores here are SYNTHETIC: rows written with the real Store API (as tests/test_verdict_trust.py writes
them), holding made-up dev perplexities far apart, so the same rows at a profile that can test claims flip."""
import json
import time
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.evidence import claims as C
from zoo.runner.store import Store
from zoo.spec import SpecError, resolve

REPO = Path(__file__).resolve().parents[1]
PPL = {"A3": 60.0, "A4": 40.0}  # the paper has A3 (16 heads) ahead of A4 (32): these rows would flip it


def store_of(tmp_path: Path, profile: str, recorded: bool = True) -> Path:
    """A3 and A4 of specs/table3_A.yaml finished on seeds 1-3 at `profile`, as `zoo run --seeds 3` records
    them; `recorded=False`: stored as a trial from before trials kept their profile's `untestable:`."""
    db = tmp_path / "runs" / "zoo.db"
    db.parent.mkdir(parents=True)
    st, t0 = Store(db), time.time() - 3600
    for cfg in resolve(REPO / "specs" / "table3_A.yaml", ["A3", "A4"], profile, seeds=[1, 2, 3]):
        seed, steps = cfg.train.seed, cfg.train.steps
        config = cfg.model_dump(mode="json")
        if not recorded:
            del config["untestable"]
        m = {"steps_done": steps, "tokens_seen": steps * 1000, "train_seconds": 30.0, "eval_split": "dev",
             "dev_ppl": PPL[cfg.variant] + seed * (0.5 if cfg.variant == "A3" else 0.3), "dataset": cfg.data.dataset}
        st.upsert("specs/table3_A.yaml", cfg.trial, profile, variant=cfg.variant, config_hash=cfg.config_hash(),
                  config=config, paper_table=3, paper_group="A", paper_row=cfg.paper.row, status="finished",
                  step=steps, steps=steps, metrics=m, created_at=t0, finished_at=t0 + seed)
    return db


def claim_cells(md: str, cid: str) -> list[str]:
    claims = md[md.index("## Claims"):]
    return [c.strip() for c in next(l for l in claims.splitlines() if l.startswith(f"| {cid} ")).split("|")]


def report(db: Path, out: Path, capsys) -> str:
    assert main(["report", "--runs", str(db), "--out", str(out), "--table", "3"]) == 0, capsys.readouterr().err
    return (out / "table3.md").read_text()


@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "older-row"])
def test_smoke_rows_get_no_verdict_on_table3(tmp_path, capsys, recorded):
    md = report(store_of(tmp_path, "smoke", recorded), tmp_path / "out", capsys)
    ppl = claim_cells(md, "A-too-many-heads-ppl")  # (these rows keep no BLEU: its claim is "not measured")
    assert ppl[2].startswith(f"{C.UNTESTABLE}: run at profile smoke: smoke trains"), ppl
    assert ppl[6].startswith("-"), ppl  # the measured Δ is still shown (A3 behind), with no verdict
    assert "untestable at this budget (run at profile smoke" in ppl[-2] and "no verdict" in ppl[-2], ppl
    assert "flipped" not in md.split("## Claims")[1].split("Tally")[0], md


def test_the_same_rows_at_a_profile_that_can_test_claims_are_judged(tmp_path, capsys):
    """The control: the same perplexities at the quick profile flip the paper's claim."""
    md = report(store_of(tmp_path, "quick"), tmp_path / "out", capsys)
    assert claim_cells(md, "A-too-many-heads-ppl")[2] == "flipped"


def test_judged_claims_from_the_api_carry_the_reason(tmp_path):
    """What the claims figure and `zoo.results` callers read: the section's Verdict objects."""
    import zoo
    from zoo.reports.verdicts import claims_section
    runs = zoo.results(store_of(tmp_path, "smoke"))
    v = next(v for v in claims_section(runs).data if v.claim.id == "A-too-many-heads-ppl")
    assert v.verdict == C.UNTESTABLE and v.p_holm is None and v.family == "", v
    assert v.reason.startswith("run at profile smoke: ") and v.estimate is not None
    assert C.Tally.of([v]).counts() == {C.UNTESTABLE: 1}


def test_zoo_compare_gives_smoke_rows_no_winner(tmp_path, capsys):
    db = store_of(tmp_path, "smoke")
    assert main(["compare", "A4", "A3", "--runs", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"verdict: {C.UNTESTABLE}: run at profile smoke" in out, out
    assert "is better (p" not in out and "within noise" not in out and "seeds per row would" not in out, out
    assert main(["compare", "A4", "A3", "--runs", str(db), "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["verdict"].startswith(C.UNTESTABLE) and j["more_seeds"] is None and "no verdict" in j["sentence"], j


def test_a_profile_extending_smoke_keeps_the_flag_and_may_clear_it(tmp_path):
    (tmp_path / "tiny.yaml").write_text("extends: smoke\nset: {train: {steps: 12}}\n")
    (tmp_path / "judged.yaml").write_text("extends: smoke\nuntestable: ''\n")
    spec = REPO / "specs" / "base.yaml"
    assert resolve(spec, None, str(tmp_path / "tiny.yaml"))[0].untestable.startswith("smoke trains")
    assert resolve(spec, None, str(tmp_path / "judged.yaml"))[0].untestable == ""
    assert resolve(spec, None, "quick")[0].untestable == ""
    (tmp_path / "bad.yaml").write_text("extends: smoke\nuntestable: [1, 2]\n")
    with pytest.raises(SpecError, match="untestable"):
        resolve(spec, None, str(tmp_path / "bad.yaml"))


def test_a_trend_width_at_an_untestable_profile_gets_no_difference():
    """The scale trend's page (zoo.evidence.trend): a width whose profile can test no claim is no width of a
    slope, said in words, where the same trials at a testable profile give a difference there."""
    import numpy as np
    from zoo.evidence import trend as T
    rng = np.random.default_rng(0)
    tokens = rng.integers(5, 25, size=40).astype(float)
    trial = lambda s, level: T.Seeded(s, np.stack([(level + rng.normal(0, 0.3, 40)) * tokens, tokens], axis=1))
    rows = {p: {"A3": [trial(s, 2.0) for s in (1, 2, 3)], "A4": [trial(s, 2.1) for s in (1, 2, 3)]}
            for p in ("tiny", "wide")}
    args = (rows, {"tiny": 32, "wide": 64}, {"A-too-many-heads": ("A3", "A4")})
    judged = T.fit_trend(*args, resamples=200)[0]
    assert judged.widths[0].estimate is not None and judged.slope is not None
    s = T.fit_trend(*args, resamples=200, untestable={"tiny": "run at profile tiny: too small"})[0]
    assert s.widths[0].estimate is None and s.widths[0].missing == f"{C.UNTESTABLE}: run at profile tiny: too small"
    assert s.slope is None and s.verdict.startswith(f"not at every width: {C.UNTESTABLE}"), s.verdict
    assert s.widths[1].verdict in C.VERDICTS  # the other width is judged as before
