"""Components from installed packages (entry points): a cost that is no finite count, a package that exits on
import, two packages giving one name and an unsafe name, each refused naming the package."""
from pathlib import Path

import pytest

from helpers import refused, run, spec


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
