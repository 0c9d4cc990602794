"""How a spec file is read: YAML 1.2 scalars, variant keys as typed, ints in float fields, commented-out
sections, long variant names on a seeds axis, and extends' variants."""
from helpers import spec
from zoo.spec import resolve, variant_names


def test_variant_keys_are_the_strings_typed(tmp_path):
    f = spec(tmp_path, "extends: base\nvariants:\n  010: {}\n  8: {model: {h: 4}}\n  on: {}\n  2024-01-01: {}\n"
             "  0.5: {}\n  null: {}\n")
    assert variant_names(f) == ["010", "8", "on", "2024-01-01", "0.5", "null"]
    cfgs = {c.variant: c for c in resolve(f)}
    assert cfgs["8"].model.h == 4 and cfgs["010"].model.h == 8


def test_core_schema_values(tmp_path):
    f = spec(tmp_path, "extends: base\nmodel:\n  d_ff: 0x800\n  N: 0o6\ntrain:\n  steps: 100_000\n"
             "  optimizer: {eps: 1e-9}\n")
    c = resolve(f)[0]
    assert (c.model.d_ff, c.model.N, c.train.steps, c.train.optimizer.eps) == (2048, 6, 100_000, 1e-9)


def test_yaml_ints_still_fill_float_fields(tmp_path):
    f = tmp_path / "ints.yaml"
    f.write_text("model: {dropout: 0}\ntrain: {schedule: {lr_scale: 2}, optimizer: {betas: [0, 0.5], eps: 1e-8}}\n")
    c = resolve(f)[0]
    assert c.model.dropout == 0.0 and c.train.schedule.lr_scale == 2.0 and c.train.optimizer.betas == (0.0, 0.5)
    assert c.train.optimizer.eps == 1e-8  # YAML 1.1 would read 1e-8 as a string


def test_a_section_whose_lines_are_all_commented_out(tmp_path):
    f = spec(tmp_path, "extends: base\nmodel:\n  # N: 4\ntrain:\n  optimizer:\n  # eps: 1e-8\nvariants:\n")
    assert resolve(f)[0].model.N == 6


def test_a_63_character_variant_on_a_seeds_axis(tmp_path):
    name = "v" * 63
    cfgs = resolve(spec(tmp_path, f"extends: base\nseeds: [1, 2, 3]\nvariants:\n  {name}: {{}}\n"))
    assert [c.variant for c in cfgs] == [name] * 3
    trials = [c.trial for c in cfgs]
    assert len(set(trials)) == 3 and all(len(t) <= 64 and t.endswith(f"-seed{i}") for i, t in enumerate(trials, 1))


def test_extends_inherits_variants_unless_the_file_names_its_own(tmp_path):
    child = spec(tmp_path, "extends: table3_A\ntrain: {steps: 100}\n")
    cfgs = resolve(child)
    assert [c.variant for c in cfgs] == ["A1", "A2", "A3", "A4"] and {c.train.steps for c in cfgs} == {100}
    assert cfgs[0].model.h == 1  # the variant's overrides still apply
    named = spec(tmp_path, "extends: table3_A\nname: mine\n", "named.yaml")
    assert variant_names(named) == ["mine"]
