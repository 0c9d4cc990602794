"""`zoo report`: Tables 2-4 from a results store, as markdown and HTML.

The stores here are SYNTHETIC: rows written with the real Store API, holding made-up metrics, curves
and attention maps shaped like a trial's summary. They are inputs to the report, not results.
"""
import math
import re
import time
from pathlib import Path

import pytest

from runner.store import Store
from zoo.cli import main
from zoo.paper import TABLE3
from zoo.spec import resolve

REPO = Path(__file__).resolve().parents[1]
T3_FILES = {"base": "base", "A": "table3_A", "B": "table3_B", "C": "table3_C", "D": "table3_D",
            "E": "table3_E", "big": "big"}
FINISHED = ("base", "A1", "A2", "A3", "A4", "C1", "C2", "C4", "C6", "D1", "D3")


def _synthetic_metrics(cfg, bleu, ppl, split="dev", splits=None):
    sig = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3"
    top = {"eval_split": split, "eval_sentences": 1014, "eval_weights": "final weights", "bleu": bleu,
           "bleu_signature": sig, "bleu_tokenized": bleu + 0.7, "bleu_tokenized_label": "tokenized BLEU (synthetic)"}
    return {"steps_done": cfg.train.steps, "tokens_seen": cfg.train.steps * cfg.train.batch_tokens // 2,
            "train_seconds": 1500.0, "dev_ppl": ppl, "vocab_size_actual": cfg.data.vocab_size - 3,
            "dataset": cfg.data.dataset, "device": "cpu", "workers": 1, **top,
            "splits": splits or {split: top}}


def _synthetic_attention(h, tokens):
    n = len(tokens)
    weights = []
    for k in range(h):  # each head attends mostly k tokens back, softmax-normalised rows
        head = []
        for i in range(n):
            row = [math.exp(-abs(j - (i - k % 3)) * (0.5 + k % 2)) for j in range(n)]
            s = sum(row)
            head.append([x / s for x in row])
        weights.append(head)
    return {"layer": "encoder 3", "sentence": " ".join(tokens), "tokens": tokens, "weights": weights}


