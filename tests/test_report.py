"""`zoo report`: Tables 2-4 from a results store, as markdown and HTML.

The stores here are SYNTHETIC: rows written with the real Store API, holding made-up metrics, curves
and attention maps shaped like a trial's summary. They are inputs to the report, not results.
"""
import functools
import math
import re
import shutil
import time
from pathlib import Path

import pytest

from zoo.runner.store import Store
from zoo.cli import main
from zoo.paper import TABLE3
from zoo.spec import resolve
from helpers import run

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


@functools.cache
def resolved(stem: str, row: str | None, profile: str) -> list:
    """The spec's configs, resolved once per module: every synthetic store is built from the same ones."""
    return resolve(REPO / "specs" / f"{stem}.yaml", row, profile)


def synthetic_store(path: Path, profile: str = "cpu") -> Path:
    """A store with SYNTHETIC rows: finished Table 3 rows, one running, one failed, one pending, the
    rest not run; Table 2 EN-DE base finished (test split, averaged), EN-DE big running."""
    st = Store(path)
    t0 = time.time() - 3600
    tokens = "▁Ein ▁Mann ▁in ▁einem ▁blauen ▁Hemd ▁steht ▁auf ▁einer ▁Leiter ▁. </s>".split()
    for row, group, ppl, bleu, _ in TABLE3:
        stem = T3_FILES[group]
        cfg = resolved(stem, row if stem.startswith("table3") else None, profile)[0]
        key = (f"specs/{stem}.yaml", row, profile)
        common = dict(config_hash=cfg.config_hash(), config=cfg.model_dump(mode="json"), paper_table=3,
                      paper_group=group, paper_row=row, steps=cfg.train.steps, hardware="cpu, 2 threads on vm (node n1, pid 1)",
                      placement={"threads": 2, "workers": 1, "gpu_ids": [], "hostname": "vm", "node_id": "n1", "pid": 1},
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
        cfg = resolved(stem, None, profile)[0]
        key = (f"specs/{stem}.yaml", cfg.variant, profile)
        common = dict(config_hash=cfg.config_hash(), config=cfg.model_dump(mode="json"), paper_table=2,
                      paper_group="EN-DE", paper_row=cfg.variant, steps=cfg.train.steps,
                      hardware="cpu, 2 threads on vm (node n1, pid 1)", created_at=t0,
                      placement={"threads": 2, "workers": 1, "gpu_ids": [], "hostname": "vm", "node_id": "n1", "pid": 1})
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
    for cfg, f1 in zip(resolved("table4_wsj", None, profile), (71.25, 74.5)):
        m = {"steps_done": cfg.train.steps, "train_seconds": 900.0, "vocab_size_actual": 900, "dataset": cfg.data.dataset,
             "device": "cpu", "workers": 1, "eval_split": "test", "eval_sentences": 50, "f1": f1,
             "f1_flat": 9.55137, "f1_right_branching": 17.2588, "malformed": 0}
        st.upsert("specs/table4_wsj.yaml", cfg.variant, profile, config_hash=cfg.config_hash(),
                  config=cfg.model_dump(mode="json"), paper_table=4, paper_group="WSJ only", paper_row=cfg.variant,
                  status="finished", step=cfg.train.steps, steps=cfg.train.steps, metrics=m, created_at=t0)
    return path


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


@pytest.fixture
def seeded(site, tmp_path):
    """A fresh --out whose img/ holds the site's figures: the report's own figure cache redraws only the
    trials whose curves or attention a test changed (drawing them all again costs a minute on a busy CPU)."""
    def seed(out: Path) -> Path:
        shutil.copytree(site[0] / "img", out / "img", dirs_exist_ok=True)
        return out
    return seed


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_table3_markdown_has_every_paper_row_in_order(site):
    out, _ = site
    md = (out / "table3.md").read_text()
    rows = table_rows(md)
    assert [r[0] for r in rows] == [r[0] for r in TABLE3]
    header = md[md.index("\n|") + 1:].splitlines()[0]
    for col in ("N", "d_model", "d_ff", "h", "d_k", "d_v", "P_drop", "eps_ls", "steps", "PE", "paper PPL",
                "paper BLEU", "paper params (M)", "paper Δ params", "measured PPL", "measured BLEU", "measured params (M)",
                "train FLOPs", "state", "profile", "data / split"):
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
    b1_steps = resolve(REPO / "specs" / "table3_B.yaml", "B1", "cpu")[0].train.steps  # the cpu profile's 2200
    assert at("B1", "state") == f"running: step 420 of {b1_steps}"
    assert at("C3", "state") == "failed: RuntimeError: synthetic: out of memory"
    assert at("C5", "state") == "pending"
    assert at("A1", "measured BLEU") not in ("", None) and at("A1", "measured PPL") not in ("", None)
    # Δ params: the paper spec at paper scale against the printed count, also for a row that has not run
    assert at("C1", "paper Δ params") == "-6.5%" and at("C5", "paper Δ params") == "-2.5%"
    assert at("A1", "paper Δ params") == ""  # no printed count
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
    out, _ = site
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
    assert "Dyer et al. (2016) [8]" in t4 and "| Transformer (4 layers) | 91.3 | 71.25 | 9.55 | 17.26 | 0 of 50 | done |" in t4
    # the paper's model, then ours with the pointer beneath it, labelled, with no paper figure
    assert "| Transformer (4 layers) + word pointer (ours, not the paper's) |  | 74.50 | 9.55 | 17.26 | 0 of 50 | done |" in t4
    assert "the word pointer (model.word_pointer) in wsj_only_pointer: each decoder input" in t4
    assert "tree-constrained beam search (eval.tree_constraint) in every measured row" in t4
    assert "needs data: wsj_semi" in t4 and "wsj_semi/{train,dev,test}.words" in t4
    assert "NLTK WSJ sample (sections 00-01), test wsj_0180-0199; not comparable to section 23" in t4


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_most_recent_finished_run_per_row_unless_a_profile_is_chosen(seeded, tmp_path, capsys):
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
        assert run("report", "--table", 3, "--format", "md", "--runs", store, "--out", seeded(tmp_path / "o"),
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


def test_a_named_missing_store_exits_2(tmp_path, capsys):
    """As `zoo status`: a store named with --runs that is not there is a mistake (issue 10)."""
    code, out, err = run("report", "--runs", tmp_path / "zoo.db", "--out", tmp_path / "o", capsys=capsys)
    assert code == 2 and "no results store at" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind", ["empty-file", "empty-store", "no-store"])
def test_a_report_of_nothing_is_refused(tmp_path, capsys, monkeypatch, kind):
    """No store, or one with no trials: one line naming the store and how to make one, exit 2, no --out
    (it wrote 8 pages of "not run", exit 0). A store with some rows still shows the others as not run."""
    store = tmp_path / "zoo.db"
    if kind == "empty-file":
        store.write_bytes(b"")
    elif kind == "empty-store":
        Store(store)
    monkeypatch.chdir(tmp_path)  # no-store: the default runs/zoo.db, absent here
    argv = ("--runs", store) if kind != "no-store" else ()
    code, out, err = run("report", *argv, "--out", tmp_path / "o", capsys=capsys)
    assert code == 2 and "nothing to report" in err and "zoo run SPEC --storage DIR" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_garbage_store_exits_2(tmp_path, capsys):
    bad = tmp_path / "zoo.db"
    bad.write_bytes(b"this is not a database\n" * 100)
    code, out, err = run("report", "--runs", bad, "--out", tmp_path / "o", capsys=capsys)
    assert code == 2 and "not a zoo results store" in err and "Traceback" not in err


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_report_never_imports_ray(tmp_path):
    import subprocess
    import sys
    code = ("import sys; from zoo.cli import main; rc = main(['report', '--runs', sys.argv[1], '--out', sys.argv[2]]);"
            "assert 'ray' not in sys.modules and 'torch' not in sys.modules, 'heavy import'; sys.exit(rc)")
    Store(tmp_path / "none.db").upsert("specs/base.yaml", "base", "smoke", status="pending")  # "not run" rows
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "none.db"), str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("placement, device, dtype, flops", [
    ({"threads": 1, "workers": 1, "gpu_ids": []}, "cpu", "fp32", 2.8e9 * 32),  # what the runner records
    ({"threads": 2, "workers": 3, "gpu_ids": []}, "cpu", "fp32", 6 * 2.8e9 * 32),
    ({"threads": 2, "workers": 1, "gpu_ids": []}, "cpu", "bf16", 2 * 2.8e9 * 128),  # bf16: 4x the fp32 peak
    ({"threads": 1, "workers": 2, "gpu_ids": ["0", "1"]}, "NVIDIA H100 80GB HBM3", "bf16", 2 * 989e12),
    ({"threads": 1, "workers": 1, "gpu_ids": ["0"]}, "NVIDIA H100 80GB HBM3", "fp32", 67e12),  # no tensor cores
    ({"threads": 1, "workers": 1, "gpu_ids": ["0"]}, "Tesla P100", "bf16", None),  # no bf16 peak known
    ({"threads": 8, "workers": 1, "gpu_ids": ["0"]}, "cuda", "bf16", None),  # GPU model unknown: no peak
    (None, "cpu", "fp32", None),  # an old row without a placement: threads unknown, nothing guessed from text
])
def test_device_peak_from_the_placement_at_the_compute_dtype(placement, device, dtype, flops):
    from zoo.reports.peaks import peak
    from zoo.result import Hardware, Placement
    hw = Hardware(device="cpu" if device == "cpu" else "cuda:0", device_name=device, compute_dtype=dtype)
    got = peak(Placement.model_validate(placement) if placement else None, hw)
    assert (got and got[0]) == (flops and pytest.approx(flops))


def test_a_bf16_cpu_run_with_amx_is_judged_against_the_amx_peak():
    from zoo.reports.peaks import peak
    from zoo.result import Hardware, Placement, Provenance
    hw, p = Hardware(compute_dtype="bf16"), Placement(threads=2)
    amx = peak(p, hw, Provenance(cpu_flags=["avx2", "avx512_bf16", "amx_bf16", "amx_tile"]))[0]
    assert amx == pytest.approx(8 * peak(p, hw, Provenance(cpu_flags=["avx512_bf16"]))[0])


# -- hostile strings (issue 10): everything from specs, the store and the environment is escaped ---------

SVG = "<svg onload=alert(1)>"
HOSTILE = {  # what a shared store could hold: each would be markup if it reached a page raw
    "spec": f"specs/{SVG}.yaml",
    "hardware": "<img src=x onerror=alert(2)>",
    "variant": "<script>alert(3)</script>",
    "error": "<iframe src=javascript:alert(4)></iframe> a | b | c\nRuntimeError: <b onmouseover=alert(5)>x</b>",
    "profile": "<i onclick=alert(6)>p</i>",
}


def hostile_store(path: Path) -> Path:
    """The synthetic store plus SYNTHETIC rows whose strings are HTML and markdown injections."""
    synthetic_store(path)
    st = Store(path)
    cfg = resolved("table3_A", "A1", "cpu")[0]
    m = _synthetic_metrics(cfg, 20.0, 9.0) | {"device": HOSTILE["hardware"],
                                               "bleu_signature": "nrefs:1|<script>alert(7)</script>"}
    common = dict(config_hash=cfg.config_hash(), config=cfg.model_dump(mode="json"), paper_table=3,
                  paper_group="A", steps=cfg.train.steps, created_at=time.time())
    st.upsert(HOSTILE["spec"], "A1", "cpu", **common, paper_row="A1", status="finished", step=cfg.train.steps,
              metrics=m, hardware=HOSTILE["hardware"], attention=_synthetic_attention(1, ["<svg>", "|", "x"]),
              finished_at=time.time() + 100)
    st.add_points(HOSTILE["spec"], "A1", "cpu", _curve(cfg.train.steps, 9.0))
    st.upsert("specs/table3_B.yaml", HOSTILE["variant"], "cpu", **common, paper_row="B2", status="failed",
              step=3, error=HOSTILE["error"])
    st.upsert("specs/table3_E.yaml", "E", HOSTILE["profile"], **common, paper_row="E", status="running", step=5)
    return path


class Tags(__import__("html.parser").parser.HTMLParser):
    """Every element and attribute the browser would build from a page."""

    def __init__(self, html: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def assert_no_injected_markup(html: str):
    tags = Tags(html).tags
    names = [t for t, _ in tags]
    assert not {"svg", "iframe", "b", "i"} & set(names), sorted(set(names))
    assert names.count("script") == 1  # the page's own image-check script, nothing else
    handlers = [(t, a) for t, a in tags for a in a if a.startswith("on")]
    assert not handlers, handlers
    assert all(a.get("src", "").startswith("img/") for t, a in tags if t == "img"), \
        [a for t, a in tags if t == "img"]


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_hostile_strings_are_escaped_in_html_and_markdown(seeded, tmp_path, capsys):
    store = hostile_store(tmp_path / "zoo.db")
    code, _, err = run("report", "--runs", store, "--out", seeded(tmp_path / "o"), capsys=capsys)
    assert code == 0, err
    pages = {p.name: p.read_text() for p in (tmp_path / "o").glob("*.*")}
    for name in ("index.html", "table2.html", "table3.html", "table4.html"):
        assert_no_injected_markup(pages[name])
    t3 = pages["table3.html"]
    for text in (SVG, HOSTILE["hardware"], HOSTILE["variant"], "<iframe src=javascript:alert(4)>"):
        assert html_escape(text) in t3, text  # shown, as text
    for name in ("index.md", "table2.md", "table3.md", "table4.md"):
        md = pages[name]
        for raw in ("<svg", "<img", "<script", "<iframe", "<b ", "<i "):
            assert raw not in md, (name, raw)
    md = pages["table3.md"]
    assert "&lt;svg onload=alert(1)&gt;" in md and "&lt;iframe src=javascript:alert(4)&gt;" in md
    header = md[md.index("\n|") + 1:].splitlines()[0]
    width = len(header.strip("|").split(" | "))
    rows = table_rows(md)
    assert all(len(r) == width for r in rows), [r for r in rows if len(r) != width]  # no | broke a cell
    by = {r[0]: r for r in rows}
    assert by["B2"][-3].startswith("failed: RuntimeError: &lt;b onmouseover=alert(5)&gt;x&lt;/b&gt;")
    assert by["E"][-2] == "&lt;i onclick=alert(6)&gt;p&lt;/i&gt;"


def html_escape(s: str) -> str:
    import html
    return html.escape(s, quote=False)


def test_results_csv_is_sorted_and_diffable(site):
    import csv
    out, _ = site
    rows = list(csv.DictReader((out / "results.csv").open()))
    keys = [(r["spec"], r["variant"], r["profile"]) for r in rows]
    assert keys == sorted(keys) and len(keys) == len(set(keys)) >= 15
    assert {"status", "steps_done", "dev_ppl", "config_hash"} <= set(rows[0])
    wsj = next(r for r in rows if r["spec"] == "table4_wsj")
    assert float(wsj["test_f1"]) == pytest.approx(71.25) and wsj["steps_done"].isdigit()
    assert wsj["dev_ppl"] == ""  # nothing measured: an empty cell, not "nan" or "None"
    text = (out / "results.csv").read_text()
    assert "\r" not in text and all(len(f.split(".")[-1]) <= 3 for f in re.findall(r"\d+\.\d+", text))
    assert ",1500," in text and ",1500.0," not in text  # whole seconds print as integers, as before


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_a_time_limited_row_is_truncated_and_compared_with_nothing(seeded, tmp_path, capsys):
    store = synthetic_store(tmp_path / "zoo.db")
    st = Store(store)
    row = next(t for t in st.trials() if t.trial == "A2")
    m = row.result.model_copy(update={"steps_done": row.steps // 2})  # a 5-minute cap stopped it halfway
    st.upsert(row.spec, "A2", row.profile, metrics=m)
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--table", "3"]) == 0
    md = (tmp_path / "out" / "table3.md").read_text()
    rows = {r[0]: r for r in table_rows(md)}
    assert f"truncated: step {row.steps // 2} of {row.steps}" in " ".join(rows["A2"])
    html = (tmp_path / "out" / "table3.html").read_text()
    assert re.search(r'class="state truncated"', html)
    # group A's Spearman now counts A1, A3, A4 (A2 is out), as does the overall row
    spearman = md[md.index("Rank agreement"):]
    line = next(l for l in spearman.splitlines() if l.startswith("| (A)") or l.startswith("| A "))
    assert "| 3 |" in line, line


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_seeds_show_as_mean_spread_and_count(seeded, tmp_path):
    store = synthetic_store(tmp_path / "zoo.db")
    st = Store(store)
    a1 = next(t for t in st.trials() if t.trial == "A1")
    for seed, bleu in ((2, a1.result.primary.bleu + 1.0), (3, a1.result.primary.bleu + 2.0)):
        m = a1.result.model_copy(deep=True)
        m.primary.bleu = bleu
        cfg = a1.config.model_copy(update={"trial": f"A1-seed{seed}",
                                            "overrides": {**a1.config.overrides, "train.seed": seed},  # as a seeds axis
                                            "train": a1.config.train.model_copy(update={"seed": seed})})
        st.upsert(a1.spec, f"A1-seed{seed}", a1.profile, variant="A1", **{k: getattr(a1, k) for k in (
            "config_hash", "paper_table", "paper_group", "paper_row", "status", "step", "steps")},
            config=cfg, metrics=m, finished_at=(a1.finished_at or 0) + seed)
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--table", "3"]) == 0
    md = (tmp_path / "out" / "table3.md").read_text()
    header = md[md.index("\n|") + 1:].splitlines()[0]
    cols = [c.strip() for c in header.strip("|").split(" | ")]
    row = {r[0]: r for r in table_rows(md)}["A1"]
    assert row[cols.index("measured seeds")] == "3"
    assert float(row[cols.index("measured BLEU")]) == pytest.approx(a1.result.primary.bleu + 1.0, abs=0.01)
    assert row[cols.index("measured BLEU sd")] == "1.00"
    assert {r[0]: r for r in table_rows(md)}["A2"][cols.index("measured BLEU sd")] == ""  # one seed


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_claims_section_gives_verdicts_from_stored_sentence_scores(seeded, tmp_path, data_root):
    import random
    from zoo import data as D
    from zoo.evidence import claims as C
    refs = [t for _, t in D.load_pairs("multi30k", "dev", data_root)][:300]

    def stats(p, seed):  # a system that drops each word with probability p
        rng = random.Random(seed)
        hyps = [" ".join(w for w in r.split() if rng.random() > p) or r for r in refs]
        return C.sentence_stats(hyps, refs).astype(int).tolist()

    store = synthetic_store(tmp_path / "zoo.db")
    st = Store(store)
    by = {t.trial: t for t in st.trials() if t.paper_table == 3}
    for row, p in (("base", 0.05), ("A1", 0.4), ("A3", 0.2), ("A4", 0.2)):  # base >> A1; A3 ~ A4
        t = by[row]
        for seed in (1, 2, 3):
            m = t.result.model_copy(deep=True)
            m.primary.bleu_stats = stats(p, 10 * seed + hash(row) % 7)
            m.dev_ppl = t.result.dev_ppl + seed * (1 if row == "A3" else 0.5)
            cfg = t.config.model_copy(update={"trial": f"{row}-seed{seed}",
                                              "train": t.config.train.model_copy(update={"seed": seed})})
            st.upsert(t.spec, row if seed == 1 else f"{row}-seed{seed}", t.profile, variant=row, **{k: getattr(t, k) for k in (
                "config_hash", "paper_table", "paper_group", "paper_row", "status", "step", "steps")},
                config=cfg, metrics=m, finished_at=(t.finished_at or 0) + seed)
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--table", "3"]) == 0
    md = (tmp_path / "out" / "table3.md").read_text()
    claims = md[md.index("## Claims"):md.index("## Rank agreement")]
    line = lambda cid: [c.strip() for c in next(l for l in claims.splitlines() if l.startswith(f"| {cid} |")).split("|")]
    assert line("A-one-head-bleu")[2] == "held"  # the verdict: second column
    assert line("A-too-many-heads-bleu")[2] == "within noise"
    assert line("A-too-many-heads-ppl")[2] in C.DIRECTIONAL  # seeds only: this store keeps no sentence NLLs
    assert line("B-small-dk-bleu")[2] == "not run"
    assert "Tally: 10 row comparisons:" in claims and "10,000 resamples" in claims and "Holm" in claims
    assert "seeds only (this store keeps no per-sentence dev likelihoods" in claims


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_profile_note_is_the_one_the_run_used(seeded, tmp_path):
    store = synthetic_store(tmp_path / "zoo.db")
    st = Store(store)
    for t in st.trials():
        if t.paper_table == 3:
            st.upsert(t.spec, t.trial, t.profile, config=t.config.model_copy(update={"profile_description": "as it was then"}))
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--table", "3"]) == 0
    md = (tmp_path / "out" / "table3.md").read_text()
    assert "Profile cpu: as it was then" in md and "one 2-core CPU" not in md.split("Profile cpu:")[1][:60]


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_model_index_lists_the_measured_rows_with_their_trials(seeded, tmp_path):
    import yaml
    store = synthetic_store(tmp_path / "zoo.db")
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--format", "md"]) == 0
    doc = yaml.safe_load((tmp_path / "out" / "model-index.yml").read_text())
    models = {m["Name"]: m for m in doc["Models"]}
    finished = {t.trial for t in Store(store).trials() if t.status == "finished" and t.paper_table == 3}
    assert {f"transformer-table3-{r}-cpu" for r in finished} <= set(models)
    base = models["transformer-table2-en-de-base-cpu"]
    assert base["Results"][0]["Metrics"]["sacreBLEU"] == pytest.approx(17.31)
    assert base["Results"][0]["Dataset"].endswith("test") and base["Metadata"]["Trials"]
    assert "results.csv" in {p.name for p in (tmp_path / "out").iterdir()}


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_table2_page_and_model_index_print_the_same_bleu_over_seeds(seeded, tmp_path):
    """One row, one figure: with two seeds of EN-DE base, the Table 2 page and model-index.yml both
    give the mean over the seeds (the page once showed one seed's BLEU, the model index the mean)."""
    import yaml
    store = synthetic_store(tmp_path / "zoo.db")
    st = Store(store)
    base = next(t for t in st.trials() if t.paper_table == 2 and t.finished)
    m = base.result.model_copy(deep=True)  # a SYNTHETIC second seed, 0.8 BLEU above the first
    m.splits["test"].bleu = base.result.split("test").bleu + 0.8
    cfg = base.config.model_copy(update={"trial": "base-seed2", "overrides": {**base.config.overrides, "train.seed": 2},
                                         "train": base.config.train.model_copy(update={"seed": 2})})
    st.upsert(base.spec, "base-seed2", base.profile, variant=base.variant, **{k: getattr(base, k) for k in (
        "config_hash", "paper_table", "paper_group", "paper_row", "status", "step", "steps")},
        config=cfg, metrics=m, finished_at=(base.finished_at or 0) - 5)
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--format", "md"]) == 0
    md = (tmp_path / "out" / "table2.md").read_text()
    header = md[md.index("\n|") + 1:].splitlines()[0]
    cols = [c.strip() for c in header.strip("|").split(" | ")]
    row = next(r for r in table_rows(md) if r[0] == "base")  # EN-DE's: the first pair
    page = row[cols.index("measured BLEU (test)")]
    doc = yaml.safe_load((tmp_path / "out" / "model-index.yml").read_text())
    model = {x["Name"]: x for x in doc["Models"]}["transformer-table2-en-de-base-cpu"]
    assert page == "17.71" and model["Results"][0]["Metrics"]["sacreBLEU"] == float(page)
    assert model["Metadata"]["Seeds"] == 2 and row[cols.index("measured seeds")] == "2"
    assert row[cols.index("measured BLEU sd")] == "0.57"  # 0.8 / sqrt(2)
    assert "each BLEU figure is the mean over the seeds that finished" in md


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_rows_that_ran_on_different_machines_or_dtypes_are_flagged(seeded, tmp_path):
    from zoo.result import Provenance
    store = synthetic_store(tmp_path / "zoo.db")
    st = Store(store)
    by = {t.trial: t for t in st.trials()}
    same = dict(zoo_version="0.1.0", zoo_commit="abc", cpu="AMD EPYC", compute_dtype="fp32")
    for row in ("A1", "A2"):  # two alike: no flag
        t = by[row]
        st.upsert(*t.key, metrics=t.result.model_copy(update={"provenance": Provenance(**same)}))
    md = tmp_path / "out" / "table3.md"
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--table", "3"]) == 0
    assert "Provenance:" not in md.read_text()
    t = by["A3"]  # a third on another machine, in bf16
    other = Provenance(**same | {"cpu": "Intel Xeon", "compute_dtype": "bf16"})
    st.upsert(*t.key, metrics=t.result.model_copy(update={"provenance": other}))
    assert main(["report", "--runs", str(store), "--out", str(seeded(tmp_path / "out")), "--table", "3"]) == 0
    text = md.read_text()
    assert "Provenance: the rows compared here did not all run alike (machine: AMD EPYC, Intel Xeon; dtype: bf16, fp32)" in text
    rows = {r[0]: r for r in table_rows(text)}
    assert "machine Intel Xeon, dtype bf16" in rows["A3"] and not any("Intel" in c for c in rows["A1"])


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_addon_profiles_give_the_claims_that_need_a_longer_budget_their_rows(tmp_path):
    """`zoo report --profile P --addon L --addon B`: tables show P's rows; the dropout claim is tested on
    L's rows, where D1 over-fits, and big (3x base's steps) on big of B against base of P, which differ
    only in the budget. Without the add-ons both are untestable and name the add-on that would test them."""
    db = tmp_path / "zoo.db"
    st = Store(db)
    t0 = time.time() - 3600

    def add(spec, row, group, profile, steps, ppls, rising=False):
        for seed, ppl in zip((1, 2, 3), ppls):
            cfg = resolve(REPO / "specs" / f"{spec}.yaml", row if spec.startswith("table3") else None, "smoke",
                          [f"train.steps={steps}", f"train.seed={seed}"])[0]
            # profile P and its add-ons, budgets that can test claims (smoke's own says none: issue 51)
            cfg = cfg.model_copy(update={"profile": profile, "trial": f"{row}-seed{seed}", "untestable": ""})
            m = _synthetic_metrics(cfg, 20.0 - ppl, ppl)
            key = (f"specs/{spec}.yaml", f"{row}-seed{seed}", profile)
            st.upsert(*key, variant=row, config_hash=cfg.config_hash(), config=cfg.model_dump(mode="json"),
                      paper_table=3, paper_group=group, paper_row=row, steps=steps, status="finished", step=steps,
                      metrics=m, finished_at=t0 + seed)
            curve = _curve(steps, ppl)
            if rising:  # lowest half way, then climbing: over-fitting
                dev = iter((1.3, 1.0, 1.1, 1.2))
                for p in curve:
                    p["dev_ppl"] = ppl * next(dev) if p["dev_ppl"] else None
            st.add_points(*key, curve)

    add("base", "base", "base", "p", 100, (5.0, 5.2, 5.1))
    add("table3_D", "D1", "D", "p", 100, (5.6, 5.9, 5.7))  # no over-fitting at p's budget
    add("big", "big", "big", "p", 100, (5.5, 5.4, 5.6))
    add("base", "base", "base", "p_long", 400, (4.0, 4.1, 4.05))
    add("table3_D", "D1", "D", "p_long", 400, (4.9, 5.0, 4.95), rising=True)
    add("big", "big", "big", "p_big", 300, (3.6, 3.7, 3.65))
    line = lambda md, cid: [c.strip() for c in next(l for l in md.splitlines() if l.startswith(f"| {cid} |")).split("|")]

    out = tmp_path / "plain"
    assert main(["report", "--runs", str(db), "--out", str(out), "--table", "3", "--profile", "p"]) == 0
    md = (out / "table3.md").read_text()
    assert line(md, "D-dropout-ppl")[2].startswith("untestable at this budget") and "profile ablation_dropout" in md
    assert line(md, "big-ppl")[2].startswith("untestable at this budget") and "profile ablation_big" in md

    out = tmp_path / "addons"
    assert main(["report", "--runs", str(db), "--out", str(out), "--table", "3", "--profile", "p",
                 "--addon", "p_long", "--addon", "p_big"]) == 0
    md = (out / "table3.md").read_text()
    dropout, big = line(md, "D-dropout-ppl"), line(md, "big-ppl")
    assert dropout[2] == "held" and dropout[4] == "base &gt; D1 (p_long)", dropout
    assert big[2] == "held" and big[4] == "big &gt; base (big of p_big, base of p)", big
    assert line(md, "D-smoothing-ppl")[2] == "not run"  # D3 ran nowhere; the add-ons lend nothing else
    table = {r[0]: r for r in table_rows(md)}
    assert "5.10" in " ".join(table["base"]) and "4.05" not in " ".join(table["base"])  # the table: p's rows
    r = main(["report", "--runs", str(db), "--out", str(tmp_path / "x"), "--addon", "p_long"])
    assert r == 2  # an add-on lengthens a main profile's rows: it needs --profile
