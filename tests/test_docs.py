"""The manual (docs/, issue 46): `mkdocs build --strict` builds it with what README's set-up installs, README
stays a front door (at most 15,000 bytes, its links to pages that exist), and every command block of every
page, README's included, runs as written: a ```bash block in bash -e, a ```python block in the venv's Python,
the blocks of a page in order in one folder laid out as a clone is (.venv, specs/, results/, bench/,
scripts/ inside, ../shared beside). A block that cannot run here says why in the comment before it:
`<!-- not run: REASON -->`; one that trains says so with `<!-- slow: REASON -->` and runs in the slow lane."""
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))]
RUN = {"bash": ["bash", "-e", "-o", "pipefail", "-c"], "python": [sys.executable, "-c"]}
SHOWN = {"yaml", "toml", ""}  # shown, never run: spec and package files, a command's output
MARK = re.compile(r"<!-- (not run|slow): (.+?) -->")
CLONE = ["specs", "results", "bench", "scripts"]  # what the pages' commands read from the checkout
README_LIMIT = 15_000


@dataclass
class Block:
    page: str
    line: int
    lang: str
    code: str
    mark: str = ""    # "", "not run" or "slow"
    reason: str = ""


def blocks(page: str, text: str | None = None) -> list[Block]:
    """The page's fenced blocks that start at the margin (a block indented in a list item is output)."""
    lines = (REPO / page).read_text().splitlines() if text is None else text.splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.fullmatch(r"```(\w*)", lines[i])
        if not m:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == "```")
        before = next((x for x in reversed(lines[:i]) if x.strip()), "")
        mark = MARK.fullmatch(before.strip())
        out.append(Block(page, i + 1, m.group(1), "\n".join(lines[i + 1:end]) + "\n",
                         *(mark.groups() if mark else ("", ""))))
        i = end + 1
    return out


def runnable(page: str, mark: str) -> list[Block]:
    return [b for b in blocks(page) if b.lang in RUN and b.mark == mark]


def run_page(page: str, mark: str, tmp_path: Path) -> None:
    root = tmp_path / "clone"
    work = root / "work"
    work.mkdir(parents=True)
    for name in [".venv", *CLONE]:
        (work / name).symlink_to(REPO / name)
    (root / "shared").symlink_to(REPO.parent / "shared")
    env = {**os.environ, "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}", "NO_MKDOCS_2_WARNING": "1"}
    for b in runnable(page, mark):
        r = subprocess.run([*RUN[b.lang], b.code], cwd=work, env=env, capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, f"{b.page}:{b.line} ({b.lang}) exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}"


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p, "")])
def test_page_commands_run(page, tmp_path):
    run_page(page, "", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p, "slow")])
def test_page_training_commands_run(page, tmp_path):
    run_page(page, "slow", tmp_path)


def test_every_block_runs_or_says_why():
    """A block is run, shown (a spec, a package file, output) or marked with its reason; nothing else."""
    bad = [f"{b.page}:{b.line}: ```{b.lang}" for p in PAGES for b in blocks(p) if b.lang not in {*RUN, *SHOWN}]
    bad += [f"{b.page}:{b.line}: a ```{b.lang} block marked {b.mark}" for p in PAGES for b in blocks(p)
            if b.mark and b.lang not in RUN]
    assert not bad, "\n".join(bad)
    marked = [b for p in PAGES for b in blocks(p) if b.mark]
    assert all(len(b.reason.split()) >= 3 for b in marked), [(b.page, b.line, b.reason) for b in marked]
    # the marks are the exception: a page none of whose commands runs is one of these, each for its reason
    unrun = {p for p in PAGES if any(b.lang in RUN for b in blocks(p)) and not runnable(p, "")}
    assert unrun == {"docs/index.md", "docs/training.md", "docs/your-variant.md", "docs/cluster.md", "docs/gpu.md",
                     "docs/benchmarks.md"}, unrun


def test_the_marker_is_the_line_before_the_fence():
    """A reason anywhere else (a paragraph between) does not hide a block; an indented fence is output."""
    text = ("<!-- not run: needs a GPU here -->\n\n```bash\nzoo a\n```\n"
            "<!-- slow: trains a smoke trial -->\nwhy\n\n```bash\nzoo b\n```\n- out:\n  ```\n  x\n  ```\n")
    got = [(b.code, b.mark, b.reason) for b in blocks("x.md", text)]
    assert got == [("zoo a\n", "not run", "needs a GPU here"), ("zoo b\n", "", "")], got


def test_mkdocs_build_strict(tmp_path):
    r = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "-d", str(tmp_path / "site")],
                       cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    site = tmp_path / "site"
    assert all((site / p.stem / "index.html").exists() for p in (REPO / "docs").glob("*.md") if p.stem != "index")


def test_readme_is_a_front_door():
    """At most 15,000 bytes, and every docs page it links to exists (mkdocs checks the pages' own links)."""
    text = (REPO / "README.md").read_text()
    assert len(text.encode()) <= README_LIMIT, len(text.encode())
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links and all((REPO / x).exists() for x in links), [x for x in links if not (REPO / x).exists()]
    # every page of the nav is reachable from the front door
    assert {Path(x).name for x in links} >= {p.name for p in (REPO / "docs").glob("*.md")} - {"index.md"}
