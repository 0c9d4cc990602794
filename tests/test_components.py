"""Components beyond the paper (issue 36): spec fields whose defaults are the paper's, built from
registries (zoo.model.components) that count their own costs exactly, and a third-party package's component
trained from a spec through the real CLI. Every built-in spec keeps the config hash it had before.

`python tests/test_components.py --write` rewrites tests/data/builtin_config_hashes.json (only for a
change that is meant to change hashes: every finished trial of every store would rerun)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from zoo import config

from zoo.model import components
from zoo.cli import main
from zoo.config import Config, ModelSpec, param_matched_d_ff
from zoo.model.costs import activation_floats_per_token, forward_flops, params_analytic
from zoo.errors import UserError
from zoo.model.transformer import alibi_slopes, build_model, count_params, encoder_attention

REPO = Path(__file__).resolve().parents[1]
HASHES = REPO / "tests/data/builtin_config_hashes.json"
PROFILES = ("paper", "smoke", "cpu", "ablation")
PACKAGE = REPO / "tests/zoo_component_pkg"


def builtin_hashes() -> dict[str, str]:
    """config_hash() of every trial of every built-in spec under each profile ("spec/profile/trial")."""
    from zoo.spec import SpecError, resolve, specs_dir
    out = {}
    for f in sorted(specs_dir().glob("*.yaml")):
        for prof in PROFILES:
            try:
                cfgs = resolve(f, profile=prof)
            except SpecError:  # a profile that does not fit the spec (the ablation profile's splits on WMT EN-FR)
                continue
            out.update({f"{f.stem}/{prof}/{c.trial}": c.config_hash() for c in cfgs})
    return out


def test_builtin_config_hashes_are_unchanged():
    """The new fields at their defaults leave every built-in trial's hash as it was (recorded before they
    existed), so no finished trial of any store reruns."""
    now, then = builtin_hashes(), json.loads(HASHES.read_text())
    assert len(then) > 100
    assert {k: now.get(k) for k in then} == then


def test_defaults_are_the_papers_and_a_built_in_counts_only_when_chosen():
    m = ModelSpec()
    assert (m.norm_position, m.norm, m.ffn, m.positional_encoding, m.attention, m.h_kv, m.kv_heads) == \
        ("post", "layernorm", "relu", "sinusoidal", "multihead", None, 8)
    assert {kind: next(iter(names)) for kind, names in components.BUILT_IN.items()} == {
        kind: ModelSpec.model_fields[field].default for kind, field in components.FIELDS.items()}
    plain = Config(variant="x").config_hash()
    written = Config(variant="x", model=ModelSpec(norm_position="post", norm="layernorm", ffn="relu",
                                                  attention="multihead", h_kv=None)).config_hash()
    assert written == plain
    changed = [Config(variant="x", model=ModelSpec(**{k: v})).config_hash() for k, v in
               (("norm_position", "pre"), ("norm", "rmsnorm"), ("ffn", "swiglu"), ("positional_encoding", "rope"),
                ("h_kv", 2))]
    assert len({plain, *changed}) == 6


def test_registry_builds_every_built_in_with_its_declared_signature():
    for kind, names in components.BUILT_IN.items():
        assert components.KINDS[kind]  # the constructor's declared parameters
        for name in names:
            c = components.lookup(kind, name)
            assert c.package == "" and isinstance(c.cost(*components.arguments(ModelSpec(), kind)), components.Cost)
            m = ModelSpec(N=1, d_model=32, d_ff=48, h=4, d_k=8, d_v=8, max_len=16,
                          **{components.FIELDS[kind]: name})
            module = components.build(m, kind)
            assert sum(p.numel() for p in module.parameters()) == components.cost(m, kind).params, (kind, name)
    with pytest.raises(UserError, match=r"no norm component 'rmsnrom'; did you mean 'rmsnorm'\? Allowed: layernorm, "):
        components.lookup("norm", "rmsnrom")
    assert components.third_party(ModelSpec(norm="rmsnorm")) == {}


# -- validation: file:line, the names there are ------------------------------------------------------

@pytest.mark.parametrize("text, line, field, fragment", [
    ("model:\n  N: 2\n  norm: rmsnrom\n", 3, "model.norm",
     "no norm component 'rmsnrom'; did you mean 'rmsnorm'? Allowed: layernorm, rmsnorm"),
    ("model:\n  ffn: swigul\n", 2, "model.ffn", "did you mean 'swiglu'? Allowed: geglu, gelu, relu, swiglu"),
    ("model:\n  positional_encoding: rotary\n", 2, "model.positional_encoding", "Allowed: alibi, learned, none, rope"),
    ("model:\n  attention: flash\n", 2, "model.attention", "Allowed: multihead"),
    ("model:\n  h: 8\n  h_kv: 3\n", 3, "model.h_kv", "h_kv (3) must divide h (8)"),
    ("model:\n  positional_encoding: rope\n  h: 8\n  d_k: 7\n", 4, "model.d_k", "d_k must be even (got 7)"),
    ("model:\n  norm_position: sandwich\n", 2, "model.norm_position", "'post' or 'pre'"),
])
def test_mistakes_exit_2_at_file_line(tmp_path, capsys, text, line, field, fragment):
    f = tmp_path / "spec.yaml"
    f.write_text(text)
    assert main(["validate", str(f)]) == 2
    out = capsys.readouterr().out
    assert f"{f}:{line}: {field}: " in out and fragment in out, out


def test_show_prints_the_param_matched_d_ff(capsys):
    assert param_matched_d_ff(2048) == 1365
    assert main(["show", "base", "--set", "model.ffn=swiglu"]) == 0
    out = capsys.readouterr().out
    assert "d_ff 1365 matches the parameters of relu at d_ff 2048" in out
    relu = ModelSpec(d_model=512, d_ff=2048)
    gated = relu.model_copy(update={"ffn": "swiglu", "d_ff": 1365})
    assert abs(params_analytic(gated, 100) / params_analytic(relu, 100) - 1) < 0.001


# -- exactness: parameters, FLOPs, decoding --------------------------------------------------------

CHANGES = {"rmsnorm": {"norm": "rmsnorm"}, "pre": {"norm_position": "pre"}, "gelu": {"ffn": "gelu"},
           "swiglu": {"ffn": "swiglu"}, "geglu": {"ffn": "geglu"}, "rope": {"positional_encoding": "rope"},
           "alibi": {"positional_encoding": "alibi"}, "none": {"positional_encoding": "none"},
           "learned": {"positional_encoding": "learned"}, "mqa": {"h_kv": 1}, "gqa": {"h_kv": 2},
           "combination": {"norm_position": "pre", "norm": "rmsnorm", "ffn": "swiglu", "positional_encoding": "rope",
                           "h_kv": 2}}
SMALL = ModelSpec(N=2, d_model=64, d_ff=96, h=4, d_k=8, d_v=24, dropout=0.0, share_embeddings=False, max_len=64)


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_costs_are_exact(name):
    """zoo.model.costs' parameters equal the model's numel; its FLOPs torch's FlopCounterMode (the math SDPA
    backend: the fused CPU kernel reports 0 FLOPs) for a training step, forward and backward."""
    m = SMALL.model_copy(update=CHANGES[name])
    m = ModelSpec.model_validate(m.model_dump())  # validated, as a spec's is
    V, B, S, T = 300, 3, 11, 7
    torch.manual_seed(0)
    model = build_model(m, V)
    assert count_params(model) == params_analytic(m, V)
    src, tgt = torch.randint(4, V, (B, S)), torch.randint(4, V, (B, T))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        model(src, tgt).float().pow(2).mean().backward()
    analytic = 3 * forward_flops(m, V, B * S, B * T, S, T)
    assert abs(fc.get_total_flops() - analytic) / analytic < 0.01
    assert activation_floats_per_token(m, V, 25) > 0


@pytest.mark.parametrize("name", ["rope", "alibi", "gqa", "combination"])
def test_heat_map_weights_give_the_attention_output(name):
    """encoder_attention's weights, applied to the values (shared heads repeated), give the layer's own
    self-attention output: rotations, ALiBi's bias and grouped heads as the fused kernel applies them."""
    torch.manual_seed(0)
    model = build_model(SMALL.model_copy(update=CHANGES[name]), 50).eval()
    src = torch.randint(4, 50, (2, 9))
    src[1, 6:] = 0
    w = encoder_attention(model, src, 0)
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, 9)) and w[1, :, :, 6:].abs().max() == 0
    with torch.no_grad():
        x = model.encoder[0].res1.inner(model._embed(model.src_embed, src))
        att = model.encoder[0].self_attn
        v = att.heads(att.w_v(x), att.h_kv, att.d_v).repeat_interleave(att.h // att.h_kv, 1)
        out = att.w_o((w @ v).transpose(1, 2).reshape(2, 9, -1))
        expect = att(x, mask=model.src_mask(src), pos=model.pos_embed)
    torch.testing.assert_close(out, expect, atol=1e-5, rtol=1e-4)


def test_alibi_slopes_are_press_et_als():
    assert alibi_slopes(8) == [2 ** -i for i in range(1, 9)]
    # not a power of 2: the 4 slopes of h = 4, then the odd ones of h = 8
    assert alibi_slopes(6) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]


