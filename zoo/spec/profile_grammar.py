"""The grammar of a profile file (specs/profiles/*.yaml): one pydantic model, `Profile`, read by the validator
(zoo.spec.profiles.load_profile) and by `zoo schema --profile-file` (zoo.spec.schema).

A new profile key is a field of `Profile`, with its type and description (a part with keys of its own: a
`Part` beside Scale); zoo.spec.profiles reads it and says what it does. A mistake is said in the profile's
words: a part's SHAPE when it is not a mapping, its KEY noun for a key it lacks ("unknown scale 'height'").
Values of spec fields (under `set:` and in a `datasets:` entry) are the spec's own grammar (zoo.config):
they are checked once laid over a spec, at the profile's line, as a spec's own would be.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema, WrapValidator, \
    field_validator, model_validator

from zoo.config import DataSpec, EvalSpec, ModelSpec, ResourcesSpec, TrainSpec
from zoo.spec.seeds import Seeds
from zoo.spec.specfile import SECTIONS, kind_of, unknown_key
from zoo.spec.validation import mistake
from zoo.text import shorten

__all__ = ["Corpus", "DatasetEntry", "Factor", "Part", "Prefer", "Profile", "Scale", "Sections"]


def _factor(value, handler):
    try:
        return handler(value)
    except ValidationError:
        raise mistake(f"must be a number in (0, 1000] (got {shorten(repr(value))})") from None


Factor = Annotated[float, Field(gt=0, le=1000, strict=True, allow_inf_nan=False), WrapValidator(_factor)]


class Part(BaseModel):
    """A part of a profile: a mapping, or a mistake said in its own words (SHAPE); its keys are KEYs."""
    KEY: ClassVar[str] = "field"
    SHAPE: ClassVar[str] = "must be a mapping"

    @model_validator(mode="before")
    @classmethod
    def _mapping(cls, value):
        if not isinstance(value, dict):
            raise mistake(cls.SHAPE)
        return value


class Scale(Part):
    """`scale:` widths, depth and steps together (h x d_k = d_model keeps holding); `heads: r` scales h."""
    KEY: ClassVar[str] = "scale"
    SHAPE: ClassVar[str] = "must be a mapping like {width: 0.5, depth: 0.5, steps: 0.01}"
    model_config = ConfigDict(extra="forbid")
    width: Factor = Field(1.0, description="d_model, d_ff, d_k and d_v times this (d_model kept even)")
    depth: Factor = Field(1.0, description="the layers N times this (at least 1)")
    steps: Factor = Field(1.0, description="train.steps and train.checkpoint_every times this")
    heads: Factor = Field(1.0, description="h times this (at least 1), d_k and d_v by width / heads: every head "
                                           "the paper's size divided by one factor")


def _fields(value):
    if value is not None and not isinstance(value, dict):
        raise mistake(f"must be a mapping of fields, not {kind_of(value)}")
    return value


def _section(model: type[BaseModel]):
    """A section as a profile sets it: some of `model`'s fields (checked once laid over a spec)."""
    ref = {"anyOf": [{"$ref": f"#/$defs/{model.__name__}"}, {"type": "null"}]}
    return Annotated[dict[Any, Any] | None, BeforeValidator(_fields), WithJsonSchema(ref)]


class Sections(Part):
    """Fields set on every spec run under the profile, by section."""
    KEY: ClassVar[str] = "section"
    SHAPE: ClassVar[str] = f"must be a mapping of sections ({', '.join(SECTIONS)})"
    model_config = ConfigDict(extra="forbid")
    model: _section(ModelSpec) = None
    data: _section(DataSpec) = None
    train: _section(TrainSpec) = None
    eval: _section(EvalSpec) = None
    resources: _section(ResourcesSpec) = None


assert tuple(Sections.model_fields) == SECTIONS  # one list of sections: zoo.spec's


def _corpus(name):
    from zoo.data import CORPORA  # no torch there
    if not isinstance(name, str) or name not in CORPORA:
        raise mistake(unknown_key("corpus", name, CORPORA) + " (see `zoo data list`)")
    return name


