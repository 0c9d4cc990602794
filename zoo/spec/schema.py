"""JSON Schemas of the files a user writes: spec files and profiles (`zoo schema`).

Derived from the pydantic section models in zoo/config.py, so the schema and the validator never
disagree on a field, type, bound or description. A spec file gives partial sections (defaults fill
the rest), so nothing inside a section is required. An editor's YAML language server uses the
schema for completion and hover help; `zoo validate` stays the authority (it also checks what a
schema cannot: `extends` chains, corpus names against the registry, cross-field rules, line numbers).
"""
from __future__ import annotations

from pydantic.json_schema import models_json_schema

from zoo.paths import SAFE_NAME
from zoo.config import ClaimSpec, DataSpec, EvalSpec, ModelSpec, PaperRef, ResourcesSpec, TrainSpec
from zoo.model import FIELDS, component_names
from zoo.spec.profiles import SCALE_KEYS
from zoo.spec.resolution import MAX_SEEDS
from zoo.spec.specfile import SECTIONS
from zoo.spec.sweep_axes import Asha

__all__ = ["profile_schema", "spec_schema"]  # what it lends outside its package (the door serves these)

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SECTION_MODELS = {"model": ModelSpec, "data": DataSpec, "train": TrainSpec, "eval": EvalSpec,
                  "resources": ResourcesSpec}
assert set(SECTION_MODELS) == set(SECTIONS)  # one list of sections: zoo.spec's
NAME = {"type": "string", "pattern": f"^{SAFE_NAME.pattern}$", "description": "becomes a folder name"}
SEEDS = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}, "minItems": 1,
         "maxItems": MAX_SEEDS, "uniqueItems": True,
         "description": "run every variant once per seed, as trials named VARIANT-seedN"}


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
    """Schema of a profile file (specs/profiles/*.yaml): an overlay that scales a spec to a budget."""
    sections = {"type": "object", "additionalProperties": False, "properties": _sections()}
    factor = {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}
    scale = {"type": "object", "additionalProperties": False, "properties": {k: factor for k in sorted(SCALE_KEYS)}}
    return {
        "$schema": DRAFT, "title": "zoo profile file", "type": "object", "additionalProperties": False,
        "properties": {
            "description": {"type": "string"},
            "extends": {"type": "string", "description": "a profile beside this one (or a .yaml file) that this "
                        "one changes: mappings merge key by key, this file wins"},
            "scale": scale,
            "set": {**sections, "description": "fields set on every spec run under this profile"},
            "seeds": SEEDS,
            "untestable": {"type": ["string", "null"], "maxLength": 1000,
                           "description": "why no claim can be tested at this budget: every claim on a row run "
                                          "under it is 'untestable at this budget' with this reason, never a verdict"},
            "datasets": {"type": "object", "propertyNames": _corpus(), "additionalProperties": _dataset_entry(sections, scale),
                         "description": "corpus named by a spec -> data settings used instead"},
        },
        "$defs": _defs(),
    }


def _corpus() -> dict:
    """A corpus name: one of the registry's (zoo.data.CORPORA, as `zoo validate` checks a profile)."""
    from zoo.data import CORPORA  # no torch there
    return {"type": "string", "enum": sorted(CORPORA), "description": "a corpus of the registry (`zoo data list`)"}


def _dataset_entry(sections: dict, scale: dict) -> dict:
    """DataSpec's fields, plus `prefer`: settings used instead when their corpus's training data is present,
    `set`: other sections' fields set for this corpus only (parsing's own recipe), and `scale`: the profile's
    scale replaced for this corpus (a model it supports)."""
    data = _defs()["DataSpec"]
    data = {**data, "properties": {**data["properties"], "dataset": {**_corpus(), **data["properties"]["dataset"], "enum": _corpus()["enum"]}}}
    only = {**sections, "description": "fields set on every spec whose corpus this is (e.g. a parsing recipe, a "
            "budget in epochs); with `prefer:`, for the fallback corpus only"}
    prefer = {**data, "properties": {**data["properties"], "set": {
                  **only, "description": "the preferred corpus's own `set:`, used instead of the fallback's"}},
              "required": ["dataset"],
              "description": "used instead of the other settings when this corpus's training split is in the "
                             "data directory (e.g. after `zoo data fetch wmt14_en_de`)"}
    own = {**scale, "description": "replaces the profile's `scale:` for this corpus (with `prefer:`, the fallback's "
           "only): a smaller model where the corpus cannot support the paper's"}
    return {**data, "properties": {**data["properties"], "prefer": prefer, "set": only, "scale": own}}
