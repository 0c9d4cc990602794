"""Issue 45 item 8, reliability round 5 (and the open kinds of rounds 3-4), and issue 46's "validation
reports only the first error of a file": each kind a user mistake refused at the line written (exit 2,
file:line, field, what is allowed) or handled as a user would expect. One test per kind, named for it."""
from pathlib import Path

import pytest

from zoo.cli import main


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def spec(tmp_path, text: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def refused(code, out, err, *fragments):
    msg = (out + err).strip()
    assert code == 2 and "Traceback" not in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


MINE = "extends: table3_A\n{paper}variants:\n  mine: {{model: {{h: 2, d_k: 256, d_v: 256}}}}\n"


@pytest.mark.parametrize("value", ['"yes"', "1", "yes"])
def test_paper_row_yes_or_1_is_refused_not_read_as_false(tmp_path, capsys, value):
    f = spec(tmp_path, MINE.format(paper=f"paper: {{paper_row: {value}}}\n"))
    refused(*run("validate", f, capsys=capsys), f"{f}:2: paper.paper_row: ", "valid boolean")


def test_paper_row_true_on_a_row_the_table_lacks(tmp_path, capsys):
    f = spec(tmp_path, MINE.format(paper="paper: {paper_row: true}\n"))
    refused(*run("validate", f, capsys=capsys), f"{f}:2: paper.paper_row: ", "'mine'", "no such row", "A1")
    ok = spec(tmp_path, MINE.format(paper="paper: {paper_row: true}\n").replace("mine", "A1"), "ok.yaml")
    assert run("validate", ok, capsys=capsys)[0] == 0  # on purpose, for a row the paper has: as before


# -- analysis plans and zoo run --plan -------------------------------------------------------------------

PLAN = ("run", "table3_A", "--profile", "smoke", "--plan", "--no-measure")


def test_plan_with_analysis_reads_the_plan(tmp_path, capsys):
    bad = spec(tmp_path, "name: x\nalpha: 7\n", "plan.yaml")
    refused(*run(*PLAN, "--analysis", bad, capsys=capsys), f"{bad}:2: alpha: ")
    refused(*run(*PLAN, "--analysis", tmp_path / "none.yaml", capsys=capsys), "no such analysis plan file")
    good = spec(tmp_path, "name: ref\nseeds: {A1: 3, base: 3}\n", "good.yaml")
    code, out, err = run(*PLAN, "--analysis", good, capsys=capsys)
    assert code == 0 and "A1" in out and f"analysis plan: {good} (ref, " in err, out + err


@pytest.mark.parametrize("text, line, field, name", [
    ("name: x\nseeds: {A1: 3, A9: 3}\n", 2, "seeds.A9", "'A9'"),
    ("name: x\nclaims:\n  - A-one-head-bleu\n  - A-one-hed-ppl\n", 4, "claims.1", "'A-one-hed-ppl'")])
def test_a_plan_naming_rows_or_claims_that_do_not_exist(tmp_path, capsys, text, line, field, name):
    f = spec(tmp_path, text, "plan.yaml")
    refused(*run(*PLAN, "--analysis", f, capsys=capsys), f"{f}:{line}: {field}: no ", name, "Allowed")
    mine = spec(tmp_path, MINE.format(paper="claims: [{id: mine-wins, better: mine, than: A1, metric: dev_ppl}]\n"))
    f = spec(tmp_path, "name: x\nclaims: [mine-wins]\nseeds: {mine: 2, A1: 2, C3_pre: 2}\n", "yours.yaml")
    assert run("run", mine, "--profile", "smoke", "--plan", "--no-measure", "--analysis", f, capsys=capsys)[0] == 0


def test_plan_power_until_resolved_says_what_the_rounds_reach(tmp_path, capsys):
    code, out, err = run("run", "table3_A", "--profile", "smoke", "--plan", "--power", "--until-resolved",
                         "--max-seeds", 4, "--storage", tmp_path, capsys=capsys)
    assert code == 0 and "A-one-head-bleu" in out, out + err
    assert "--until-resolved" in out and "--max-seeds 4" in out and "would stay open" in out, out


def test_report_spec_empty_is_refused_before_writing(tmp_path, capsys):
    refused(*run("report", "--spec", "", "--out", tmp_path / "o", capsys=capsys), "--spec needs a spec")
    assert not (tmp_path / "o").exists()


# -- a profile that makes two rows one model ------------------------------------------------------------

def test_a_profile_that_makes_a_claims_two_rows_one_model(tmp_path, capsys, caplog):
    f = spec(tmp_path, "extends: base\nvariants:\n  two: {model: {N: 2}}\n  four: {model: {N: 4}}\nclaims:\n"
                       "  - {id: deeper-better, better: four, than: two, metric: dev_ppl}\n")
    assert run("validate", f, "--profile", "ablation", capsys=capsys)[0] == 0  # 4 and 2 layers stay apart there
    assert "same model" not in caplog.text
    assert run("validate", f, "--profile", "smoke", capsys=capsys)[0] == 0  # smoke checks the path: said, not refused
    for fragment in (f"{f}:6: claims.0: under profile smoke", "four and two train the same model", "model.N 4 and 2",
                     "deeper-better compares a model with itself"):
        assert fragment in caplog.text, caplog.text


# -- entry-point plugins ----------------------------------------------------------------------------------

PLUGIN = '''
import sys
import torch
from zoo.model import Cost

class Norm(torch.nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.g = torch.nn.Parameter(torch.ones(d_model))
    def forward(self, x):
        return self.g * x

def norm(cost):
    return type("N", (Norm,), {"cost": staticmethod(cost)})

Good = norm(lambda d_model: Cost(params=d_model))
NoneCost = norm(lambda d_model: None)
DictCost = norm(lambda d_model: {"params": d_model})
Negative = norm(lambda d_model: Cost(params=-d_model))
NaN = norm(lambda d_model: Cost(params=d_model, flops=float("nan")))
Raises = norm(lambda d_model: 1 / 0)
'''


def plugin_site(root: Path, dist: str, module: str, source: str, entry_points: dict[str, str]) -> Path:
    """A package as pip would install it: its module and a dist-info naming its entry points."""
    site, info = root / "site", f"{dist.replace('-', '_')}-0.1.dist-info"  # as pip names it: name-version
    (site / info).mkdir(parents=True)
    (site / info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (site / info / "entry_points.txt").write_text(
        "[zoo.components]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    (site / f"{module}.py").write_text(source)
    return site


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Installs plugin packages into a site folder this process sees; forgets them after."""
    import sys
    from zoo.model import components
    sites = []

    def install(dist, module, source, entry_points):
        site = plugin_site(tmp_path / dist, dist, module, source, entry_points)
        monkeypatch.syspath_prepend(str(site))
        sites.append(module)
        components.component_entry_points.cache_clear()
    yield install
    monkeypatch.undo()
    components.component_entry_points.cache_clear()
    for key in [k for k, c in components._REGISTRY.items() if c.package]:
        del components._REGISTRY[key]
    for m in sites:
        sys.modules.pop(m, None)


def norm_spec(tmp_path, name):
    return spec(tmp_path, f"extends: base\nmodel:\n  norm: {name}\n  norm_position: pre\n", f"{name}.yaml")


@pytest.mark.parametrize("name, fragment", [("nonecost", "returned NoneType None, not a zoo.model.Cost"),
                                            ("dictcost", "returned dict"), ("negative", "params=-"),
                                            ("nan", "flops=nan"), ("raises", "raised ZeroDivisionError")])
def test_a_plugin_whose_cost_is_not_a_finite_count(tmp_path, capsys, plugins, name, fragment):
    eps = {f"norm.{n}": f"zoo_r5_costs:{c}" for n, c in [("good", "Good"), ("nonecost", "NoneCost"), ("dictcost", "DictCost"),
                                                         ("negative", "Negative"), ("nan", "NaN"), ("raises", "Raises")]}
    plugins("zoo-r5-costs", "zoo_r5_costs", PLUGIN, eps)
    code, out, err = run("params", norm_spec(tmp_path, "good"), "--profile", "smoke", capsys=capsys)
    assert code == 0, out + err  # the package works where its cost does
    msg = refused(*run("params", norm_spec(tmp_path, name), "--profile", "smoke", capsys=capsys),
                  f"norm component '{name}' (zoo_r5_costs:", "package zoo-r5-costs 0.1", fragment)
    assert "params" not in msg.split("zoo: error:")[0]  # no table printed before the error


def test_a_plugin_that_calls_sys_exit_on_import(tmp_path, capsys, plugins):
    plugins("zoo-r5-exits", "zoo_r5_exits", "import sys\nsys.exit(0)\n", {"norm.quits": "zoo_r5_exits:Norm"})
    refused(*run("params", norm_spec(tmp_path, "quits"), "--profile", "smoke", capsys=capsys),
            "norm component 'quits': importing zoo_r5_exits:Norm (package zoo-r5-exits 0.1) failed: SystemExit")


def test_two_plugins_giving_one_name_and_an_unsafe_name(tmp_path, capsys, plugins, caplog):
    plugins("zoo-r5-one", "zoo_r5_one", PLUGIN, {"norm.twice": "zoo_r5_one:Good", "norm.../x": "zoo_r5_one:Good"})
    plugins("zoo-r5-two", "zoo_r5_two", PLUGIN, {"norm.twice": "zoo_r5_two:Good"})
    f = norm_spec(tmp_path, "twice")
    refused(*run("validate", f, capsys=capsys), f"{f}:3: model.norm: norm component 'twice' is given by two packages",
            "zoo_r5_one:Good (package zoo-r5-one 0.1)", "zoo_r5_two:Good (package zoo-r5-two 0.1)")
    from zoo.model import component_names
    assert "../x" not in component_names("norm") and "is left out" in caplog.text and "../x" in caplog.text


# -- zoo train's run folder -----------------------------------------------------------------------------

TRAIN = ("train", "base", "--profile", "smoke", "--set", "train.steps=2", "--set", "eval.max_sentences=2",
         "--set", "train.checkpoint_every=2")


def test_train_into_a_finished_runs_folder_with_another_model(tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run(*TRAIN, "--out", out, capsys=capsys)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in [*out.glob("*"), *(out / "checkpoints").glob("*")] if p.is_file()}
    refused(*run(*TRAIN, "--set", "model.h=4", "--set", "model.d_k=16", "--set", "model.d_v=16", "--out", out,
                 capsys=capsys), f"the run folder {out} holds the finished run of another model", "model.h: 8 -> 4",
            "new --out", f"delete {out}")
    after = {p.name: p.read_bytes() for p in [*out.glob("*"), *(out / "checkpoints").glob("*")] if p.is_file()}
    assert after == before  # nothing set aside as bad, no second model's metrics appended
    code, _, err = run(*TRAIN[:-2], "--set", "train.checkpoint_every=3", "--set", "eval.beam_size=1", "--out", out,
                       capsys=capsys)  # the same model, another eval: resumed as before, with its note
    assert code == 0 and "trained under another config" in err, err


@pytest.mark.parametrize("make", ["file", "checkpoints-file", "read-only"])
def test_train_into_a_folder_that_is_a_file_or_read_only(tmp_path, capsys, make):
    import os
    out = tmp_path / "run"
    if make == "file":
        out.write_text("notes\n")
        fragment = f"{out} is a file, not a folder"
    elif make == "checkpoints-file":
        out.mkdir()
        (out / "checkpoints").write_text("notes\n")
        fragment = f"{out / 'checkpoints'} is a file, not a folder"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes in a read-only folder")
        out.mkdir()
        out.chmod(0o555)
        fragment = f"cannot write in {out}"
    refused(*run(*TRAIN, "--out", out, capsys=capsys), f"the run folder {out}", fragment)


# -- issue 46: every error of a file --------------------------------------------------------------------

MULTI = """extends: base
model:
  N: true
  d_model: -3
train:
  steps: "100"
  bogus: 1
variants:
  a: {model: {dropout: 2}}
  b: {eval: {beam_size: 0}}
"""


def test_validate_reports_every_error_of_a_file(tmp_path, capsys):
    f = spec(tmp_path, MULTI)
    code, out, err = run("validate", f, capsys=capsys)
    assert code == 2 and "Traceback" not in out + err, out + err
    fails = [l for l in out.splitlines() if l.startswith("FAIL  ")]
    assert [l.split(": ")[0:2] for l in fails] == [
        [f"FAIL  {f}:3", "model.N"], [f"FAIL  {f}:4", "model.d_model"], [f"FAIL  {f}:6", "train.steps"],
        [f"FAIL  {f}:7", "train.bogus"], [f"FAIL  {f}:9", "model.dropout"], [f"FAIL  {f}:10", "eval.beam_size"]], out
    assert "Allowed: batch_tokens" in fails[3] and "0 valid, 1 invalid" in out
    # any other command that loads the spec says all of them too, one paragraph each, exit 2
    code, out, err = run("show", f, capsys=capsys)
    assert code == 2 and err.count(f"{f}:") == 6 and "Traceback" not in err, err


# -- specs/claims/paper.yaml ----------------------------------------------------------------------------

@pytest.mark.parametrize("edit, field, fragment", [
    (lambda t: t + "  - {id: A-too-many-heads-bleu, group: A, metric: bleu, better: A3, than: A4}\n", "claims.{n}.id",
     "`both: true` makes 'A-too-many-heads-bleu' of claims.1's 'A-too-many-heads'"),
    (lambda t: t.replace("needs: [{overfits: D1}]", "needs: [{overfits: D9}]"), "claims.6.needs.0.overfits",
     "unknown row 'D9'"),
    (lambda t: t.replace("addon: ablation_dropout", "addon: ablation_dropuot"), "claims.6.addon",
     "unknown profile 'ablation_dropuot'; did you mean 'ablation_dropout'?")])
def test_paper_claims_file_refuses_expanded_duplicates_and_unknown_needs(tmp_path, edit, field, fragment):
    from zoo.evidence.claims import PAPER_CLAIMS, load_paper
    from zoo.spec import SpecError
    text = PAPER_CLAIMS.read_text()
    n = sum(1 for l in text.splitlines() if l.startswith("  - id:") or l.startswith("  - {id:"))
    f = tmp_path / "paper.yaml"
    f.write_text(edit(text))
    assert edit(text) != text
    with pytest.raises(SpecError) as e:
        load_paper(f)
    assert f"{f}:" in str(e.value) and f": {field.format(n=n)}: " in str(e.value) and fragment in str(e.value), str(e.value)
    assert len(load_paper()) == len(load_paper(PAPER_CLAIMS))  # the shipped file stays valid


# -- rounds 3-4, still open then --------------------------------------------------------------------------

def test_a_tiny_data_max_len_that_keeps_a_remnant_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    refused(*run(*TRAIN, "--set", "data.max_len=8", "--out", out, capsys=capsys), "data.max_len: 8 word-pieces keeps 15 of "
            "2,000 training pairs of multi30k (0.8%", "raise data.max_len")
    assert not (out / "checkpoints").exists() or not any((out / "checkpoints").iterdir())  # nothing trained
    code, _, err = run(*TRAIN, "--set", "data.max_len=32", "--out", tmp_path / "ok", capsys=capsys)
    assert code == 0, err  # 32 keeps 1,750 of 2,000: a run as before


def test_a_vocabulary_too_big_for_the_corpus_is_refused_before_training(tmp_path, capsys):
    out = tmp_path / "run"
    refused(*run(*TRAIN, "--set", "data.vocab_size=200000", "--out", out, capsys=capsys),
            "vocab_size 200000 is too large for corpus 'multi30k'", "at most 83510 BPE pieces")
    assert not any((out / "checkpoints").glob("*.pt"))


@pytest.mark.parametrize("text, name", [
    ("extends: table3_A\nvariants:\n  base: {model: {h: 2, d_k: 256, d_v: 256}}\n", "vb.yaml"),  # a variant named base
    ("extends: base\ntrain: {label_smoothing: 0.0}\n", "base.yaml"),  # a user's base.yaml: its row is named base
    ("extends: table3_A\ntrain: {steps: 100}\n", "short.yaml")])  # a short experiment carrying A1-A4
def test_a_users_base_or_short_table3_spec_never_carries_the_papers_rows(tmp_path, text, name):
    """Rounds 3-4: such rows stood for the paper's in Table 3. Now they are the user's (paper_row false), and the
    report's paper rows (reports.runs.Runs.pick) take only trials that are the paper's."""
    from types import SimpleNamespace

    from zoo.reports.runs import Runs, is_paper
    from zoo.spec import resolve
    (tmp_path / "mine").mkdir()
    mine = resolve(spec(tmp_path / "mine", text, name), profile="smoke")
    paper = resolve("table3_A", profile="smoke") + resolve("base", profile="smoke")
    assert mine and all(c.paper.table == 3 and c.paper.paper_row is False for c in mine)
    assert all(c.paper.paper_row is True for c in paper)
    trial = lambda c, t: SimpleNamespace(config=c, spec=c.spec, variant=c.variant, paper_table=3, paper_row=c.paper.row,
                                         paper_group=c.paper.group, profile="smoke", finished_at=t, updated_at=t,
                                         finished=True)
    runs = Runs.__new__(Runs)
    runs.trials, runs.profile, runs.addons = [trial(c, 1) for c in paper] + [trial(c, 2) for c in mine], "smoke", ()
    for c in mine:  # the user's trial is newer, and still never the paper's row
        assert not is_paper(trial(c, 2))
        assert runs.pick(3, c.paper.row).config.spec == next(p for p in paper if p.paper.row == c.paper.row).spec


# -- a changed analysis plan and a spec's own claims -------------------------------------------------------

MODERN = Path(__file__).resolve().parents[1] / "results" / "modern-cpu2"


@pytest.mark.slow  # two reports of a reference store: about a minute
def test_a_changed_plan_marks_a_specs_own_claims_post_hoc(tmp_path, capsys):
    changed = spec(tmp_path, (MODERN / "plan.yaml").read_text().replace("\nalpha: 0.05", "\nalpha: 0.04"), "plan.yaml")
    assert changed.read_text() != (MODERN / "plan.yaml").read_text()
    for plan, out in ((changed, tmp_path / "changed"), (MODERN / "plan.yaml", tmp_path / "same")):
        code, _, err = run("report", "--runs", MODERN / "zoo.db", "--analysis", plan, "--table", 3, "--format", "md",
                           "--out", out, capsys=capsys)
        assert code == 0, err
    line = lambda out: next(x for x in (out / "table3.md").read_text().splitlines()
                            if x.startswith("| pre-ln-better (specs/modern.yaml) |"))
    assert "post hoc: its trials ran under another plan" in line(tmp_path / "changed"), line(tmp_path / "changed")
    assert "post hoc" not in line(tmp_path / "same"), line(tmp_path / "same")  # the plan they ran under