class _Corpora:
    """The JSON Schema of a corpus name: the registry's, read when the schema is made."""
    def __get_pydantic_json_schema__(self, core_schema, handler):
        from zoo.data import CORPORA  # no torch there
        return {"type": "string", "enum": sorted(CORPORA), "description": "a corpus of the registry (`zoo data list`)"}


# a corpus of the registry: a misspelt one would never match a spec's, or never be present (the fallback always ran)
Corpus = Annotated[Any, BeforeValidator(_corpus), _Corpora()]


def _data_fields(schema: dict, cls) -> None:
    """An entry's other keys are DataSpec's fields, laid over the spec's `data:` (and checked there)."""
    data = DataSpec.model_json_schema()["properties"]
    schema["properties"] = {**data, **schema["properties"]}
    schema["additionalProperties"] = False


class Prefer(Part):
    """Used instead of the entry's other settings when this corpus's training split is in the data directory
    (e.g. after `zoo data fetch wmt14_en_de`); never downloads."""
    SHAPE: ClassVar[str] = "must be data settings naming a corpus, e.g. {dataset: wmt14_en_de, vocab_size: 37000}"
    model_config = ConfigDict(extra="allow", json_schema_extra=_data_fields)
    dataset: Corpus
    set: Sections | None = Field(None, description="the preferred corpus's own `set:`, used instead of the fallback's")

    @model_validator(mode="before")
    @classmethod
    def _names_a_corpus(cls, value):
        if not isinstance(value, dict) or not isinstance(value.get("dataset"), str):
            raise mistake(cls.SHAPE)
        return value


class DatasetEntry(Part):
    """The data settings used instead of a spec's when the spec names this corpus."""
    SHAPE: ClassVar[str] = "must be data settings for this corpus, e.g. {dataset: multi30k, vocab_size: 8000}"
    model_config = ConfigDict(extra="allow", json_schema_extra=_data_fields)
    dataset: Corpus | None = None
    prefer: Prefer | None = None
    set: Sections | None = Field(None, description="fields set on every spec whose corpus this is (e.g. a parsing "
                                 "recipe, a budget in epochs); with `prefer:`, for the fallback corpus only")
    scale: Scale | None = Field(None, description="replaces the profile's `scale:` for this corpus (with `prefer:`, "
                                "the fallback's only): a smaller model where the corpus cannot support the paper's")


class Profile(Part):
    """A profile file (specs/profiles/*.yaml): an overlay that scales a spec to a budget."""
    KEY: ClassVar[str] = "profile key"
    SHAPE: ClassVar[str] = "must be a mapping of profile keys"
    model_config = ConfigDict(extra="forbid", title="zoo profile file")
    description: str | None = None
    extends: str | None = Field(None, description="a profile beside this one (or a .yaml file) that this one "
                                "changes: mappings merge key by key, this file wins")
    scale: Scale | None = None
    set: Sections | None = Field(None, description="fields set on every spec run under this profile")
    datasets: dict[Corpus, DatasetEntry] | None = Field(
        None, description="corpus named by a spec -> data settings used instead")
    seeds: Seeds | None = None
    untestable: str | None = Field(None, max_length=1000, description=(
        "why no claim can be tested at this budget: every claim on a row run under it is 'untestable at this "
        "budget' with this reason, never a verdict"))

    @field_validator("datasets", mode="before")
    @classmethod
    def _corpus_map(cls, value):
        if value is not None and not isinstance(value, dict):
            raise mistake("must map a corpus name to data settings, e.g. {wmt14_en_de: {dataset: multi30k}}")
        return value

    @field_validator("untestable", mode="wrap")
    @classmethod
    def _sentence(cls, value, handler):
        if value is not None and (not isinstance(value, str) or len(value) > 1000):
            raise mistake("must be a sentence (at most 1,000 characters) saying why no claim can be tested at this "
                          "budget, or empty for a profile that can test them")
        return handler(value)
