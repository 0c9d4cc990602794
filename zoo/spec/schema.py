"""JSON Schemas of the files a user writes: spec files and profiles (`zoo schema`).

Derived from the pydantic section models in zoo/config.py, so the schema and the validator never
disagree on a field, type, bound or description; a profile's schema is its model's (zoo.spec.profiles.Profile). A spec file gives partial sections (defaults fill
the rest), so nothing inside a section is required. An editor's YAML language server uses the
schema for completion and hover help; `zoo validate` stays the authority (it also checks what a
schema cannot: `extends` chains, corpus names against the registry, cross-field rules, line numbers).
"""
from __future__ import annotations

from pydantic.json_schema import models_json_schema

from zoo.paths import SAFE_NAME
from zoo.config import ClaimSpec, DataSpec, EvalSpec, ModelSpec, PaperRef, ResourcesSpec, TrainSpec
from zoo.model import FIELDS, component_names
from zoo.spec.profile_grammar import Profile
from zoo.spec.seeds import SEEDS
from zoo.spec.specfile import SECTIONS
from zoo.spec.sweep_axes import Asha

__all__ = ["profile_schema", "spec_schema"]  # what it lends outside its package (the door serves these)

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SECTION_MODELS = {"model": ModelSpec, "data": DataSpec, "train": TrainSpec, "eval": EvalSpec,
                  "resources": ResourcesSpec}
assert set(SECTION_MODELS) == set(SECTIONS)  # one list of sections: zoo.spec's
NAME = {"type": "string", "pattern": f"^{SAFE_NAME.pattern}$", "description": "becomes a folder name"}


def _partial(node):
    """Drop `required` everywhere: a spec file overrides some fields, defaults fill the others."""
    if isinstance(node, dict):
        return {k: _partial(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_partial(v) for v in node]
    return node


def _defs() -> dict:
    models = [*SECTION_MODELS.values(), PaperRef, Asha, ClaimSpec]
    _, top = models_json_schema([(m, "validation") for m in models], ref_template="#/$defs/{model}")
    defs = _partial(top["$defs"])
    for kind, name in FIELDS.items():  # a component's names: zoo's and those installed when `zoo schema` runs
        props = defs["ModelSpec"]["properties"]
        props[name] = dict(sorted({**props[name], "enum": component_names(kind)}.items()))
    # a claim's margin may be written as a percentage ('1.5%'), which ClaimSpec reads as 0.015
    margin = defs["ClaimSpec"]["properties"]["margin"]
    margin["anyOf"] = [*margin.get("anyOf", []), {"type": "string", "pattern": r"^\s*[0-9]*\.?[0-9]+\s*%\s*$"}]
    return defs


def _sections() -> dict:
    return {name: {"$ref": f"#/$defs/{m.__name__}"} for name, m in SECTION_MODELS.items()}


def spec_schema() -> dict:
    """Schema of a spec file (specs/*.yaml and a user's own)."""
    overrides = {"type": ["object", "null"], "additionalProperties": False,
                 "properties": {**_sections(), "description": {"type": "string"},
                                "paper": {"$ref": "#/$defs/PaperRef"}}}
    return {
        "$schema": DRAFT, "title": "zoo spec file", "type": "object", "additionalProperties": False,
        "properties": {
            "extends": {"type": "string", "pattern": r"(\.ya?ml$)|(^[A-Za-z0-9_][A-Za-z0-9_+=-]{0,63}$)",
                        "description": "a spec this one builds on: a .yaml file relative to this one or absolute, "
                                       "or a built-in spec's name (base, big, ...)"},
            "name": {**NAME, "description": "the variant's name when there is no `variants:`"},
            "description": {"type": "string"},
            "paper": {"$ref": "#/$defs/PaperRef"},
            "claims": {"type": ["array", "null"], "maxItems": 100, "items": {"$ref": "#/$defs/ClaimSpec"},
                       "description": "the spec's claims about its rows, tested as the paper's are"},
            **_sections(),
            "seeds": SEEDS,
            "sweep": {"type": "object", "additionalProperties": False, "minProperties": 1,
                      "description": "trials for every combination of the grid's values and the random draws "
                                     "(x variants x seeds)",
                      "properties": {
                        "scheduler": {"type": "object", "additionalProperties": False, "required": ["asha"],
                                      "properties": {"asha": {"$ref": "#/$defs/Asha"}},
                                      "description": "early stopping: Ray Tune's ASHA on the dev perplexity"},
                        "random": {
                          "type": "object", "required": ["samples"], "minProperties": 2,
                          "properties": {"samples": {"type": "integer", "minimum": 1, "maximum": 1000}},
                          "propertyNames": {"pattern": r"^(samples|(model|data|train|eval|resources)(\.[A-Za-z_][A-Za-z0-9_]*)+)$"},
                          "additionalProperties": {
                              "type": "object", "minProperties": 1, "maxProperties": 1,
                              "properties": {k: {"type": "array", "minItems": 1} for k in
                                             ("uniform", "loguniform", "randint", "choice")},
                              "additionalProperties": False},
                          "description": "samples: N draws; dotted spec field -> one search space"},
                        "grid": {
                          "type": "object", "minProperties": 1,
                          "propertyNames": {"pattern": r"^(model|data|train|eval|resources)(\.[A-Za-z_][A-Za-z0-9_]*)+$"},
                          "additionalProperties": {"type": "array", "minItems": 1, "uniqueItems": True,
                                                   "items": {"type": ["number", "string", "boolean", "null"]}},
                          "description": "dotted spec field -> the values to try"}}},
            "variants": {"type": "object", "minProperties": 1, "propertyNames": NAME,
                         "additionalProperties": overrides,
                         "description": "variant name -> overrides of this file's sections"},
        },
        "$defs": _defs(),
    }


def profile_schema() -> dict:
    """Schema of a profile file (specs/profiles/*.yaml): zoo.spec.profiles.Profile's, the one grammar the
    validator reads too; the spec sections it sets refer to the section models' (partial) schemas."""
    _, top = models_json_schema([(m, "validation") for m in (*SECTION_MODELS.values(), Profile)],
                                ref_template="#/$defs/{model}")
    defs = {**top["$defs"], **_defs()}  # the sections' partial (a profile sets some of their fields)
    return {"$schema": DRAFT, **defs.pop("Profile"), "$defs": defs}
