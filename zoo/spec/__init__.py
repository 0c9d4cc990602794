"""The spec language: YAML files -> validated, fully resolved configs, one per variant (`resolve`).

The parts, each one idea, in the order a spec is read:
1. zoo.spec.yaml12: the YAML a spec may hold (YAML 1.2 scalars, a line for every key, no aliases or tags);
2. zoo.spec.specfile: a file as read: line-numbered documents, `extends:` chains, `variants:`, built-in specs;
3. zoo.spec.profiles: the overlays that scale a paper spec to a budget;
4. zoo.spec.sweep_axes: a spec's `sweep:` block (grid and random axes, ASHA);
5. zoo.spec.checks: what a resolved spec must also be (claims name rows, corpus and components exist);
6. zoo.spec.resolution: variants x sweep points x seeds, profile and `--set` applied, validated;
7. zoo.spec.schema: JSON Schemas of spec and profile files.
The typed config they produce, `Config`, lives on the ground floor (zoo.config) and imports none of this.
This door serves the parts' public names to outsiders (`from zoo.spec import resolve, SpecError`).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# The door, written by scripts/doors.py from the parts' __all__ (tests/test_structure.py checks it).
if TYPE_CHECKING:
    from .checks import (PAPER_ROWS, check_claims, check_compare_to, check_components, check_corpus,
        check_spec_claims)
    from .profiles import (PROFILE_KEYS, SCALE_KEYS, WIDTHS, apply_profile, auto_profile, find_profile,
        profile_description, profile_name, profile_untestable, profiles_dir, read_profile)
    from .resolution import MAX_SEEDS, MAX_TRIALS, parse_set, resolve, spec_error, spec_files, trial_name
    from .schema import profile_schema, spec_schema
    from .specfile import (Doc, FILE_KEYS, MAX_BYTES, MAX_EXTENDS, SECTIONS, SpecError, builtin_specs, deep_merge,
        load_file, load_yaml, read_yaml, spec_path, specs_dir, variant_names)
    from .sweep_axes import Asha, MAX_GRID, SPACES, scheduler, sweep_size
    from .yaml12 import YamlError

_PART = {  # name -> the part that lends it
    "PAPER_ROWS": "checks", "check_claims": "checks", "check_compare_to": "checks", "check_components": "checks",
    "check_corpus": "checks", "check_spec_claims": "checks", "PROFILE_KEYS": "profiles", "SCALE_KEYS": "profiles",
    "WIDTHS": "profiles", "apply_profile": "profiles", "auto_profile": "profiles", "find_profile": "profiles",
    "profile_description": "profiles", "profile_name": "profiles", "profile_untestable": "profiles",
    "profiles_dir": "profiles", "read_profile": "profiles", "MAX_SEEDS": "resolution", "MAX_TRIALS": "resolution",
    "parse_set": "resolution", "resolve": "resolution", "spec_error": "resolution", "spec_files": "resolution",
    "trial_name": "resolution", "profile_schema": "schema", "spec_schema": "schema", "Doc": "specfile",
    "FILE_KEYS": "specfile", "MAX_BYTES": "specfile", "MAX_EXTENDS": "specfile", "SECTIONS": "specfile",
    "SpecError": "specfile", "builtin_specs": "specfile", "deep_merge": "specfile", "load_file": "specfile",
    "load_yaml": "specfile", "read_yaml": "specfile", "spec_path": "specfile", "specs_dir": "specfile",
    "variant_names": "specfile", "Asha": "sweep_axes", "MAX_GRID": "sweep_axes", "SPACES": "sweep_axes",
    "scheduler": "sweep_axes", "sweep_size": "sweep_axes", "YamlError": "yaml12",
}
# End of the door.
__all__ = list(_PART)


def __getattr__(name: str):
    """A name imports its part on first use, so importing the door imports none of them."""
    if name not in _PART:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_PART[name]}"), name)


def __dir__():
    return list(_PART)