@pytest.mark.parametrize("name", ["alibi", "combination"])
def test_train_step_runs_in_bf16_on_the_fused_kernels(name):
    torch.manual_seed(0)
    model = build_model(SMALL.model_copy(update={**CHANGES[name], "dropout": 0.1, "attention_dropout": 0.1}), 50)
    src, tgt = torch.randint(4, 50, (2, 9)), torch.randint(4, 50, (2, 6))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(src, tgt).float().logsumexp(-1).mean()
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


# -- a third-party component: installed from its own package, named by a spec, trained by `zoo train` --

@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """tests/zoo_component_pkg installed by pip (offline, no build isolation) into a folder of its own,
    which a process puts on its path: the test venv stays as it was, for every other test."""
    tmp = tmp_path_factory.mktemp("component")
    shutil.copytree(PACKAGE, tmp / "src")  # pip builds in the source tree: a copy keeps tests/ clean
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(tmp / "site"), str(tmp / "src")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp / "site/zoo_scalenorm-0.1.0.dist-info/entry_points.txt").is_file()
    return tmp / "site"


@pytest.fixture
def installed(site, monkeypatch):
    """This process sees the package (as if pip had installed it into the venv), then forgets it again."""
    monkeypatch.syspath_prepend(str(site))
    components.component_entry_points.cache_clear()
    yield
    monkeypatch.undo()
    components.component_entry_points.cache_clear()
    components._REGISTRY.pop(("norm", "scalenorm"), None)
    sys.modules.pop("zoo_scalenorm", None)


