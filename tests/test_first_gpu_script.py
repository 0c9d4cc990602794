"""scripts/first-gpu-run.sh --cpu (issue 37): README's first-GPU checklist rehearsed on the CPU with tiny shapes,
every step's code path end to end (about five minutes on this project's busy 2-core machine), into a report."""
import json
import os
import subprocess

import pytest


@pytest.mark.slow
def test_first_gpu_script_rehearses_every_step_on_the_cpu(repo, data_root, tmp_path):
    out = tmp_path / "first"
    r = subprocess.run([str(repo / "scripts" / "first-gpu-run.sh"), "--cpu", "--out", str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=900, env={**os.environ, "ZOO_DATA_DIR": str(data_root)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = (out / "report.md").read_text()
    for n in range(1, 8):
        assert f"\n{n}. " in report, (n, report)
    assert "## Outside the predicted range" in report and "this CPU (fp32)" in report
    assert "5. two workers: exit 0, workers [2]: as expected" in report
    assert "7. GPU asked, CUDA hidden: exit 2, says what torch sees: as expected" in report
    raw = json.loads((out / "measured.json").read_text())
    steps = raw["steps"]
    assert all(steps[s][0] == "0" for s in steps if s != "7-no-cuda") and steps["7-no-cuda"][0] == "2", steps
    assert set(raw["bench"]["models"]) == {"base", "big"} and raw["predict"]["cpu_check"]
    assert raw["train_tokens_per_s"]["eager"] > 0 and raw["train_tokens_per_s"]["compiled"] > 0
    # the compiled run trained in its own folder: compile is outside the config hash
    assert (out / "work" / "train-compiled" / "summary.json").exists() and (out / "work" / ".gitignore").exists()
