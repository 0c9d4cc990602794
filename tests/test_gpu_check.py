"""scripts/gpu-check.sh --cpu (issue 44, item 6): the GPU check rehearsed on this CPU with tiny shapes and few steps,
every step under its own time limit with a one-line summary as it ends, into a report that covers learning,
checkpoint share and tokens/s; the whole run within the script's 8 minutes (about six on this busy 2-core machine).
The report's code (scripts/gpu_check_report.py) is tested on its own below, on a made-up OUT."""
import json
import os
import re
import subprocess
import time

import pytest

STEPS = ["1-torch", "2-predict", "2-bench-eager", "2-bench-compiled", "3-learn-new", "3-learn-old", "4-trial",
         "4-trial-other", "5-shared", "6-no-cuda", "8-stacked", "9-concurrent", "9-concurrent-mps", "7-report"]


@pytest.mark.slow
def test_gpu_check_rehearses_every_step_on_the_cpu(repo, data_root, tmp_path):
    out = tmp_path / "gc"
    (out / "logs").mkdir(parents=True)  # a user's files beside its own: a run rewrites only its own
    (out / "logs" / "notes.log").write_text("mine\n")
    (out / "notes.md").write_text("mine\n")
    t0 = time.monotonic()
    r = subprocess.run([str(repo / "scripts" / "gpu-check.sh"), "--cpu", "--out", str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=1200, env={**os.environ, "ZOO_DATA_DIR": str(data_root)})
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # CPU_TOTAL is the rehearsal's own deadline (no step starts past it); a minute's grace for a busy machine
    total = int(re.search(r"CPU_TOTAL = (\d+)", (repo / "scripts" / "gpu_check.py").read_text())[1])
    assert wall < total + 60, wall
    for name in STEPS:  # each step's one-line summary: step, exit, seconds (and limit), a figure
        assert re.search(rf"^\[{name}\] (exit \d+|TIMED OUT \(exit \d+\)|skipped: .+), \d+ s|^\[{name}\] skipped: ",
                         r.stdout, re.M), (name, r.stdout)
    report = (out / "report.md").read_text()
    for n in range(1, 7):
        assert f"\n{n}. " in report, (n, report)
    assert "3. learning check:" in report and "| step | lr new | NLL new, this device |" in report
    assert "**Rehearsal**" in report and "CPU reference" in report
    assert "## Checkpoint share (target: at most 2% of any run of a minute or more)" in report
    assert "waiting on checkpoints" in report and "tokens/s" in report and "precision auto chose" in report
    assert "6. GPU asked, CUDA hidden: exit 2, says what torch sees: as expected" in report
    assert "8. seeds stacked in one process" in report and "9. processes sharing the device" in report
    assert "## Outside the predicted range or not as expected" in report
    raw = json.loads((out / "measured.json").read_text())
    steps = raw["steps"]
    # a step that runs out of its limit (this machine is busy) is reported, not fatal, and named in the report;
    # the rest exit 0 (no-CUDA: 2); every step keeps to its limit (plus timeout's 5-second grace)
    for s, row in steps.items():
        if row["timed_out"] or row["exit"].startswith("skipped: out of"):
            assert s not in ("1-torch", "4-trial", "7-report") and f"step {s} " in report, (s, row)
            continue
        want = {"6-no-cuda": ("2",)}.get(s, ("0",))
        assert row["exit"] in want or row["exit"].startswith("skipped: no Ray") or \
            (s == "4-trial-other" and row["exit"].startswith("skipped: no bf16") and not raw["torch"]["bf16"]), (s, row)
        assert row["seconds"] <= row["limit"] + 6, (s, row)
    if steps["2-predict"]["exit"] == "0":
        assert raw["predict"]["cpu_check"]
    if steps["2-bench-eager"]["exit"] == "0":
        assert set(raw["bench_eager"]["models"]) == {"base", "big"}
    learn = raw["learning"]
    assert 1 in map(int, learn["gpu"]["new"]) or 1 in map(int, learn["gpu"]["old"])
    assert raw["trial"]["auto"]["tokens_per_s"] > 0 and raw["trial"]["auto"]["compute_dtype"] == "fp32"
    assert "trial-auto" in raw["runs"] and {"learn-new", "learn-old"} & set(raw["runs"])
    assert all(0 <= x["checkpoint_share"] < 1 for x in raw["runs"].values())
    if raw.get("shared") and steps["5-shared"]["exit"] == "0":
        assert raw["shared"]["finished"] == 4 and raw["shared"]["summed_tokens_per_s"] > 0
    if steps["8-stacked"]["exit"] == "0":  # the rehearsal's K = 1, 2, eager and graphed, each beside an H100's prediction
        assert [(x["K"], x["graph"], x["pack"]) for x in raw["stacked"]] == [
            (K, *v) for K in (1, 2) for v in ((False, False), (True, False), (True, True))]
        assert all(x["summed_tokens_per_s"] > 0 for x in raw["stacked"])
        assert all(len(x["predicted"]["summed_tokens_per_s"]) == 3 for x in raw["stacked"])
    if steps["9-concurrent"]["exit"] == "0":
        assert raw["concurrent"][0]["P"] == 2 and raw["concurrent"][0]["finished"] == 2
    if steps["9-concurrent-mps"]["exit"] == "0":  # this CPU has no MPS: the step says so, and made nothing of MPS's
        assert raw["concurrent_mps"] == [{"mps": False, "why": "mps.sh: no nvidia-cuda-mps-control on PATH: no MPS here"}]
        assert not (out / "work" / "mps").exists()
    assert (out / "work" / ".gitignore").exists()
    assert (out / "logs" / "notes.log").read_text() == (out / "notes.md").read_text() == "mine\n"


# -- the report on its own: a made-up OUT (steps.tsv, torch.json, the bench's JSON and logs, runs' summaries) ------
def report_module(repo, name="gpu_check_report"):
    """A script of scripts/ (named without .py) as a module: the scripts are not a package."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, repo / "scripts" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def summary(path, seconds, tokens, checkpoint, dtype):
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps({
        "train_seconds": seconds, "tokens_seen": tokens, "checkpoint_seconds": checkpoint, "steps_done": 300,
        "hardware": {"compute_dtype": dtype, "device": "cuda:0"}, "dev_ppl": 42.4}))


@pytest.fixture
def made_up(tmp_path):
    """One GPU run's OUT as the steps leave it: the compiled bench timed out (its log kept base), a step skipped
    for the budget, no Ray; big eager 100 ms against a predicted 60-70 ms; a 100 s trial 5% waiting on checkpoints."""
    out, ref = tmp_path / "out", tmp_path / "ref"
    (out / "logs").mkdir(parents=True)
    (out / "steps.tsv").write_text("1-torch\t0\t3\t15\n2-predict\t0\t20\t40\n2-bench-eager\t0\t20\t45\n"
                                   "2-bench-compiled\t124\t150\t150\n3-learn-new\t0\t25\t50\n3-learn-old\t0\t27\t50\n"
                                   "4-trial\t0\t110\t40\n4-trial-other\tskipped: out of the 480-second budget\t0\t0\n"
                                   "5-shared\tskipped: no Ray here\t0\t0\n6-no-cuda\t2\t4\t15\n")
    (out / "torch.json").write_text(json.dumps({"cuda": True, "device": "NVIDIA H100 80GB HBM3", "gpus": 1, "bf16": True,
                                                "torch": "2.11.0", "cuda_version": "13.0", "python": "3.12.3",
                                                "threads": 16}))
    entry = lambda e, c: {"eager": {"ms": e}, "compiled": {"ms": c}}
    (out / "predict.json").write_text(json.dumps({"cpu_check": [], "models": {
        "base": {"steps": 10, "H100 SXM": entry([50, 60, 70], [35, 40, 50])},
        "big": {"H100 SXM": entry([60, 65, 70], [50, 55, 60])}}}))
    (out / "bench-eager.json").write_text(json.dumps({"models": {
        "base": {"step_ms": 62.0, "tokens_per_s": 400000, "mfu_spec_peak": 0.12},
        "big": {"step_ms": 100.0, "tokens_per_s": 250000, "mfu_spec_peak": 0.2}}}))
    (out / "logs" / "2-bench-compiled.log").write_text(
        "compiling\nbase: d_model 512, 6+6 layers, 25000-token batches,    440000 target tokens/s, 41.5 ms a step, peak "
        "memory 12.8 GiB\n")
    (out / "logs" / "6-no-cuda.log").write_text("zoo: resources.gpus=1 but torch sees 0 CUDA devices\n")
    jsonl(out / "work" / "learn-new" / "metrics.jsonl", [{"step": 1, "nll": 9.9}, {"step": 20, "nll": 9.0}])
    jsonl(ref / "new" / "metrics.jsonl", [{"step": 1, "nll": 9.8}, {"step": 20, "nll": 8.9}])
    summary(out / "work" / "trial-auto", 100.0, 10_000_000, 5.0, "fp32")
    return out, ref


def test_report_lines_from_a_made_up_run(repo, made_up):
    rep = report_module(repo)
    out, ref = made_up
    r = rep.Results(out, cpu=False, ref=ref)
    lines = rep.write(r)
    text = (out / "report.md").read_text()
    assert lines[-1] == "report.md: 4 figure(s) outside the prediction or not as expected"
    assert text.startswith("# GPU check: NVIDIA H100 80GB HBM3\n")
    assert "| base | eager | 62 | 60 (50-70) | 400000 | 0.12 | exit 0, 20 s of 45 |" in text
    assert "| big | eager | 100 **outside** | 65 (60-70) |" in text  # past 65 x 1.15, the widened range
    assert "| base | compiled | 41.5 | 40 (35-50) | 440000 | - | exit 124, 150 s of 150 (**timed out**) |" in text
    assert "| big | compiled | not measured | 55 (50-60) |" in text
    assert "base compiled / eager speed: 1.49x (predicted 1.50x, 1.17-1.80)" in text
    assert "The compiled bench ran out of its 150 s" in text
    assert "new: this device minus the CPU reference at 2 equal steps: mean +0.100, largest +0.100" in text
    assert "The CPU reference's old curve is not there yet" in text
    assert "precision auto chose **fp32** on cuda:0; 100000 tokens/s over 300 steps; 5.0% of 100 s waiting on " \
           "checkpoints: **over** the 2% target" in text
    assert "| trial-auto | 100.0 | 100000 | 5.0% | **missed** |" in text
    assert "(auto: exit 0, 110 s of 40; other precision: skipped: out of the 480-second budget):" in text
    assert "5. four trials sharing the device: skipped: no Ray here" in text
    assert "6. GPU asked, CUDA hidden: exit 2, says what torch sees: as expected" in text
    raw = json.loads((out / "measured.json").read_text())
    assert raw["outside"] == ["big eager bench: 100 ms a step (predicted 65 (60-70))",
                              "trial-auto: 5.0% waiting on checkpoints (target 2%)",
                              "step 2-bench-compiled timed out at its 150 s limit",
                              "step 4-trial-other skipped: out of the 480-second budget"]
    assert raw["bench_compiled"]["models"]["base"]["partial"] is True
    assert sorted(p.name for p in out.iterdir()) == ["bench-eager.json", "logs", "measured.json", "predict.json",
                                                     "report.md", "steps.tsv", "torch.json", "work"]  # no partial file


def test_headlines_from_a_made_up_run(repo, made_up):
    rep = report_module(repo)
    out, ref = made_up
    r = rep.Results(out, cpu=False, ref=ref)
    assert rep.headline(r, "1-torch") == "NVIDIA H100 80GB HBM3, bf16 True, torch 2.11.0 (CUDA 13.0)"
    assert rep.headline(r, "2-predict") == "H100 SXM: base 60 (50-70) ms eager, 40 (35-50) ms compiled; big 65 (60-70) ms eager"
    assert rep.headline(r, "2-bench-compiled") == "base 41.5 ms/step (440000 tok/s) (finished before the limit)"
    assert rep.headline(r, "3-learn-new") == "training NLL 9.000 at step 20 (CPU reference 8.900)"
    assert rep.headline(r, "3-learn-old") == "no training NLL logged"
    assert rep.headline(r, "4-trial") == "precision auto chose fp32: 100000 tok/s; 5.0% of 100 s waiting on checkpoints"
    assert rep.headline(r, "6-no-cuda") == "exit 2, says what torch sees"
    (out / "predict.json").write_text("{")  # a damaged file: a line saying so, never a traceback
    assert rep.headline(r, "2-predict") == "no prediction (see logs/2-predict.log)"
    (out / "torch.json").write_text('{"device": 3}')
    assert rep.headline(r, "2-predict").startswith("(no headline: AttributeError")


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_a_step_past_its_limit_is_ended_with_its_processes(repo, tmp_path, capsys):
    """The check's own time limit, as `timeout -k 5` kept it: TERM to the step's process group at its limit (exit
    124), KILL 5 s later for one that ignores TERM (137), side by side; a step with no time left is skipped."""
    import sys
    sys.path.insert(0, str(repo / "scripts"))
    for name in ("gpu_check", "gpu_check_report"):  # this folder's, not one an earlier test imported
        sys.modules.pop(name, None)
    try:
        import gpu_check as gc
    finally:
        sys.path.remove(str(repo / "scripts"))
    c = gc.Check(gc.out_folder(str(tmp_path / "out")), gc.CPU, ["zoo"])
    for f in (gc.fresh(c.out / "steps.tsv"), gc.log_file(c, "all.log")):
        f.close()
    pids = tmp_path / "pids"
    sleeper = f"sleep 60 & echo $! >> {pids}; "
    steps = [gc.Step("t-term", (6, 6), lambda c: ["sh", "-c", sleeper + "sleep 60"], beside_next=True),
             gc.Step("t-stubborn", (6, 6), lambda c: ["sh", "-c", "trap '' TERM; " + sleeper + "sleep 60"])]
    t0 = time.monotonic()
    assert gc.run_steps(c, steps) == ""
    assert 10 <= time.monotonic() - t0 < 20
    rows = (c.out / "steps.tsv").read_text().splitlines()
    assert sorted(r.split("\t")[:2] for r in rows) == [["t-stubborn", "137"], ["t-term", "124"]], rows
    for pid in pids.read_text().split():  # the background sleeps went with their steps
        assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()
    said = capsys.readouterr().out
    assert re.search(r"^\[t-term\] TIMED OUT \(exit 124\), [67] s \(limit 6 s\): $", said, re.M), said
    c.t0 -= c.total  # nothing left of the budget
    assert gc.run_steps(c, steps[1:]) == ""
    assert (c.out / "steps.tsv").read_text().splitlines()[-1] == \
        f"t-stubborn\tskipped: out of the {c.total}-second budget\t0\t0"


def test_side_by_side_figures_beside_their_predictions(repo, made_up):
    """Issue 52, item 6: the stacked and concurrent steps' figures each beside the roofline's prediction; one far
    from its range is listed as outside it."""
    rep = report_module(repo)
    out, ref = made_up
    pred = lambda tps: {"step_ms": [20, 30, 40], "summed_tokens_per_s": tps, "trials_per_min": [3, 4, 5]}
    (out / "stacked.json").write_text(json.dumps([
        {"K": 1, "step_ms": 21.9, "summed_tokens_per_s": 180000, "trials_per_min": 1.2, "predicted": pred([180000] * 3)},
        {"K": 16, "step_ms": 400, "summed_tokens_per_s": 157000, "trials_per_min": 1.1,
         "predicted": pred([400000, 600000, 800000])},
        {"K": 16, "graph": True, "pack": True, "buckets": 9, "eager_steps": 0, "step_ms": 60, "summed_tokens_per_s": 1050000,
         "trials_per_min": 7.3, "predicted": pred([1000000, 1100000, 1200000])},
        {"K": 4, "graph": True, "pack": False, "error": "RuntimeError: capture failed | here",
         "predicted": pred([500000] * 3)}]))
    (out / "concurrent.json").write_text(json.dumps([
        {"P": 4, "finished": 4, "wall_s": 30, "summed_tokens_per_s": 600000, "trials_per_min": 8.0, "steps": 200,
         "predicted": {"summed_tokens_per_s": [700000] * 3}}]))
    (out / "concurrent-mps.json").write_text(json.dumps([
        {"P": 4, "finished": 4, "wall_s": 28, "summed_tokens_per_s": 800000, "trials_per_min": 8.6, "steps": 200,
         "mps": True}]))
    (out / "steps.tsv").write_text((out / "steps.tsv").read_text() + "8-stacked\t0\t30\t60\n9-concurrent\t0\t50\t75\n"
                                   "9-concurrent-mps\t0\t30\t40\n")
    r = rep.Results(out, cpu=False, ref=ref)
    rep.write(r)
    text = (out / "report.md").read_text()
    assert "8. seeds stacked in one process, the cpu profile's base (exit 0, 30 s of 60):" in text
    assert "| 16 | off | off | 400.0 | 30 (20-40) | 157000 | 600000 (400000-800000) | 1.10 | 4 (3-5) |" in text
    assert "| 16 | on (9 buckets, 0 eager steps) | on | 60.0 | 30 (20-40) | 1050000 | 1100000 (1000000-1200000) |" in text
    assert "| 4 | on | off | failed: RuntimeError: capture failed / here | 30 (20-40) | - | 500000 | - | 4 (3-5) |" in text
    assert "| 4 | 4 | 30 | 600000 | 700000 | 8.0 (200-step trials) |" in text
    assert "Under CUDA MPS (exit 0, 30 s of 40):\n4 processes, 4 finished in 28 s: 800000 tok/s summed (without MPS: " \
           "600000, 1.33x), 8.6 trials a minute" in text
    assert rep.headline(r, "9-concurrent-mps") == "4 at once under MPS: 800000 tok/s summed, 8.6 trials/min"
    (out / "concurrent-mps.json").write_text(json.dumps([{"mps": False, "why": "mps.sh: no nvidia-cuda-mps-control"}]))
    rep.write(r)
    assert "no MPS here: mps.sh: no nvidia-cuda-mps-control" in (out / "report.md").read_text()
    assert rep.headline(r, "9-concurrent-mps") == "no MPS: mps.sh: no nvidia-cuda-mps-control"
    raw = json.loads((out / "measured.json").read_text())
    assert "stacked K 16: 157000 tok/s summed (predicted 600000 (400000-800000))" in raw["outside"]
    assert "stacked K 4 graphed failed: RuntimeError: capture failed | here" in raw["outside"]
    assert not any("stacked K 1:" in x or "K 16 graphed packed" in x or "processes:" in x for x in raw["outside"])
    assert rep.headline(r, "8-stacked").startswith("K 1: 180000 tok/s summed (predicted 180000); K 16:")
    assert rep.headline(r, "8-stacked").endswith("; K 4 graphed: FAILED")
    assert rep.headline(r, "9-concurrent") == "4 at once: 600000 tok/s summed (predicted 700000), 8.0 trials/min"


def test_side_by_side_refuses_a_folder_for_its_json_before_measuring(repo, tmp_path, capsys):
    """--json names the one file it writes: a folder (a user's, with files) or an empty value is refused at once
    (exit 2, one line), and nothing in or beside the folder is touched."""
    sbs = report_module(repo, "gpu_side_by_side")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "canary.txt").write_text("keep")
    for bad in (tmp_path / "mine", ""):
        assert sbs.main(["stacked", "--json", str(bad), "--tiny"]) == 2
        assert "give the path of a file to write, not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["canary.txt", "mine"]
    assert (tmp_path / "mine" / "canary.txt").read_text() == "keep"