def test_an_installed_component_is_named_costed_and_hashed_with_its_version(installed, monkeypatch):
    assert "scalenorm" in components.component_names("norm")
    m = ModelSpec(N=2, d_model=32, d_ff=48, h=4, d_k=8, d_v=8, max_len=300, norm="scalenorm", norm_position="pre")
    assert components.lookup("norm", "scalenorm").package == "zoo-scalenorm 0.1.0"
    assert components.third_party(m) == {"norm.scalenorm": "zoo-scalenorm 0.1.0"}  # for the trial's provenance
    assert count_params(build_model(m, 40)) == params_analytic(m, 40)
    cfg = Config(variant="x", model=m)
    now = cfg.config_hash()
    from zoo.result import Hardware
    from zoo.runner.trial import provenance
    assert provenance(Hardware(), "", m).components == {"norm.scalenorm": "zoo-scalenorm 0.1.0"}  # the store's record
    monkeypatch.setattr(components, "component_package", lambda kind, name: "zoo-scalenorm 0.2.0")
    assert cfg.config_hash() != now  # another version of the package, another hash


@pytest.mark.slow
def test_zoo_train_trains_a_third_party_component_from_a_spec(site, tmp_path, data_root):
    spec = tmp_path / "scalenorm.yaml"
    spec.write_text("extends: base\nmodel:\n  norm: scalenorm\n  norm_position: pre\n")
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "ZOO_DATA_DIR": str(data_root)}
    zoo = [sys.executable, "-m", "zoo.cli"]
    sets = ["--profile", "smoke", "--set", "train.steps=3", "--set", "eval.max_sentences=2"]
    r = subprocess.run([*zoo, "train", str(spec), *sets, "--out", str(tmp_path / "run")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["steps_done"] == 3
    last = sorted((tmp_path / "run/checkpoints").glob("*.pt"))[-1]
    state = torch.load(last, weights_only=True)["model"]
    assert "encoder.0.res1.norm.g" in state and "enc_norm.g" in state  # ScaleNorm's one weight, pre-norm's final norms
    show = subprocess.run([*zoo, "show", str(spec), *sets], env=env, capture_output=True, text=True, timeout=120)
    assert f"(config hash {summary['config_hash']})" in show.stdout, show.stdout + show.stderr  # the same trial
    # a misspelt component: exit 2 at file:line with the names there are, the package's among them
    spec.write_text("extends: base\nmodel:\n  norm: scalenrom\n")
    bad = subprocess.run([*zoo, "validate", str(spec)], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stdout + bad.stderr
    assert (f"{spec}:3: model.norm: no norm component 'scalenrom'; did you mean 'scalenorm'? "
            "Allowed: layernorm, rmsnorm, scalenorm") in bad.stdout, bad.stdout


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    HASHES.parent.mkdir(exist_ok=True)
    HASHES.write_text(json.dumps(builtin_hashes(), indent=1, sort_keys=True) + "\n")
