"""Your own variant as evidence (issue 35), end to end with real runs: a user spec extending table3_A with one
variant and one claim, 3 seeds on the smoke profile, then `zoo report --table 3` shows it in group A as the
user's with its Δ against base and its claim's verdict, `zoo compare` prints the same digits, and neither it,
a recipe-only spec, nor a user variant named `base` takes the place of a paper row."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the manual's walk: zoo run through Ray, 8 trials

REPO = Path(__file__).resolve().parents[1]
RECIPE = "extends: table3_A\ntrain: {label_smoothing: 0.0}\n"  # A1-A4 under another recipe: the user's rows
NAMED_BASE = "extends: base\nname: base\nmodel: {h: 2, d_k: 256, d_v: 256}\n"  # a user's variant named base


def readme_walk() -> str:
    """The manual's "Your own variant" commands (docs/your-variant.md), as written."""
    text = (REPO / "docs" / "your-variant.md").read_text()
    return text.split("```bash\n", 1)[1].split("\n```", 1)[0]


def zoo(cwd, *args, check=True):
    r = subprocess.run([str(cwd / ".venv" / "bin" / "zoo"), *map(str, args)], cwd=cwd, capture_output=True,
                       text=True, timeout=1200, env={**os.environ, "ZOO_DATA_DIR": "../shared/data"})
    if check:
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """README's walk run word for word in a folder laid out as a clone is (.venv inside, ../shared beside),
    then a recipe-only spec and a user variant named base in the same store."""
    root = tmp_path_factory.mktemp("clone")
    d = root / "work"
    d.mkdir()
    (d / ".venv").symlink_to(REPO / ".venv")
    (root / "shared").symlink_to(REPO.parent / "shared")
    env = {k: v for k, v in os.environ.items() if k != "ZOO_DATA_DIR"}
    r = subprocess.run(["bash", "-e", "-c", readme_walk()], cwd=d, capture_output=True, text=True, timeout=1800, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (d / "walk.out").write_text(r.stdout)
    (d / "recipe.yaml").write_text(RECIPE)
    (d / "named_base.yaml").write_text(NAMED_BASE)
    # one run, one Ray: each spec runs the --variant names it has (recipe.yaml's A1, named_base.yaml's base)
    zoo(d, "run", "recipe.yaml", "named_base.yaml", "--variant", "A1", "--variant", "base", "--profile", "smoke",
        "--seeds", "1", "--storage", "runs-mine")
    zoo(d, "report", "--runs", "runs-mine", "--out", "rep")
    return d


def table_row(md: str, name: str) -> dict:
    """A row of Table 3's main table as {header: cell}."""
    lines = md.split("\n## ")[0].splitlines()
    head = next(x for x in lines if x.startswith("| row |"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    rows = [dict(zip(cols, (c.strip() for c in x.strip("|").split("|")))) for x in lines if x.startswith(f"| {name} |")]
    return rows


def test_your_row_stands_in_its_group_with_its_difference(store):
    md = (store / "rep" / "table3.md").read_text()
    (mine,) = table_row(md, "two_heads")
    assert mine["whose"] == "yours: mine/two_heads.yaml" and mine["against"] == "base" and mine["measured seeds"] == "3"
    assert re.fullmatch(r"[+-]\d+\.\d\d \[[+-]\d+\.\d\d, [+-]\d+\.\d\d\]", mine["Δ PPL [95%]"]), mine
    # after the paper's rows of group A (A4 is its last), before group B
    order = [x.split("|")[1].strip() for x in md.split("\n## ")[0].splitlines() if x.startswith("| ")]
    assert order.index("A4") < order.index("two_heads") < order.index("B1")
    # `zoo compare` prints the report's digits with the page's sign: how much better the row is than base
    delta, interval = mine["Δ PPL [95%]"].split(" ", 1)
    walk = (store / "walk.out").read_text()  # README's `zoo compare two_heads base`, before `base` became two rows
    assert f"Δ {delta} (how much better two_heads is than base), 95% interval {interval}," in walk, (walk[-1500:], mine)
    assert "yours: mine/two_heads.yaml" in (store / "reports-mine" / "table3.md").read_text()
    j = json.loads(zoo(store, "compare", "two_heads", "paper:base", "--runs", "runs-mine", "--json").stdout)
    assert j["seeds"] == [3, 3] and f"{j['delta']:+.2f}" == delta


def test_your_claim_gets_a_verdict(store):
    md = (store / "rep" / "table3.md").read_text()
    claims = md.split("## Claims")[1].split("\n## ")[0]
    line = next(x for x in claims.splitlines() if x.startswith("| two-heads-better (mine/two_heads.yaml) |"))
    verdict = line.split("|")[2].strip()
    # at smoke no claim is judged (issue 51): its Δ is shown with the profile's reason in place of a verdict
    assert verdict.startswith("untestable at this budget: run at profile smoke: smoke trains"), line
    assert "yours:" in line and "3 / 3" in line
    # the notes count it: its verdict in the tally, its sentences among those resampled
    assert "Your claims: 1 row comparisons: 1 untestable at this budget" in claims, claims[-3000:]
    assert "Resampled here: nothing yet" not in claims
    page = (store / "rep" / "sweep-two_heads.md").read_text()  # the spec's own page, linked from the index
    assert "## Against the reference row" in page and "## Claims" in page and "two-heads-better" in page
    assert "sweep-two_heads.md" in (store / "rep" / "index.md").read_text()


def test_no_user_row_takes_a_paper_rows_place(store):
    md = (store / "rep" / "table3.md").read_text()
    (a1,) = [r for r in table_row(md, "A1") if r["whose"] == "paper"]
    assert a1["state"] == "not run"  # the recipe-only spec's A1 is its own row, not the paper's
    (recipe_a1,) = [r for r in table_row(md, "A1") if r["whose"] != "paper"]
    assert recipe_a1["whose"] == "yours: recipe.yaml" and recipe_a1["eps_ls"] == "0"
    bases = table_row(md, "base")
    paper_base = next(r for r in bases if r["whose"] == "paper")
    assert paper_base["h"] != "2" and paper_base["measured seeds"] == "3"  # the paper's spec, not named_base.yaml
    assert any(r["whose"] == "yours: named_base.yaml" for r in bases)
    # the name `base` is now two rows: compare says so rather than guessing
    r = zoo(store, "compare", "two_heads", "base", "--runs", "runs-mine", check=False)
    assert r.returncode == 2 and "ambiguous" in r.stderr and "paper:base" in r.stderr, r.stderr


def test_your_claim_is_planned_and_resolved_as_the_papers_are(store):
    """--plan --power sizes it from the pilot's own difference; --until-resolved at smoke, which can test no
    claim, is refused before anything runs (tests/test_until_resolved.py resolves claims at smoke's budget)."""
    out = zoo(store, "run", "mine/two_heads.yaml", "--profile", "smoke", "--plan", "--power", "--storage",
              "runs-mine").stdout
    line = next(x for x in out.splitlines() if x.startswith("two-heads-better"))
    assert "pilot: 3 seeds" in line, out
    r = zoo(store, "run", "mine/two_heads.yaml", "--profile", "smoke", "--seeds", "3", "--until-resolved",
            "--max-seeds", "3", "--storage", "runs-mine", check=False)  # smoke can test no claim: nothing to resolve
    assert r.returncode == 2 and "untestable at this budget" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_claim_edited_after_its_runs_is_post_hoc(store, tmp_path):
    """The claim as its rows' first trial recorded it is the one planned: a later edit shows as post hoc."""
    import shutil
    d = tmp_path / "work"
    shutil.copytree(store, d, symlinks=True, ignore=shutil.ignore_patterns("rep", "reports-mine"))
    (tmp_path / "shared").symlink_to(REPO.parent / "shared")
    spec = d / "mine" / "two_heads.yaml"
    spec.write_text(spec.read_text().replace("metric: dev_ppl}", "metric: dev_ppl, text: two heads win}"))
    zoo(d, "run", "mine/two_heads.yaml", "--profile", "smoke", "--seeds", "4", "--storage", "runs-mine")
    zoo(d, "report", "--runs", "runs-mine", "--spec", "mine/two_heads.yaml", "--out", "rep")
    page = (d / "rep" / "sweep-two_heads.md").read_text()
    line = next(x for x in page.split("## Claims")[1].splitlines() if x.startswith("| two-heads-better |"))
    assert "post hoc: the claim changed after its rows' first trial" in line and "two heads win" in line, line
