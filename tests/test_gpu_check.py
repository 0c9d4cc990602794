"""scripts/gpu-check.sh --cpu (issue 44, item 6): the GPU check rehearsed on this CPU with tiny shapes and few steps,
every step under its own time limit with a one-line summary as it ends, into a report that covers learning,
checkpoint share and tokens/s; the whole run within the script's 8 minutes (about six on this busy 2-core machine)."""
import json
import os
import re
import subprocess
import time

import pytest

STEPS = ["1-torch", "2-predict", "2-bench-eager", "2-bench-compiled", "3-learn-new", "3-learn-old", "4-trial",
         "4-trial-other", "5-shared", "6-no-cuda", "7-report"]


@pytest.mark.slow
def test_gpu_check_rehearses_every_step_on_the_cpu(repo, data_root, tmp_path):
    out = tmp_path / "gc"
    t0 = time.monotonic()
    r = subprocess.run([str(repo / "scripts" / "gpu-check.sh"), "--cpu", "--out", str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=900, env={**os.environ, "ZOO_DATA_DIR": str(data_root)})
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # 8 minutes is the script's own deadline (no step starts past it); a minute's grace for a busy machine
    assert wall < 9 * 60, wall
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
        assert row["exit"] in want or row["exit"].startswith("skipped: no Ray"), (s, row)
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
    assert (out / "work" / ".gitignore").exists()
