"""The spec language: YAML files -> validated, fully resolved configs, one per variant (`resolve`).

The parts, each one idea, in the order a spec is read:
1. zoo.spec.yaml12: the YAML a spec may hold (YAML 1.2 scalars, a line for every key, no aliases or tags);
2. zoo.spec.specfile: a file as read: line-numbered documents, `extends:` chains, `variants:`, built-in specs;
3. zoo.spec.profiles: the overlays that scale a paper spec to a budget;
4. zoo.spec.sweep_axes: a spec's `sweep:` block (grid and random axes, ASHA);
5. zoo.spec.resolution: variants x sweep points x seeds, profile and `--set` applied, validated;
6. zoo.spec.schema: JSON Schemas of spec and profile files.
The typed config they produce, `Config`, lives on the ground floor (zoo.config) and imports none of this.
This door serves the parts' public names to outsiders (`from zoo.spec import resolve, SpecError`).
"""
from zoo._door import door

__getattr__, __dir__ = door(__name__, {
    "yaml12": "YamlError",
    "specfile": "Doc FILE_KEYS MAX_BYTES MAX_EXTENDS SECTIONS SpecError builtin_specs deep_merge load_file load_yaml "
                "read_yaml spec_path specs_dir variant_names",
    "profiles": "PROFILE_KEYS SCALE_KEYS WIDTHS apply_profile auto_profile find_profile profile_description "
                "profile_name profiles_dir read_profile",
    "sweep_axes": "Asha MAX_GRID SPACES scheduler sweep_size",
    "resolution": "MAX_SEEDS MAX_TRIALS parse_set resolve spec_files trial_name",
    "schema": "profile_schema spec_schema",
}, moved={"zoo.config": "Config CrossFieldError DataSpec EvalSpec MAX_STEPS MAX_TOKENS ModelSpec OptimizerSpec "
                        "PaperRef ResourcesSpec ScheduleSpec TrainSpec"})