def _curve(steps, final_ppl):
    return [{"step": s, "loss": 2.5 + 6 * math.exp(-s / (steps / 5)), "lr": 1e-3, "tokens_per_s": 2500.0,
             "dev_ppl": final_ppl * (1 + 30 * math.exp(-s / (steps / 6))) if s % (steps // 4) == 0 else None,
             "elapsed_s": s * 1.5} for s in range(steps // 20, steps + 1, steps // 20)]


def synthetic_store(path: Path, profile: str = "cpu") -> Path:
    """A store with SYNTHETIC rows: finished Table 3 rows, one running, one failed, one pending, the
    rest not run; Table 2 EN-DE base finished (test split, averaged), EN-DE big running."""
    st = Store(path)
    t0 = time.time() - 3600
    tokens = "▁Ein ▁Mann ▁in ▁einem ▁blauen ▁Hemd ▁steht ▁auf ▁einer ▁Leiter ▁. </s>".split()
    for row, group, ppl, bleu, _ in TABLE3:
        stem = T3_FILES[group]
        cfg = resolve(REPO / "specs" / f"{stem}.yaml", row if stem.startswith("table3") else None, profile)[0]
        key = (f"specs/{stem}.yaml", row, profile)
        common = dict(config_hash=cfg.config_hash(), config=cfg.model_dump(mode="json"), paper_table=3,
                      paper_group=group, paper_row=row, steps=cfg.train.steps, hardware="cpu x2 threads",
                      created_at=t0)
        if row in FINISHED:  # made-up figures loosely following the paper's order
            m = _synthetic_metrics(cfg, round(bleu - 12 + sum(map(ord, row)) % 7 / 10, 2), round(ppl * 2.1, 2))
            st.upsert(*key, **common, status="finished", step=cfg.train.steps, metrics=m,
                      attention=_synthetic_attention(cfg.model.h, tokens), tokens_seen=m["tokens_seen"],
                      train_seconds=m["train_seconds"], finished_at=t0 + 60 * len(row))
            st.add_points(*key, _curve(cfg.train.steps, m["dev_ppl"]))
        elif row == "B1":
            st.upsert(*key, **common, status="running", step=420)
            st.add_points(*key, _curve(cfg.train.steps, 12.0)[:8])
        elif row == "C3":
            st.upsert(*key, **common, status="failed", step=130,
                      error="Traceback (most recent call last):\n  ...\nRuntimeError: synthetic: out of memory")
        elif row == "C5":
            st.upsert(*key, **common, status="pending")
    for stem, status in (("table2_en_de_base", "finished"), ("table2_en_de_big", "running")):
        cfg = resolve(REPO / "specs" / f"{stem}.yaml", None, profile)[0]
        key = (f"specs/{stem}.yaml", cfg.variant, profile)
        common = dict(config_hash=cfg.config_hash(), config=cfg.model_dump(mode="json"), paper_table=2,
                      paper_group="EN-DE", paper_row=cfg.variant, steps=cfg.train.steps,
                      hardware="cpu x2 threads", created_at=t0)
        if status == "finished":
            test = {"eval_split": "test", "eval_sentences": 1000, "bleu": 17.31, "eval_weights":
                    "average of the last 5 checkpoints", "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|"
                    "smooth:exp|version:2.4.3", "bleu_tokenized": 18.0}
            m = _synthetic_metrics(cfg, 17.31, 9.8, "test", {"test": test})
            st.upsert(*key, **common, status="finished", step=cfg.train.steps, metrics=m,
                      attention=_synthetic_attention(cfg.model.h, tokens), train_seconds=1500.0,
                      finished_at=t0 + 10)
            st.add_points(*key, _curve(cfg.train.steps, 9.8))
        else:
            st.upsert(*key, **common, status="running", step=77)
    cfg = resolve(REPO / "specs" / "table4_wsj.yaml", None, profile)[0]
    m = {"steps_done": cfg.train.steps, "train_seconds": 900.0, "vocab_size_actual": 900, "dataset": cfg.data.dataset,
         "device": "cpu", "workers": 1, "eval_split": "test", "eval_sentences": 50, "f1": 71.25,
         "f1_flat": 9.55137, "f1_right_branching": 17.2588, "malformed": 0}
    st.upsert("specs/table4_wsj.yaml", cfg.variant, profile, config_hash=cfg.config_hash(),
              config=cfg.model_dump(mode="json"), paper_table=4, paper_group="WSJ only", paper_row=cfg.variant,
              status="finished", step=cfg.train.steps, steps=cfg.train.steps, metrics=m, created_at=t0)
    return path


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def table_rows(md: str) -> list[list[str]]:
    """The body rows of the first markdown table: cells of each line, group-header lines skipped."""
    lines = md[md.index("\n|") + 1:].split("\n\n")[0].splitlines()
    return [[c.strip() for c in l.strip("|").split(" | ")] for l in lines[2:] if not l.startswith("| **")]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """One report from the synthetic store (Tables 2-4, index, md and html)."""
    tmp = tmp_path_factory.mktemp("report")
    store = synthetic_store(tmp / "runs" / "zoo.db")
    out = tmp / "out"
    t = time.time()
    assert main(["report", "--runs", str(store), "--out", str(out)]) == 0
    return out, time.time() - t


def test_table3_markdown_has_every_paper_row_in_order(site):
    out, _ = site
    md = (out / "table3.md").read_text()
    rows = table_rows(md)
    assert [r[0] for r in rows] == [r[0] for r in TABLE3]
    header = md[md.index("\n|") + 1:].splitlines()[0]
    for col in ("N", "d_model", "d_ff", "h", "d_k", "d_v", "P_drop", "eps_ls", "steps", "PE", "paper PPL",
                "paper BLEU", "paper params (M)", "measured PPL", "measured BLEU", "measured params (M)",
                "measured Δ params", "train FLOPs", "state", "profile", "data / split"):
        assert f" {col} |" in header, col
    for group in ("(A) attention heads", "(C) model size", "big model"):
        assert f"| **{group}** |" in md
    by = {r[0]: r for r in rows}
    cols = [c.strip() for c in header.strip("|").split(" | ")]
    at = lambda row, col: by[row][cols.index(col)]
    assert at("base", "paper BLEU") == "25.8" and at("base", "paper PPL") == "4.92" and at("base", "paper params (M)") == "65"
    assert at("base", "state") == "done" and at("base", "profile") == "cpu" and at("base", "data / split") == "multi30k / dev"
    assert re.fullmatch(r"\d\.\de\d+", at("base", "train FLOPs"))  # e.g. 1.2e15
    assert at("base", "d_model") == "256"  # the cpu profile's width, as run
    assert at("E", "state") == "not run" and at("E", "d_model") == "512" and at("E", "PE") == "learned"
    assert at("E", "measured BLEU") == "" and at("E", "train FLOPs") == ""
    assert at("B1", "state") == "running: step 420 of 1000"
    assert at("C3", "state") == "failed: RuntimeError: synthetic: out of memory"
    assert at("C5", "state") == "pending"
    assert at("A1", "measured BLEU") not in ("", None) and at("A1", "measured PPL") not in ("", None)
    assert at("C1", "measured Δ params").endswith("%")
    assert "sacreBLEU signature: nrefs:1|case:mixed" in md.replace("\\|", "|")
    assert "Counting rules" in md and "3 x forward" in md and "not comparable in absolute terms" in md


def test_table3_spearman_section(site):
    out, _ = site
    md = (out / "table3.md").read_text()
    sec = md[md.index("## Rank agreement (Spearman)"):]
    rows = table_rows(sec)
    by = {r[0]: r for r in rows}
    assert by["(A) attention heads"][1] == "4" and re.fullmatch(r"-?\d\.\d\d", by["(A) attention heads"][2])
    assert by["(B) attention key size"][1] == "0" and "too few rows" in by["(B) attention key size"][-1]
    assert by["overall"][1] == str(len(FINISHED))
    assert re.fullmatch(r"-?\d\.\d\d", by["overall"][2]) and re.fullmatch(r"-?\d\.\d\d", by["overall"][4])


def test_report_writes_every_table_and_the_index_in_both_formats(site):
    out, seconds = site
    for name in ("index", "table2", "table3", "table4"):
        assert (out / f"{name}.md").stat().st_size > 500
        html = (out / f"{name}.html").read_text()
        assert html.startswith("<!doctype html>") and "</html>" in html
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the site must not fetch anything"
    for img in re.findall(r'src="(img/[^"]+)"', (out / "table3.html").read_text()):
        assert (out / img).stat().st_size > 2000
    assert (out / "img" / "table3_bleu_vs_params.png").exists() and (out / "img" / "table3_bleu_vs_flops.png").exists()
    assert list((out / "img").glob("attention_table3_A_A1_cpu_*.png")) and list((out / "img").glob("curves_table3_B_B1_cpu_*.png"))
    t2 = (out / "table2.md").read_text()
    for text in ("ByteNet [18]", "cited, not re-run", "paper hardware-time estimate", "analytic FLOPs as specified",
                 "FLOPs spent", "utilization", "17.31", "average of the last 5 checkpoints", "running: step 77"):
        assert text in t2, text
    t4 = (out / "table4.md").read_text()
    assert "Dyer et al. (2016) [8]" in t4 and "| 71.25 | 9.55 | 17.26 | 0 of 50 | done |" in t4
    assert "needs data: wsj_semi" in t4 and "wsj_semi/{train,dev,test}.words" in t4
    assert "NLTK WSJ sample (sections 00-01), test wsj_0180-0199; not comparable to section 23" in t4
    assert seconds < 60


def test_most_recent_finished_run_per_row_unless_a_profile_is_chosen(tmp_path, capsys):
    store = synthetic_store(tmp_path / "zoo.db")
    cfg = resolve(REPO / "specs" / "base.yaml", None, "smoke")[0]  # a SYNTHETIC later smoke run of base
    Store(store).upsert("specs/base.yaml", "base", "smoke", config_hash=cfg.config_hash(), paper_table=3,
                        config=cfg.model_dump(mode="json"), paper_group="base", paper_row="base",
                        status="finished", steps=30, metrics=_synthetic_metrics(cfg, 0.5, 400.0),
                        finished_at=time.time())
    Store(store).upsert("specs/table3_A.yaml", "A1", "smoke", status="failed", error="boom", paper_table=3,
                        paper_row="A1", updated_at=time.time())  # a newer failure does not hide a finished run
    for profile, expect in ((None, "smoke"), ("cpu", "cpu")):
        extra = ("--profile", profile) if profile else ()
        assert run("report", "--table", 3, "--format", "md", "--runs", store, "--out", tmp_path / "o",
                   *extra, capsys=capsys)[0] == 0
        by = {r[0]: r for r in table_rows((tmp_path / "o" / "table3.md").read_text())}
        assert by["base"][-2] == expect and by["A1"][-2] == "cpu" and by["A1"][-3] == "done"


def test_single_table_and_profile_filter(tmp_path, capsys):
    store = synthetic_store(tmp_path / "zoo.db")
    code, out, _ = run("report", "--table", 3, "--format", "md", "--runs", store, "--out", tmp_path / "o",
                       "--profile", "smoke", capsys=capsys)
    assert code == 0 and str(tmp_path / "o") in out
    assert sorted(p.name for p in (tmp_path / "o").glob("*.*")) == ["table3.md"]
    states = [r[-3] for r in table_rows((tmp_path / "o" / "table3.md").read_text())]
    assert states == ["not run"] * 20  # no smoke runs in this store


@pytest.mark.parametrize("kind", ["missing", "empty-file", "empty-store"])
def test_missing_or_empty_store_gives_not_run_rows(tmp_path, capsys, kind):
    store = tmp_path / "zoo.db"
    if kind == "empty-file":
        store.write_bytes(b"")
    elif kind == "empty-store":
        Store(store)
    code, out, err = run("report", "--runs", store, "--out", tmp_path / "o", capsys=capsys)
    assert code == 0, err
    md = (tmp_path / "o" / "table3.md").read_text()
    assert [r[-3] for r in table_rows(md)] == ["not run"] * 20
    assert "nothing has run yet" in md or "holds no trials" in md
    assert (tmp_path / "o" / "index.html").exists() and "not run" in (tmp_path / "o" / "table2.md").read_text()


def test_garbage_store_exits_2(tmp_path, capsys):
    bad = tmp_path / "zoo.db"
    bad.write_bytes(b"this is not a database\n" * 100)
    code, out, err = run("report", "--runs", bad, "--out", tmp_path / "o", capsys=capsys)
    assert code == 2 and "not a zoo results store" in err and "Traceback" not in err


def test_report_never_imports_ray(tmp_path):
    import subprocess
    import sys
    code = ("import sys; from zoo.cli import main; rc = main(['report', '--runs', sys.argv[1], '--out', sys.argv[2]]);"
            "assert 'ray' not in sys.modules and 'torch' not in sys.modules, 'heavy import'; sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "none.db"), str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("hardware, device, flops", [
    ("cpu, 1 thread on vm (node 521d6c85, pid 1)", "cpu", 90e9),  # the runner's format
    ("cpu, 2 threads, 3 workers on vm (node 1, pid 2)", "cpu", 6 * 90e9),
    ("cpu x2 threads", "cpu", 180e9),  # older stores
    ("GPU 0,1 on h100host (node 1, pid 2)", "NVIDIA H100 80GB HBM3", 2 * 989e12),
    ("GPU 0 on host (node 1, pid 2)", "cuda", None),  # GPU model unknown: no peak to divide by
])
def test_device_peak_from_the_hardware_column(hardware, device, flops):
    from reports.peaks import peak
    got = peak(hardware, device)
    assert (got and got[0]) == flops
