"""A spec's paper fields: paper_row as a strict boolean on rows the paper has, a user's spec never the paper's
row in Table 3, and specs/claims/paper.yaml refusing expanded duplicates and unknown needs."""
import pytest

from helpers import refused, run, spec


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
