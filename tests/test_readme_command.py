"""README's bash block as a fresh clone's reader runs it, and CI running it verbatim."""
import os
import re
import subprocess
from pathlib import Path

from helpers import REPO


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
