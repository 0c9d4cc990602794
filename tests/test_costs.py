"""Analytic parameter and FLOP counts agree with the compiled model and with torch's FLOP counter."""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from zoo.cli import main
from zoo.model.costs import forward_flops, params_analytic, paper_cost_flops, train_flops_per_step
from zoo.model.transformer import build_model, count_params
from zoo.config import ModelSpec
from zoo.spec import resolve, spec_files


def test_analytic_params_equal_numel_for_every_spec(repo):
    built: dict[tuple[str, int], int] = {}  # variants of one model (seeds, training fields) build it once
    for f in spec_files([repo / "specs"]):
        for c in resolve(f):
            key = (c.model.model_dump_json(), c.data.vocab_size)
            if key not in built:
                with torch.device("meta"):
                    built[key] = count_params(build_model(c.model, c.data.vocab_size))
            assert built[key] == params_analytic(c.model, c.data.vocab_size), (f, c.variant)


def test_table3_counts_within_7_percent_of_paper(repo):
    from zoo.paper import table3_row
    for f in ("base", "table3_A", "table3_B", "table3_C", "table3_D", "table3_E", "big"):
        for c in resolve(repo / "specs" / f"{f}.yaml"):
            ref = table3_row(c.variant)
            if ref["params_m"]:
                n = params_analytic(c.model, 37000) / 1e6
                assert abs(n - ref["params_m"]) / ref["params_m"] < 0.07, (c.variant, n, ref["params_m"])


def test_train_step_flops_match_flop_counter():
    m = ModelSpec(N=2, d_model=64, d_ff=96, h=4, d_k=8, d_v=24, dropout=0.0, share_embeddings=False)
    V, B, S, T = 300, 3, 11, 7
    model = build_model(m, V)
    src, tgt = torch.randint(4, V, (B, S)), torch.randint(4, V, (B, T))
    # SDPA's fused CPU kernel reports 0 FLOPs; the math backend runs plain matmuls the counter sees
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        model(src, tgt).float().pow(2).mean().backward()
    analytic = 3 * forward_flops(m, V, B * S, B * T, S, T)
    assert abs(fc.get_total_flops() - analytic) / analytic < 0.02


def test_paper_cost_estimates(repo, capsys):
    base, big = resolve(repo / "specs/base.yaml")[0], resolve(repo / "specs/big.yaml")[0]
    assert f"{paper_cost_flops(base):.1e}" == "3.3e+18" and f"{paper_cost_flops(big):.1e}" == "2.3e+19"
    assert paper_cost_flops(resolve(repo / "specs/table3_A.yaml", "A1")[0]) is None
    assert train_flops_per_step(big) > 3 * train_flops_per_step(base)
    assert main(["flops", str(repo / "specs/base.yaml")]) == 0
    out = capsys.readouterr().out
    assert "3.3e+18" in out and "100,000" in out
