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
from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import door

# The door, written by scripts/doors.py from the parts' __all__ (tests/test_structure.py checks it).
if TYPE_CHECKING:
    from .checks import (MAX_TRIALS, PAPER_ROWS, check_claims, check_claims_apart, check_compare_to,
        check_components, check_corpus, check_grace, check_one_seed, check_paper_row, check_same, check_seed_axes,
        check_size, check_spec_claims, say_once)
    from .profile_grammar import Corpus, DatasetEntry, Factor, Part, Prefer, Profile, Scale, Sections
    from .profiles import (WIDTHS, ProfileFile, apply_profile, auto_profile, check_heads, find_profile,
        load_profile, profile_description, profile_name, profile_text, profile_untestable, profiles_dir,
        read_profile)
    from .resolution import parse_set, resolve, spec_files, trial_name, variants_of
    from .schema import profile_schema, spec_schema
    from .seeds import MAX_SEEDS, SEEDS, Seeds, seeds_axis, seeds_problem
    from .specfile import (Doc, FILE_KEYS, MAX_BYTES, MAX_EXTENDS, SECTIONS, SpecError, builtin_specs, deep_merge,
        load_file, load_yaml, read_yaml, spec_path, specs_dir, variant_names)
    from .sweep_axes import Asha, MAX_GRID, SPACES, scheduler, sweep_size
    from .validation import mistake, spec_error, validate_config
    from .yaml12 import YamlError

_PART = {  # name -> the part that lends it
    "MAX_TRIALS": "checks", "PAPER_ROWS": "checks", "check_claims": "checks", "check_claims_apart": "checks",
    "check_compare_to": "checks", "check_components": "checks", "check_corpus": "checks", "check_grace": "checks",
    "check_one_seed": "checks", "check_paper_row": "checks", "check_same": "checks", "check_seed_axes": "checks",
    "check_size": "checks", "check_spec_claims": "checks", "say_once": "checks", "Corpus": "profile_grammar",
    "DatasetEntry": "profile_grammar", "Factor": "profile_grammar", "Part": "profile_grammar",
    "Prefer": "profile_grammar", "Profile": "profile_grammar", "Scale": "profile_grammar",
    "Sections": "profile_grammar", "WIDTHS": "profiles", "ProfileFile": "profiles", "apply_profile": "profiles",
    "auto_profile": "profiles", "check_heads": "profiles", "find_profile": "profiles", "load_profile": "profiles",
    "profile_description": "profiles", "profile_name": "profiles", "profile_text": "profiles",
    "profile_untestable": "profiles", "profiles_dir": "profiles", "read_profile": "profiles",
    "parse_set": "resolution", "resolve": "resolution", "spec_files": "resolution", "trial_name": "resolution",
    "variants_of": "resolution", "profile_schema": "schema", "spec_schema": "schema", "MAX_SEEDS": "seeds",
    "SEEDS": "seeds", "Seeds": "seeds", "seeds_axis": "seeds", "seeds_problem": "seeds", "Doc": "specfile",
    "FILE_KEYS": "specfile", "MAX_BYTES": "specfile", "MAX_EXTENDS": "specfile", "SECTIONS": "specfile",
    "SpecError": "specfile", "builtin_specs": "specfile", "deep_merge": "specfile", "load_file": "specfile",
    "load_yaml": "specfile", "read_yaml": "specfile", "spec_path": "specfile", "specs_dir": "specfile",
    "variant_names": "specfile", "Asha": "sweep_axes", "MAX_GRID": "sweep_axes", "SPACES": "sweep_axes",
    "scheduler": "sweep_axes", "sweep_size": "sweep_axes", "mistake": "validation", "spec_error": "validation",
    "validate_config": "validation", "YamlError": "yaml12",
}
# End of the door.
__all__ = list(_PART)
__getattr__, __dir__ = door(__name__, _PART)
