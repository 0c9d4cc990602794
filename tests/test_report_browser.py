"""The HTML report in a real browser: Debian's headless Chromium renders the pages, loads every image
and draws something that is not blank, at a wide and at a phone width. The store is SYNTHETIC
(see test_report.synthetic_store): the test is about rendering, not results. One test also renders
every page built from copies of the committed reference stores (results/*/zoo.db): each must fit a
1280px window, every table inside its box."""
import re
import shutil
import subprocess

import pytest
from matplotlib.image import imread

from test_report import HOSTILE, REPO, SVG, assert_no_injected_markup, hostile_store, synthetic_store
from zoo.cli import main
from zoo.paper import TABLE3
from zoo.runner.storefile import unpacked

pytestmark = pytest.mark.slow  # drives a headless browser


def chromium(tmp_path, url: str, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed; the browser test needs Debian's package: "
                    "apt-get update && apt-get install -y chromium (as .ci/run does)")
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--hide-scrollbars", f"--user-data-dir={profile}", *args, url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    out = tmp / "out"
    assert main(["report", "--runs", str(synthetic_store(tmp / "zoo.db")), "--out", str(out),
                 "--format", "html"]) == 0
    return out


def dom(tmp_path, page, width):
    return chromium(tmp_path, page.as_uri(), "--virtual-time-budget=10000", f"--window-size={width},1600",
                    "--dump-dom").stdout


def assert_tables_fit(body: str) -> None:
    """The table that overflows its box the most (base.html.j2's data-widest-table) fits it."""
    table, box = map(int, re.search(r'data-widest-table="(\d+)/(\d+)"', body).groups())
    assert table <= box, f"a table is {table}px wide in a {box}px box: its right columns are cut off"


@pytest.mark.parametrize("width", [1280, 390])
def test_table3_page_renders_rows_and_images(site, tmp_path, width):
    html = dom(tmp_path, site / "table3.html", width)
    rows = re.findall(r'<tr data-row="([^"]+)"', html)
    assert rows[:20] == [r[0] for r in TABLE3]  # the main table, in the paper's order
    body = re.search(r"<body[^>]*>", html).group(0)
    assert 'data-images-loaded="true"' in body, body
    loaded, total = map(int, re.search(r'data-images="(\d+)/(\d+)"', body).groups())
    assert total >= 10 and loaded == total
    page, window = map(int, re.search(r'data-page-width="(\d+)/(\d+)"', body).groups())
    assert page <= window, f"the page is {page}px wide in a {window}px window: only tables may scroll"
    if width >= 1280:  # the claims table, verdicts second, fits its box: nothing to scroll sideways for
        inner, box = map(int, re.search(r'data-claims-width="(\d+)/(\d+)"', body).groups())
        assert inner <= box, f"the claims table is {inner}px wide in a {box}px box"
        assert_tables_fit(body)  # and so does every other table (issue 33)


@pytest.mark.parametrize("name", ["index", "table2", "table4"])
def test_other_pages_load_their_images(site, tmp_path, name):
    body = re.search(r"<body[^>]*>", dom(tmp_path, site / f"{name}.html", 1280)).group(0)
    assert 'data-images-loaded="true"' in body, body
    assert_tables_fit(body)


def test_index_screenshot_is_not_blank(site, tmp_path):
    png = tmp_path / "index.png"
    chromium(tmp_path, (site / "index.html").as_uri(), f"--screenshot={png}", "--window-size=1280,2000")
    assert png.stat().st_size > 30_000
    img = imread(png)
    assert img.shape[:2] == (2000, 1280)
    colours = {tuple(p) for p in (img[::7, ::7, :3] * 255).astype(int).reshape(-1, 3).tolist()}
    assert len(colours) > 200, f"only {len(colours)} colours: the page looks blank"
    dark = (img[..., :3].mean(axis=2) < 0.5).mean()
    assert 0.005 < dark < 0.6, f"{dark:.1%} dark pixels: not a rendered page of text and plots"


def test_hostile_strings_build_no_element_in_the_browser(site, tmp_path):
    """A store holding HTML injections (spec path, variant, error text, hardware, profile): after the
    browser has parsed the page and run its script, the DOM holds them as text, never as elements."""
    out = tmp_path / "out"
    shutil.copytree(site / "img", out / "img")  # the report's figure cache: only the hostile rows' are drawn
    assert main(["report", "--runs", str(hostile_store(tmp_path / "zoo.db")), "--out", str(out),
                 "--format", "html", "--table", "3"]) == 0
    html = dom(tmp_path, out / "table3.html", 1280)
    assert 'data-images-loaded="true"' in re.search(r"<body[^>]*>", html).group(0)  # the page's script ran
    assert_no_injected_markup(html)
    for text in (SVG, HOSTILE["hardware"], HOSTILE["variant"], "<iframe src=javascript:alert(4)>"):
        assert text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in html, text


# Issue 33: every page of a report built from the committed reference stores fits a 1280px window, each
# table inside its box (Table 3's provenance and Table 4's data / split columns once ran off the edge).
STORES = {"ablation2": REPO / "results" / "ablation2-cpu2" / "zoo.db.xz",
          "table4": REPO / "results" / "table4-cpu2" / "zoo.db.xz"}
BUILDS = [  # (store, extra options): every kind of page `zoo report` writes (index, Tables 2-4 and claims, a sweep)
    ("ablation2", ["--profile", "ablation", "--addon", "ablation_dropout", "--addon", "ablation_big"]),
    ("ablation2", ["--sweep", str(REPO / "specs" / "table3_C.yaml")]),
    ("table4", []),
    ("table4", ["--sweep", str(REPO / "specs" / "table4_wsj.yaml")]),
]


@pytest.fixture(scope="module")
def reference_pages(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reference")
    pages = []
    for i, (name, options) in enumerate(BUILDS):
        store = tmp / f"{name}.db"
        if not store.exists():  # a copy: the report only reads, but results/ is never written
            shutil.copyfile(unpacked(STORES[name]), store)
        out = tmp / f"out{i}"
        if i and BUILDS[i - 1][0] == name:  # the figure cache of the same store's build: its plots drawn once
            shutil.copytree(tmp / f"out{i - 1}" / "img", out / "img")
        assert main(["report", "--runs", str(store), "--out", str(out), "--format", "html", *options]) == 0
        pages += sorted(out.glob("*.html"))
    return pages


@pytest.mark.slow
def test_every_reference_page_fits_a_1280px_window(reference_pages, tmp_path):
    names = {p.name for p in reference_pages}
    assert {"index.html", "table2.html", "table3.html", "table4.html"} <= names, names
    assert any(n.startswith("sweep-") for n in names), names
    clipped = []
    for page in reference_pages:
        body = re.search(r"<body[^>]*>", dom(tmp_path, page, 1280)).group(0)
        doc, window = map(int, re.search(r'data-page-width="(\d+)/(\d+)"', body).groups())
        assert window == 1280, body
        table, box = map(int, re.search(r'data-widest-table="(\d+)/(\d+)"', body).groups())
        if doc > window or table > box:
            clipped.append(f"{page.parent.name}/{page.name}: page {doc}px in a {window}px window, "
                           f"widest table {table}px in a {box}px box")
    assert not clipped, "cut off at 1280px:\n" + "\n".join(clipped)
