"""The spec language: YAML files -> validated, fully resolved configs, one per variant (`resolve`).

The parts, each one idea, in the order a spec is read:
1. zoo.spec.yaml12: the YAML a spec may hold (YAML 1.2 scalars, a line for every key, no aliases or tags);
2. zoo.spec.specfile: a file as read: line-numbered documents, `extends:` chains, `variants:`, built-in specs;
3. zoo.spec.validation: a Doc read as a pydantic model, each mistake said at the line that wrote it;
4. zoo.spec.seeds: the seeds axis (spec, profile or --seeds);
5. zoo.spec.profile_grammar: what a profile file may hold, one model (`Profile`) for validator and schema;
6. zoo.spec.profiles: the overlays that scale a paper spec to a budget;
7. zoo.spec.sweep_axes: a spec's `sweep:` block (grid and random axes, ASHA);
8. zoo.spec.checks: what a resolved spec must also be (claims name rows, corpus and components exist, no two
   trials one model);
9. zoo.spec.resolution: variants x sweep points x seeds, profile and `--set` applied, validated;
10. zoo.spec.schema: JSON Schemas of spec and profile files.
The typed config they produce, `Config`, lives on the ground floor (zoo.config) and imports none of this.
This door serves the parts' public names to outsiders (`from zoo.spec import resolve, SpecError`).
"""
from zoo._door import door

__getattr__, __dir__ = door(__name__, __file__, ["yaml12", "specfile", "validation", "seeds", "profile_grammar", "profiles",
                                                "sweep_axes", "checks", "resolution", "schema"],
                            moved={"zoo.config": "Config CrossFieldError DataSpec EvalSpec MAX_STEPS MAX_TOKENS ModelSpec "
                                                 "OptimizerSpec PaperRef ResourcesSpec ScheduleSpec TrainSpec"})
