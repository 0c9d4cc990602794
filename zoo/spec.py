"""The spec language: YAML files -> validated, fully resolved configs, one per variant.

A spec file holds the sections `model`, `data`, `train`, `eval`, `resources` (field names follow the
paper), may `extends:` another file (relative to it, or absolute; chains allowed) and may list `variants:`
(name -> overrides). Resolution order, later wins:

    extends chain (root first) -> this file -> variant overrides -> profile -> --set overrides

Every user mistake raises SpecError carrying `path:line: field.path: message`. Line numbers come
from the YAML node marks, tracked through every merge so an error points at the line that set the
bad value. This module imports neither torch nor ray: `zoo validate` must start fast.
"""
from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import itertools
import json
import logging
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, ValidationError, field_validator, model_validator

from zoo import yaml12
from zoo.errors import UserError
from zoo.paths import SAFE_NAME, name_problem, shorten

# ----------------------------------------------------------------------------------------------
# The typed config. Defaults are the paper's base model (section 3, 5 and Table 3 row "base").


class _Strict(BaseModel):
    # strict: `N: true` or `N: "6"` is a mistake, not 1 or 6 (an int still fills a float field);
    # finite floats only: `lr_scale: .inf` is a mistake, not a run that diverges at step 1
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False)


# Upper bounds that keep every int a sane size for loops and SQLite (int64), far above any real run.
MAX_STEPS = 100_000_000  # the paper's longest run is 300k steps
MAX_TOKENS = 100_000_000  # tokens per step or per micro-batch (the paper: 25k)


class CrossFieldError(ValueError):
    """A rule between fields (a Config validator's): `fields` are the dotted fields that could change,
    the likeliest first; the error is reported at the one the user set last (see _blame)."""

    def __init__(self, fields: tuple[str, ...], message: str):
        super().__init__(message)
        self.fields = fields


def _safe(value: str) -> str:
    problem = name_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class ModelSpec(_Strict):
    N: int = Field(6, ge=1, le=64, description="layers in each of encoder and decoder")
    d_model: int = Field(512, ge=2, le=16384)
    d_ff: int = Field(2048, ge=1, le=65536)
    h: int = Field(8, ge=1, le=256, description="attention heads")
    d_k: int = Field(64, ge=1, le=4096, description="query/key size per head")
    d_v: int = Field(64, ge=1, le=4096, description="value size per head")
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="P_drop")
    # tensor2tensor's parsing setup also drops attention weights and the FFN's hidden units; off
    # (0) in the paper specs, which state only P_drop
    attention_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout on attention weights")
    ff_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout after the FFN's ReLU")
    positional_encoding: Literal["sinusoidal", "learned"] = "sinusoidal"
    max_len: int = Field(1024, ge=8, le=100000, description="longest position the model embeds")
    share_embeddings: bool = Field(True, description="one matrix for source, target and pre-softmax")
    # ours, not the paper's (parsing only): tells the decoder which word it is at
    word_pointer: bool = Field(False, description="parsing: add to each decoder input the encoder's state "
                               "of the word the next preterminal covers (target symbols only)")

    @model_validator(mode="after")
    def _even_for_sinusoid(self):
        if self.positional_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"d_model must be even for sinusoidal positions (got {self.d_model})")
        return self


class DataSpec(_Strict):
    dataset: str = Field("wmt14_en_de", description="corpus name from `zoo data list`")
    vocab_size: int = Field(37000, ge=16, le=1_000_000, description="shared source/target BPE size")
    max_len: int = Field(256, ge=4, le=100000, description="drop training pairs longer than this (word-pieces)")
    max_train_pairs: int | None = Field(None, ge=1, le=10**12, description="use only the first K pairs")
    target_vocab: Literal["shared", "symbols"] = Field(
        "shared", description="shared: one BPE for both sides (translation, the paper); symbols: the "
        "tree side has its own whole-symbol vocabulary and vocab_size is the source-only BPE (parsing)")

    @field_validator("dataset")
    @classmethod
    def _dataset_is_a_name(cls, v):  # it names cache folders (checked against the registry in resolve)
        return _safe(v)


class OptimizerSpec(_Strict):
    name: Literal["adam"] = "adam"
    betas: tuple[StrictFloat, StrictFloat] = Field((0.9, 0.98), strict=False)  # a YAML list is fine
    eps: float = Field(1e-9, gt=0, le=1)

    @model_validator(mode="after")
    def _betas_range(self):
        if not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas must lie in [0, 1) (got {list(self.betas)})")
        return self


class ScheduleSpec(_Strict):
    # lr = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)   (eq. 3)
    name: Literal["noam"] = "noam"
    warmup_steps: int = Field(4000, ge=1, le=MAX_STEPS)
    lr_scale: float = Field(1.0, gt=0, le=1000, description="multiplies the paper's formula (1.0 = paper)")


class TrainSpec(_Strict):
    steps: int = Field(100_000, ge=1, le=MAX_STEPS)
    batch_tokens: int = Field(25_000, ge=1, le=MAX_TOKENS, description="source and target tokens per optimizer step")
    max_tokens_per_device: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="memory cap per micro-batch; gradient accumulation is derived from it")
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0, description="eps_ls")
    optimizer: OptimizerSpec = OptimizerSpec()
    schedule: ScheduleSpec = ScheduleSpec()
    checkpoint_every: int = Field(1000, ge=1, le=MAX_STEPS, description="steps between checkpoints")
    keep_checkpoints: int = Field(5, ge=1, le=1000, description="keep the last k checkpoints")
    eval_every: int = Field(1000, ge=1, le=MAX_STEPS, description="steps between dev-perplexity evaluations")
    log_every: int = Field(10, ge=1, le=MAX_STEPS, description="steps between training-metric reports")
    time_limit_minutes: float | None = Field(
        None, gt=0, le=10**7, description="stop early after this wall time (the run records the steps done)")
    seed: int = Field(1, ge=0, le=2**32 - 1)
    precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto", description="training's matmuls: bf16 autocast (weights, Adam and the loss stay fp32) or fp32; "
        "auto: bf16 on a GPU, fp32 on a CPU; bf16 on a CPU needs its bf16 instructions (AVX512-BF16 or AMX), "
        "else training runs in fp32 and says so")
    compile: Literal["off", "on"] = Field(
        "off", description="torch.compile the model (dynamic shapes: one graph for every batch shape); "
        "the same arithmetic, so it is not part of the config hash")


class EvalSpec(_Strict):
    split: str = Field("dev", max_length=64, description="dev (Table 3) or test (Table 2)")
    beam_size: int = Field(4, ge=1, le=256)
    length_penalty: float = Field(0.6, ge=0.0, le=100, description="GNMT alpha")
    max_len_offset: int = Field(50, ge=0, le=100000, description="max output length = input length + offset")
    average_checkpoints: int = Field(0, ge=0, le=1000, description="average the last k checkpoints (0 = off)")
    max_sentences: int | None = Field(None, ge=1, le=10**9, description="score only the first K sentences")
    metric: Literal["bleu", "f1"] = "bleu"
    extra_splits: list[str] = Field(default_factory=list, max_length=16, description="also score these splits (e.g. test)")
    min_len: int = Field(1, ge=0, le=100000, description="no eos before this many output tokens (1: never an "
                         "empty output for a non-empty source, as fairseq; an under-trained model's p(eos|bos) "
                         "is tiny, but at alpha 0.6 the empty hypothesis can outscore real ones)")
    min_len_per_word: float = Field(0.0, ge=0.0, le=100, description="no eos before this many tokens per source word")
    tree_constraint: bool = Field(False, description="parsing: beam search only emits well-formed trees, "
                                  "one preterminal per word (needs data.target_vocab: symbols)")

    @field_validator("split")
    @classmethod
    def _split_is_a_name(cls, v):  # it names the hyps.<split>.txt file
        return _safe(v)

    @field_validator("extra_splits")
    @classmethod
    def _splits_are_names(cls, v):
        return [_safe(x) for x in v]


class ResourcesSpec(_Strict):
    gpus: float = Field(0, ge=0, le=1024, description=(
        "GPUs per worker: 1, or a share of one (0.25: four trials on one GPU); several GPUs are several workers"))
    cpus: float = Field(1, gt=0, le=4096, description="CPUs per worker")
    workers: int = Field(1, ge=1, le=4096, description="data-parallel workers per trial")
    max_retries: int = Field(0, ge=0, le=100, description="re-runs of a failed trial")
    allow_cpu_fallback: bool = Field(False, description=(
        "train on the CPU when gpus > 0 but torch sees no CUDA device (else the trial stops before training)"))

    @model_validator(mode="after")
    def _one_device_per_worker(self):
        # zoo.train drives one device per process: more GPUs are more workers, and a share of a GPU
        # cannot be split across processes that all-reduce every step
        if self.gpus > 1:
            raise ValueError(f"gpus is per worker and at most 1 (got {self.gpus:g}); for {self.gpus:g} GPUs "
                             f"set workers: {math.ceil(self.gpus)} and gpus: 1")
        if 0 < self.gpus < 1 and self.workers > 1:
            raise ValueError(f"a share of a GPU (gpus: {self.gpus:g}) is for one-worker trials; with workers: "
                             f"{self.workers} set gpus: 1 (a whole GPU per worker)")
        return self


class PaperRef(_Strict):
    table: int | None = Field(None, ge=2, le=4)
    group: str | None = Field(None, max_length=200)
    row: str | None = Field(None, max_length=200)


class Config(_Strict):
    """One fully resolved variant: what a trial trains."""
    variant: str
    trial: str = Field("", description="the trial's unique name: the variant, plus -seedN on a seeds axis")
    spec: str = ""
    profile: str = "paper"
    profile_description: str = Field("", max_length=10_000, description="what the profile meant when this ran")
    overrides: dict[str, Any] = Field(default_factory=dict, description=(
        "what this trial changes from its spec: the variant's fields as the spec writes them (before a "
        "profile scales them) and the seed, as dotted names (a label: not hashed)"))
    description: str = Field("", max_length=10_000)
    paper: PaperRef = PaperRef()
    model: ModelSpec = ModelSpec()
    data: DataSpec = DataSpec()
    train: TrainSpec = TrainSpec()
    eval: EvalSpec = EvalSpec()
    resources: ResourcesSpec = ResourcesSpec()

    @model_validator(mode="before")
    @classmethod
    def _trial_defaults_to_variant(cls, data):
        if isinstance(data, dict) and not data.get("trial"):
            data = {**data, "trial": data.get("variant")}
        return data

    @field_validator("variant", "trial", "profile")
    @classmethod
    def _path_safe(cls, v):  # STORAGE/<spec stem>/<trial>-<profile>/ is a folder
        return _safe(v)

    @model_validator(mode="after")
    def _averaging_needs_checkpoints(self):
        if self.eval.average_checkpoints > self.train.keep_checkpoints:
            raise CrossFieldError(("eval.average_checkpoints", "train.keep_checkpoints"),
                                  f"averaging the last {self.eval.average_checkpoints} checkpoints needs "
                                  f"train.keep_checkpoints >= {self.eval.average_checkpoints} (got "
                                  f"{self.train.keep_checkpoints}); lower eval.average_checkpoints or raise "
                                  "train.keep_checkpoints")
        return self

    @model_validator(mode="after")
    def _constraint_needs_symbols(self):
        if self.eval.tree_constraint and self.data.target_vocab != "symbols":
            raise CrossFieldError(("eval.tree_constraint", "data.target_vocab"),
                                  "eval.tree_constraint needs data.target_vocab: symbols (the search must "
                                  "know which token opens, closes or stands for a word)")
        return self

    @model_validator(mode="after")
    def _pointer_needs_symbols(self):
        if self.model.word_pointer and self.data.target_vocab != "symbols":
            raise CrossFieldError(("model.word_pointer", "data.target_vocab"),
                                  "model.word_pointer needs data.target_vocab: symbols (it counts the "
                                  "preterminals of a tree target to know which word comes next)")
        return self

    @model_validator(mode="after")
    def _positions_hold_the_data(self):
        need = self.data.max_len + 2  # a training sentence of data.max_len word-pieces plus bos/eos
        if self.model.max_len < need:
            raise CrossFieldError(("model.max_len", "data.max_len"),
                                  f"model.max_len ({self.model.max_len}) must be at least data.max_len + 2 "
                                  f"= {need}: the model embeds one position per token, and training "
                                  f"sentences of up to {self.data.max_len} word-pieces get bos and eos; raise "
                                  "model.max_len or lower data.max_len")
        return self

    @model_validator(mode="after")
    def _min_len_reachable(self):
        # an output holds at most min(source length + max_len_offset, model.max_len) tokens, eos included:
        # min_len tokens and then eos must fit in model.max_len, or no output of any source can end
        e = self.eval
        if e.min_len >= self.model.max_len:
            raise CrossFieldError(("eval.min_len", "model.max_len"),
                                  f"eval.min_len ({e.min_len}) can never be reached: no output holds more than "
                                  f"model.max_len = {self.model.max_len} tokens, eos included; use min_len <= "
                                  f"{self.model.max_len - 1}")
        return self

    def config_hash(self) -> str:
        """Hash of everything that changes the result (not where it runs, not its labels)."""
        body = self.model_dump(mode="json", include={"model", "data", "train", "eval"},
                               exclude={"train": {"compile"}})  # how it runs, like resources
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


SECTIONS = ("model", "data", "train", "eval", "resources")
FILE_KEYS = {"extends", "name", "description", "paper", "variants", "seeds", "sweep", *SECTIONS}
PROFILE_KEYS = {"description", "scale", "set", "datasets", "seeds"}
NULL_IS_EMPTY = (*SECTIONS, "paper", "sweep", "seeds", "variants", "description")  # `model:` with nothing under it
MAX_SEEDS = 100
MAX_GRID = 1000  # points one sweep may make (grid x random samples, before variants and seeds)
# Trials one spec may make (variants x sweep points x seeds), checked by arithmetic before any is built.
# Every trial is resolved and validated before anything runs (about 1 ms each) and becomes a row in
# Ray Tune's driver and in the store; the paper's Tables 2-4 hold 41 rows, so 2000 is every row x 10
# seeds x a few sweep points. A larger study is several specs (each its own Tune experiment).
MAX_TRIALS = 2000
SCALE_KEYS = {"width", "depth", "steps"}
WIDTHS = {"d_model": True, "d_ff": False, "d_k": False, "d_v": False}  # what `scale.width` scales; True: kept even


# ----------------------------------------------------------------------------------------------
# Errors


class SpecError(UserError):
    """A user mistake in a spec, profile or override. str() is the one-paragraph message."""

    def __init__(self, where: str, field: str, message: str):
        field = shorten(field, 120)
        self.where, self.field, self.message = where, field, message
        super().__init__(f"{where}: {field + ': ' if field else ''}{message}")


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"{hint} Allowed: {', '.join(sorted(choices))}"


# ----------------------------------------------------------------------------------------------
# YAML with line numbers. `Doc` is the data plus, for every key path, the "file:line" that set it.


class Doc:
    def __init__(self, data: dict, locs: dict[tuple, str], origin: str):
        self.data, self.locs, self.origin = data, locs, origin

    def where(self, path: tuple) -> str:
        # the most specific known location along the path, else the file itself
        for i in range(len(path), 0, -1):
            if path[:i] in self.locs:
                return self.locs[path[:i]]
        return self.origin


# What a spec may hold. YAML can do much more, and each extra is a way for a shared spec to hurt
# whoever validates it: aliases expand without bound ("billion laughs"), merge keys hide where a
# value came from, tags can name Python objects. Specs never need them (`extends:` and variants are
# the spec language's own reuse), so they are refused rather than limited.
MAX_BYTES = 1_000_000  # a spec is a few KB
MAX_EXTENDS = 16  # links in one extends chain


def _read_text(path: Path) -> str:
    """The file's text: a regular file of at most MAX_BYTES, UTF-8 (a BOM is fine)."""
    where = f"{path}"
    try:
        mode = os.stat(path).st_mode  # before opening: opening a pipe would wait for a writer
        if stat.S_ISDIR(mode):
            raise IsADirectoryError
        if not stat.S_ISREG(mode):
            raise SpecError(f"{where}:1", "", "is not a regular file (a device, pipe or socket); expected a .yaml file")
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(where, "", "file not found") from None
    except IsADirectoryError:
        raise SpecError(where, "", "is a directory, expected a .yaml file") from None
    except OSError as e:  # permission denied, a symlink loop, a name too long, ...
        raise SpecError(f"{where}:1", "", f"cannot read the file: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise SpecError(f"{where}:1", "", f"the file is larger than {MAX_BYTES // 1000} KB; a spec is a few KB of YAML")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SpecError(f"{path}:{line}", "", f"not valid UTF-8 (byte 0x{raw[e.start]:02x}); save the file as UTF-8") from None


def load_yaml(text: str, where: str, locs: dict | None = None):
    """(data, line of its top-level node) of one YAML document under the spec rules (zoo.yaml12),
    filling `locs` (key path -> "where:line"); SpecError at `where:line` for anything refused."""
    lines: dict[tuple, int] = {}
    try:
        data, line = yaml12.load(text, lines)
    except yaml12.YamlError as e:
        raise SpecError(f"{where}:{e.line}", e.field, e.message) from None
    if locs is not None:
        locs.update({p: f"{where}:{n}" for p, n in lines.items()})
    return data, line


def read_yaml(path: Path) -> Doc:
    """Parse one spec or profile file (see zoo.yaml12 for what YAML it may hold)."""
    locs: dict[tuple, str] = {}
    data, line = load_yaml(_read_text(path), str(path), locs)
    if data is None:
        raise SpecError(f"{path}:1", "", "file is empty; a spec needs at least one of "
                        f"{', '.join(SECTIONS)} or `extends:`")
    if not isinstance(data, dict):
        raise SpecError(f"{path}:{line}", "",
                        f"the top level must be a mapping of sections, not {_kind(data)}")
    return Doc(data, locs, f"{path}:1")


def deep_merge(base: Doc, over: dict, over_locs: dict, origin: str | None = None) -> Doc:
    """Return base with `over` merged in (mappings merge key by key, anything else replaces)."""
    data, locs = copy.deepcopy(base.data), dict(base.locs)

    def merge(dst: dict, src: dict, prefix: tuple):
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v, prefix + (k,))
            else:
                dst[k] = copy.deepcopy(v)
                for p in [p for p in locs if p[: len(prefix) + 1] == prefix + (k,)]:
                    del locs[p]  # the old value's sub-locations no longer apply
            if prefix + (k,) in over_locs:
                locs[prefix + (k,)] = over_locs[prefix + (k,)]
        for p, loc in over_locs.items():
            locs.setdefault(p, loc)

    merge(data, over, ())
    return Doc(data, locs, origin or base.origin)


# ----------------------------------------------------------------------------------------------
# Spec files: extends chains and variants


def _check_mapping(doc: Doc, key: str, value) -> None:
    if not isinstance(value, dict):
        raise SpecError(doc.where((key,)), key, f"must be a mapping of fields, not {_kind(value)}")


def _kind(value) -> str:
    return {list: "a list", type(None): "null", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}")


def _unknown(what: str, key, allowed) -> str:
    odd = "" if str(key).isascii() else " (it holds non-ASCII characters: a look-alike letter?)"
    return f"unknown {what} '{shorten(key)}'{odd}{_did_you_mean(str(key), allowed)}"


def load_file(path: Path, _stack: tuple = ()) -> Doc:
    """One spec file with its `extends:` chain merged in. Its variants are its own `variants:` (or the
    one variant its `name:` or file name makes); a file with neither inherits the variants of the
    spec it extends, so `extends: table3_A` plus a changed recipe runs A1-A4 under that recipe.

    `extends:` names another spec file, relative to this file's folder or absolute (a spec shared
    from a group folder), or a built-in spec by name (`extends: base`). It only ever reads, and what it reads must itself be a valid spec, so an
    absolute path gives a spec author no more reach than the user running zoo already has; it must
    be a regular .yaml/.yml file, and a chain holds at most MAX_EXTENDS files and no cycle."""
    path = Path(path)
    key = Path(os.path.realpath(path))  # realpath: never raises, even on a symlink loop
    if key in _stack:
        chain = " -> ".join(str(p) for p in (*_stack, key))
        raise SpecError(f"{path}:1", "extends", f"cycle in extends: {chain}")
    doc = read_yaml(path)
    for k in [k for k in NULL_IS_EMPTY if k in doc.data and doc.data[k] is None]:
        del doc.data[k]  # a section whose lines are all commented out: as if absent
    for k in doc.data:
        if k not in FILE_KEYS:
            raise SpecError(doc.where((str(k),)), shorten(k), _unknown("top-level key", k, FILE_KEYS))
    for k in SECTIONS:
        if k in doc.data:
            _check_mapping(doc, k, doc.data[k])
    parent = doc.data.get("extends")
    own = {k: v for k, v in doc.data.items() if k not in ("extends", "variants", "name")}
    own_locs = {p: l for p, l in doc.locs.items() if p[0] not in ("extends", "variants", "name")}
    base = None
    if parent is None:
        merged = Doc(own, own_locs, doc.origin)
    else:
        where = doc.where(("extends",))
        if not isinstance(parent, str) or not parent.strip():
            raise SpecError(where, "extends", f"must be the path of a .yaml spec file, relative to this "
                            f"file or absolute (got {_kind(parent)})")
        ppath = key.parent / parent
        if not ppath.exists() and SAFE_NAME.fullmatch(parent) and (specs_dir() / f"{parent}.yaml").is_file():
            ppath = specs_dir() / f"{parent}.yaml"  # `extends: base`: the built-in spec of that name
        if len(_stack) >= MAX_EXTENDS:
            raise SpecError(where, "extends", f"the extends chain is longer than {MAX_EXTENDS} files")
        if ppath.is_dir():
            raise SpecError(where, "extends", f"'{shorten(parent)}' is a directory ({ppath}); name a .yaml spec file in it")
        if not ppath.exists():
            why = "is a broken symlink or a symlink loop" if ppath.is_symlink() else "not found"
            raise SpecError(where, "extends", f"file '{shorten(parent)}' {why} (looked for {ppath})")
        if ppath.suffix not in (".yaml", ".yml") or not ppath.is_file():
            raise SpecError(where, "extends", f"'{shorten(parent)}' is not a .yaml or .yml spec file")
        base = load_file(ppath, _stack + (key,))
        merged = deep_merge(base, own, own_locs, doc.origin)
    merged.raw = doc  # the file itself
    # variants are inherited through extends unless this file names its own (`variants:` or `name:`)
    inherit = base is not None and not {"variants", "name"} & set(doc.data) and "variants" in base.variants_from.data
    merged.variants_from = base.variants_from if inherit else doc
    return merged


def variant_names(path: Path) -> list[str]:
    doc = load_file(path)
    return list(_variants(doc, path))


def _variants(doc: Doc, path: Path) -> dict[str, dict]:
    raw = doc.variants_from
    vs = raw.data.get("variants")
    if vs is None:
        name = raw.data.get("name", Path(path).stem)
        problem = name_problem(name)
        if problem:
            where = raw.where(("name",)) if "name" in raw.data else f"{path}:1"
            raise SpecError(where, "name" if "name" in raw.data else "spec",
                            f"the variant name {problem}" + ("" if "name" in raw.data else
                            "; rename the file or give the variant a `name:`"))
        return {name: {}}
    if not isinstance(vs, dict) or not vs:
        raise SpecError(raw.where(("variants",)), "variants", "must be a non-empty mapping of name -> overrides")
    out = {}
    for name, over in vs.items():
        where, field = raw.where(("variants", str(name))), f"variants.{shorten(name)}"
        problem = name_problem(name)
        if problem:
            raise SpecError(where, field, f"the variant name {problem}")
        over = {} if over is None else over
        if not isinstance(over, dict):
            raise SpecError(where, field, f"overrides must be a mapping of sections, not {_kind(over)}")
        for k in over:
            if k not in SECTIONS and k not in ("description", "paper"):
                raise SpecError(raw.where(("variants", name, str(k))), f"{field}.{shorten(k)}",
                                _unknown("section", k, set(SECTIONS) | {"description", "paper"}))
            if k in SECTIONS and not isinstance(over[k], dict):
                raise SpecError(raw.where(("variants", name, k)), f"{field}.{k}",
                                f"must be a mapping of fields, not {_kind(over[k])}")
        out[name] = over
    return out


# ----------------------------------------------------------------------------------------------
# Profiles: overlays that scale a paper spec to a budget


def specs_dir() -> Path:
    """The built-in specs: zoo/specs in an installed package, the repository's specs/ in a checkout."""
    here = Path(__file__).resolve().parent
    return here / "specs" if (here / "specs" / "base.yaml").is_file() else here.parent / "specs"


def builtin_specs() -> list[str]:
    return sorted(p.stem for p in specs_dir().glob("*.yaml"))


def spec_path(arg: str | Path) -> Path:
    """A spec argument as a file: a path as given, or a built-in spec's name (`table3_A`, `big`)."""
    p = Path(arg)
    if p.exists() or p.suffix in (".yaml", ".yml") or len(p.parts) != 1:
        return p
    if SAFE_NAME.fullmatch(str(arg)) and (specs_dir() / f"{arg}.yaml").is_file():
        return specs_dir() / f"{arg}.yaml"
    raise SpecError(str(arg), "", f"no spec file '{shorten(arg)}' here and no built-in spec of that name"
                    f"{_did_you_mean(str(arg), builtin_specs())}; built-in: {', '.join(builtin_specs())}")


def profiles_dir() -> Path:
    return specs_dir() / "profiles"


def profile_name(name: str | None) -> str:
    """The name a profile gives runs (a folder-name part): `cpu`, or a profile file's stem."""
    if name in ("paper", "", None):
        return "paper"
    return Path(name).stem if name.endswith((".yaml", ".yml")) else name


def find_profile(name: str, spec_path: Path | None = None) -> Path | None:
    if name in ("paper", "", None):
        return None
    problem = name_problem(profile_name(name))
    if problem:
        what = "the profile file's name (without .yaml)" if name.endswith((".yaml", ".yml")) else "the profile name"
        raise SpecError("--profile", "", f"{what} {problem}")
    if name.endswith((".yaml", ".yml")):
        return Path(name)
    dirs = []
    if spec_path is not None:
        dirs += [p / "profiles" for p in Path(spec_path).resolve().parents][:3]
    dirs.append(profiles_dir())
    for d in dirs:
        if (d / f"{name}.yaml").exists():
            return d / f"{name}.yaml"
    known = sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.yaml")} | {"paper"})
    raise SpecError("--profile", "", f"unknown profile '{name}'{_did_you_mean(name, known)}")


def auto_profile(profile: str, gpus: float | None = None) -> str:
    """`auto`: the gpu profile where there are GPUs, else cpu. `gpus`: what a cluster offers; None =
    this machine's own (torch is imported only then). Any other name is returned as it is."""
    if profile != "auto":
        return profile
    if gpus is None:
        import torch
        gpus = torch.cuda.device_count()
    return "gpu" if gpus else "cpu"


def apply_profile(doc: Doc, profile_path: Path | None, data_dir: str | Path | None = None,
                  notes: list[str] | None = None) -> Doc:
    """The profile overlaid on a spec. A `datasets:` entry's `prefer:` settings replace the others when
    their corpus's training split is present in `data_dir` (default $ZOO_DATA_DIR); the choice is
    appended to `notes` (the run's profile description records it)."""
    if profile_path is None:
        return doc
    prof = read_yaml(profile_path)
    for k in prof.data:
        if k not in PROFILE_KEYS:
            raise SpecError(prof.where((str(k),)), shorten(k), _unknown("profile key", k, PROFILE_KEYS))
    scale = prof.data.get("scale") or {}
    if not isinstance(scale, dict):
        raise SpecError(prof.where(("scale",)), "scale", "must be a mapping like {width: 0.5, depth: 0.5, steps: 0.01}")
    for k, v in scale.items():
        if k not in SCALE_KEYS:
            raise SpecError(prof.where(("scale", str(k))), f"scale.{shorten(k)}", _unknown("scale", k, SCALE_KEYS))
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v <= 1000:  # NaN fails too
            raise SpecError(prof.where(("scale", k)), f"scale.{k}", f"must be a number in (0, 1000] (got {shorten(repr(v))})")
    data = copy.deepcopy(doc.data)
    m, t = data.setdefault("model", {}), data.setdefault("train", {})
    m, t = (x if isinstance(x, dict) else {} for x in (m, t))  # not a mapping: validation says so
    base_m, base_t = ModelSpec(), TrainSpec()
    w, d, s = scale.get("width", 1), scale.get("depth", 1), scale.get("steps", 1)

    def sc(value, f, even=False):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_STEPS:
            return value  # not a valid size: left for validation to report where it was set
        x = max(1, round(value * f))
        return x + (x % 2) if even else x

    # Widths scale together so h*d_k = d_model keeps holding where the paper kept it (rows A, C4, C5);
    # h stays, so each row's head count is still the paper's.
    for k, even in WIDTHS.items():
        if w != 1:
            m[k] = sc(m.get(k, getattr(base_m, k)), w, even)
    if d != 1:
        m["N"] = sc(m.get("N", base_m.N), d)
    if s != 1:  # the checkpoint cadence keeps its share of the run, so averaging the last k spans the
        # same late part of training as in the paper (10-minute checkpoints of a 12-hour or 3.5-day run)
        t["steps"] = sc(t.get("steps", base_t.steps), s)
        t["checkpoint_every"] = sc(t.get("checkpoint_every", base_t.checkpoint_every), s)
    out = Doc(data, doc.locs, doc.origin)
    sets = prof.data.get("set") or {}
    if not isinstance(sets, dict):
        raise SpecError(prof.where(("set",)), "set", "must be a mapping of sections")
    set_locs = {p[1:]: loc for p, loc in prof.locs.items() if p[0] == "set" and len(p) > 1}
    for k in sets:
        if k not in SECTIONS:
            raise SpecError(prof.where(("set", str(k))), f"set.{shorten(k)}", _unknown("section", k, SECTIONS))
        if not isinstance(sets[k], dict):
            raise SpecError(prof.where(("set", k)), f"set.{k}", f"must be a mapping of fields, not {_kind(sets[k])}")
    out = deep_merge(out, sets, set_locs)
    # `datasets:` maps the spec's corpus to the one this budget uses, with its data settings
    # (e.g. wmt14_en_de -> multi30k), so a translation profile never rewrites a parsing spec.
    maps = prof.data.get("datasets") or {}
    if not isinstance(maps, dict) or not all(isinstance(v, dict) for v in maps.values()):
        raise SpecError(prof.where(("datasets",)), "datasets",
                        "must map a corpus name to data settings, e.g. {wmt14_en_de: {dataset: multi30k}}")
    data_sec = out.data.get("data")
    name = data_sec.get("dataset", DataSpec().dataset) if isinstance(data_sec, dict) else None
    if isinstance(name, str) and name in maps:
        # an entry's optional `set:` overrides other sections for that corpus only (a parsing recipe, a
        # budget in epochs); with `prefer:`, the preferred corpus may carry its own `set:` instead
        entry = dict(maps[name])
        m_locs = {("data",) + p[2:]: loc for p, loc in prof.locs.items()
                  if p[:2] == ("datasets", name) and len(p) > 2 and p[2] != "set"}
        set_at = ("datasets", name, "set")
        if "prefer" in entry:
            preferred = isinstance(entry["prefer"], dict) and "set" in entry["prefer"]
            entry = _prefer(prof, name, entry, m_locs, data_dir, notes)
            if preferred and entry.get("dataset") == maps[name]["prefer"].get("dataset"):
                set_at = ("datasets", name, "prefer", "set")
            for p in [p for p in m_locs if len(p) > 1 and p[1] == "set"]:
                del m_locs[p]
        extra = entry.pop("set", None) or {}
        if not isinstance(extra, dict) or not set(extra) <= set(SECTIONS):
            raise SpecError(prof.where(set_at), ".".join(set_at),
                            f"must be a mapping of sections ({', '.join(SECTIONS)})")
        out = deep_merge(out, {"data": entry}, m_locs)
        s_locs = {p[len(set_at):]: loc for p, loc in prof.locs.items() if p[:len(set_at)] == set_at and len(p) > len(set_at)}
        out = deep_merge(out, extra, s_locs)
    return _keep_checkpoint_share(out, t, base_t)


def _keep_checkpoint_share(doc: Doc, before: dict, base_t: "TrainSpec") -> Doc:
    """A profile that sets `train.steps` outright (one budget for every row) and not the checkpoint
    cadence: the cadence keeps its share of the run, as `scale.steps` does, so the averaged window
    stays the paper's late part of training (base: last 5 of 10-minute checkpoints in 12 hours)."""
    t = doc.data.get("train")
    if not isinstance(t, dict):
        return doc
    old_steps, old_every = before.get("steps", base_t.steps), before.get("checkpoint_every", base_t.checkpoint_every)
    new_steps, new_every = t.get("steps", base_t.steps), t.get("checkpoint_every", base_t.checkpoint_every)
    ints = all(isinstance(x, int) and not isinstance(x, bool) and x >= 1
               for x in (old_steps, old_every, new_steps, new_every))
    if ints and new_steps != old_steps and new_every == old_every:  # cadence untouched by the profile
        t["checkpoint_every"] = max(1, round(old_every * new_steps / old_steps))
    return doc


def _prefer(prof: Doc, name: str, entry: dict, m_locs: dict, data_dir, notes: list[str] | None) -> dict:
    """`datasets: {X: {prefer: {dataset: P, ...}, dataset: F, ...}}`: P's settings when P's training
    split is in the data directory (`zoo data fetch P` put it there), else F's. Never downloads."""
    from zoo.data import data_dir as resolve_dir, split_present  # zoo.data imports no torch
    pref = entry.pop("prefer")
    if not isinstance(pref, dict) or not isinstance(pref.get("dataset"), str):
        raise SpecError(prof.where(("datasets", name, "prefer")), f"datasets.{shorten(name)}.prefer",
                        "must be data settings naming a corpus, e.g. {dataset: wmt14_en_de, vocab_size: 37000}")
    root = resolve_dir(data_dir)
    if split_present(pref["dataset"], "train", root):
        pref = dict(pref)
        own_set = pref.pop("set", None)  # the preferred corpus's own recipe replaces the fallback's `set:`
        chosen, why = {**{k: v for k, v in entry.items() if k != "set"}, **pref}, f"its training data is present in {root}"
        if own_set is not None:
            chosen["set"] = own_set
        m_locs.update({("data",) + p[3:]: loc for p, loc in prof.locs.items()
                       if p[:3] == ("datasets", name, "prefer") and len(p) > 3})
    else:
        chosen = entry
        why = (f"{pref['dataset']}'s training data is not in {root}; `zoo data fetch {pref['dataset']}` "
               f"builds it there")
    if notes is not None:
        notes.append(f"Training data: {chosen.get('dataset', name)} ({why}).")
    return chosen


def profile_description(name: str, spec_path: Path | None = None) -> str:
    return f"{profile_name(name)}: {_description(find_profile(name, spec_path))}"


def _description(profile_path: Path | None) -> str:
    if profile_path is None:
        return "the spec exactly as written"
    return str(read_yaml(profile_path).data.get("description") or "").strip()[:10_000]


# ----------------------------------------------------------------------------------------------
# --set a.b=v overrides


def parse_set(items: list[str] | None) -> tuple[dict, dict]:
    data: dict = {}
    locs: dict = {}
    for item in items or []:
        if "=" not in item:
            raise SpecError(f"--set {item}", "", "expected field.path=value, e.g. --set model.dropout=0.2")
        key, val = item.split("=", 1)
        parts = tuple(p for p in key.strip().split("."))
        if not all(parts) or parts[0] not in SECTIONS:
            raise SpecError(f"--set {item}", key, f"must start with a section{_did_you_mean(parts[0], SECTIONS)}")
        if any(p.isdigit() for p in parts):
            head = ".".join(parts[: next(i for i, p in enumerate(parts) if p.isdigit())])
            raise SpecError(f"--set {item}", key, f"a list is set whole, not by index: --set '{head}=[...]' "
                            "(e.g. --set 'train.optimizer.betas=[0.9, 0.98]')")
        try:  # the spec rules hold here too: no aliases, tags or deep nesting
            value = load_yaml(val, f"--set {shorten(item)}")[0] if val.strip() else ""
        except SpecError as e:
            if "YAML syntax error" not in e.message:
                raise
            value = val  # not YAML: the plain string
        d = data
        for p in parts[:-1]:
            d = d.setdefault(p, {})
            if not isinstance(d, dict):
                raise SpecError(f"--set {item}", key, f"another --set gave '{p}' a value, so it has no fields")
        d[parts[-1]] = value
        locs[parts] = f"--set {item}"
    return data, locs


# ----------------------------------------------------------------------------------------------
# Resolution and validation


def _blame(doc: Doc, fields: tuple[str, ...]) -> str:
    """Of the fields a cross-field rule involves, the one the user set last: a `--set`, then the spec
    file itself, then a profile or an extended file; the rule's first field when none was set."""
    origin = doc.origin.rsplit(":", 1)[0]

    def rank(f: str) -> int:
        loc = doc.locs.get(tuple(f.split(".")))
        return 0 if loc is None else 3 if loc.startswith("--set") else 2 if loc.rsplit(":", 1)[0] == origin else 1
    return max(fields, key=rank)  # max keeps the first of equals


def _drop_nulls(body: dict, model=None) -> dict:
    """A section (or sub-section) whose lines are all commented out is YAML null: read it as empty."""
    model = model or Config
    out = {}
    for k, v in body.items():
        sub = model.model_fields[k].annotation if k in model.model_fields else None
        nested = isinstance(sub, type) and issubclass(sub, BaseModel)
        if v is None and nested:
            continue
        out[k] = _drop_nulls(v, sub) if nested and isinstance(v, dict) else v
    return out


def _validate(doc: Doc, header: dict) -> Config:
    body = {**header, **{k: doc.data[k] for k in (*SECTIONS, "paper", "description") if k in doc.data}}
    try:
        return Config.model_validate(_drop_nulls(body))
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(str(x) for x in err["loc"])
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, CrossFieldError):
            loc = tuple(_blame(doc, cause.fields).split("."))
        field = ".".join(loc)
        if err["type"] == "extra_forbidden":
            model = Config
            for part in loc[:-1]:
                model = model.model_fields[part].annotation if part in model.model_fields else model
            allowed = getattr(model, "model_fields", {}).keys()
            msg = _unknown("field", loc[-1], allowed)
        else:
            msg = err["msg"].removeprefix("Value error, ")
            if "input" in err and not isinstance(err["input"], dict) and "is not a safe name" not in msg \
                    and not isinstance(cause, CrossFieldError):
                msg += f" (got {shorten(repr(err['input']), 80)})"
                if isinstance(err["input"], str) and not err["input"].isascii():
                    msg += " (it holds non-ASCII characters: a look-alike letter?)"
                elif isinstance(err["input"], str) and err["type"] in ("bool_type", "bool_parsing") \
                        and err["input"].lower() in ("yes", "no", "on", "off", "y", "n"):
                    msg += "; specs read YAML 1.2, where only true and false are booleans"
        # point at the field, or its nearest parent, where the data set it
        where = doc.where(tuple(p for p in loc))
        if header.get("trial") and header["trial"] != header.get("variant"):  # one combination of a grid
            msg += f" (in the trial {header['trial']})"
        raise SpecError(where, field, msg) from None


def _seeds(doc: Doc, prof_path: Path | None, cli: list[int] | None) -> list[int] | None:
    """The seeds axis: `--seeds` > the profile's `seeds:` > the spec's (inherited through extends)."""
    if cli is not None:
        where, value = "--seeds", cli
    else:
        prof = read_yaml(prof_path) if prof_path else None
        src = prof if prof is not None and "seeds" in prof.data else doc if "seeds" in doc.data else None
        if src is None:
            return None
        where, value = src.where(("seeds",)), src.data["seeds"]
    ok = (isinstance(value, list) and 1 <= len(value) <= MAX_SEEDS and len(set(map(str, value))) == len(value)
          and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**32 for x in value))
    if not ok:
        raise SpecError(where, "seeds", f"must be a list of 1 to {MAX_SEEDS} different integers in [0, 2^32), "
                        f"e.g. [1, 2, 3] (got {shorten(repr(value))})")
    return value


SPACES = {"uniform": 2, "loguniform": 2, "randint": 2, "choice": None}  # as Ray Tune's search spaces


def _grid(doc: Doc) -> list[tuple[str, dict, dict]]:
    """The points of `sweep:`, per point (a path-safe name suffix, the nested overrides, their
    locations for errors): every combination of `grid:` x `random:`'s `samples` draws; one empty
    point without a sweep. Random draws are a function of the `random:` block, so a rerun makes the
    same trials (and skips the finished ones)."""
    sw = doc.data.get("sweep")
    if sw is None:
        return [("", {}, {})]
    if not isinstance(sw, dict) or not set(map(str, sw)) & {"grid", "random"} \
            or not set(map(str, sw)) <= {"grid", "random", "scheduler"}:
        other = next((k for k in sw if k not in ("grid", "random", "scheduler")), None) if isinstance(sw, dict) else None
        raise SpecError(doc.where(("sweep",) + ((other,) if other is not None else ())),
                        f"sweep.{shorten(other)}" if other is not None else "sweep", "takes `grid:` (every "
                        "combination of dotted spec fields, e.g. {grid: {model.h: [1, 4, 16]}}) and `random:` "
                        "(samples: N and a search space per field), and optionally `scheduler: {asha: {...}}`")
    n = sweep_size(doc)  # by arithmetic, before any point is built
    if n > MAX_GRID:
        raise SpecError(doc.where(("sweep",)), "sweep", f"makes {n:,} combinations (grid x random samples); "
                        f"at most {MAX_GRID}: sweep fewer values, or split the study into several specs")
    axes: list[tuple[list, list]] = []  # per axis: (its points as (suffix, {dotted: value})), ...)
    if "grid" in sw:
        axes.append(_grid_points(doc, sw["grid"]))
    if "random" in sw:
        axes.append(_random_points(doc, sw["random"]))
    out = []
    for i, combo in enumerate(itertools.product(*axes)):
        suffix = "-".join(x for x, _ in combo if x)
        values = {k: v for _, d in combo for k, v in d.items()}
        nested, locs = {}, {}
        for k, v in values.items():
            *head, last = k.split(".")
            node = nested
            for h in head:
                node = node.setdefault(h, {})
            node[last] = v
            for sec in ("grid", "random"):
                if (loc := doc.locs.get(("sweep", sec, k))) is not None:
                    locs[tuple(k.split("."))] = loc
        if name_problem(f"x-{suffix}"):  # a value a folder name cannot carry: number the point instead
            suffix = f"g{i + 1}"
        out.append((suffix, nested, locs))
    return out


def sweep_size(doc: Doc) -> int:
    """How many points `sweep:` makes (1 without one), from the lengths alone. A malformed sweep counts
    as 1 here: _grid reports it."""
    sw = doc.data.get("sweep")
    if not isinstance(sw, dict):
        return 1
    n = 1
    grid, rnd = sw.get("grid"), sw.get("random")
    if isinstance(grid, dict):
        for vals in grid.values():
            n *= len(vals) if isinstance(vals, list) and vals else 1
    if isinstance(rnd, dict) and isinstance(rnd.get("samples"), int) and not isinstance(rnd["samples"], bool):
        n *= max(rnd["samples"], 1)
    return n


class Asha(_Strict):
    """`sweep.scheduler.asha`: Ray Tune's ASHA stops trials whose metric trails the others' at the
    same step (rungs at grace_steps x reduction_factor^k, up to the longest trial's steps)."""
    metric: Literal["dev_ppl"] = "dev_ppl"
    mode: Literal["min"] = "min"
    grace_steps: int = Field(..., ge=1, le=MAX_STEPS, description="steps every trial runs before it may be stopped")
    reduction_factor: int = Field(2, ge=2, le=100)


def scheduler(path: str | Path) -> Asha | None:
    """The spec's early-stopping scheduler (`sweep: {scheduler: {asha: {...}}}`), or None."""
    return _asha(load_file(spec_path(path)))


def _asha(doc: Doc) -> Asha | None:
    sw = doc.data.get("sweep")
    sch = sw.get("scheduler") if isinstance(sw, dict) else None
    if sch is None:
        return None
    where = doc.where(("sweep", "scheduler"))
    if not isinstance(sch, dict) or set(map(str, sch)) != {"asha"} or not isinstance(sch["asha"], dict):
        raise SpecError(where, "sweep.scheduler", "takes {asha: {grace_steps: N, metric: dev_ppl, mode: min, "
                        "reduction_factor: 2}}")
    try:
        return Asha.model_validate(sch["asha"])
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise SpecError(doc.where(("sweep", "scheduler", "asha") + tuple(map(str, err["loc"]))),
                        f"sweep.scheduler.asha.{field}", err["msg"]) from None


SCALED = {*(("model", k) for k in WIDTHS), ("model", "N"), ("train", "steps"),
          ("train", "checkpoint_every")}  # what a profile's `scale:` changes (apply_profile)


def _split_scaled(point: dict) -> tuple[dict, dict]:
    """A sweep point's nested overrides: (the fields a profile scales, the rest)."""
    sized, exact = {}, {}
    for sec, fields in point.items():
        for k, v in fields.items():
            (sized if (sec, k) in SCALED else exact).setdefault(sec, {})[k] = v
    return sized, exact


def _field_key(doc: Doc, sec: str, k) -> str:
    parts = str(k).split(".")
    if len(parts) < 2 or parts[0] not in SECTIONS or not all(parts):
        raise SpecError(doc.where(("sweep", sec, k)), f"sweep.{sec}.{shorten(k)}", f"keys are dotted spec fields, "
                        f"a section ({', '.join(SECTIONS)}) and a field, e.g. model.h or train.schedule.lr_scale")
    return str(k)


def _grid_points(doc: Doc, grid) -> list[tuple[str, dict]]:
    if not isinstance(grid, dict) or not grid:
        raise SpecError(doc.where(("sweep", "grid")), "sweep.grid", "must map dotted spec fields to lists of values, "
                        "e.g. {model.h: [1, 4, 16], model.dropout: [0.0, 0.1]}")
    keys = []
    for k, vals in grid.items():
        keys.append(_field_key(doc, "grid", k))
        if not isinstance(vals, list) or not vals or any(isinstance(v, (dict, list)) for v in vals) \
                or len({repr(v) for v in vals}) != len(vals):
            raise SpecError(doc.where(("sweep", "grid", k)), f"sweep.grid.{shorten(k)}",
                            f"must be a non-empty list of different plain values (got {shorten(repr(vals))})")
    return [("-".join(f"{k.split('.')[-1]}={v}" for k, v in zip(keys, combo)), dict(zip(keys, combo)))
            for combo in itertools.product(*grid.values())]


def _random_points(doc: Doc, rnd) -> list[tuple[str, dict]]:
    """`samples` different points drawn from the search spaces: a draw that repeats an earlier point
    is drawn again (a repeat would be the same trial twice), and a space with fewer points than
    `samples` is an error (a grid is the way to take all of them)."""
    import numpy as np
    where = doc.where(("sweep", "random"))
    if not isinstance(rnd, dict) or len(rnd) < 2 or "samples" not in rnd:
        raise SpecError(where, "sweep.random", f"needs `samples: N` (1 to {MAX_GRID}) and at least one field with "
                        "a search space, e.g. {samples: 8, train.schedule.lr_scale: {loguniform: [0.25, 4.0]}}")
    n = rnd["samples"]
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_GRID:
        raise SpecError(doc.where(("sweep", "random", "samples")), "sweep.random.samples",
                        f"must be a whole number from 1 to {MAX_GRID} (got {shorten(repr(n))})")
    spaces, size = {}, 1  # size: the number of distinct points, when every space is discrete
    for k, sp in rnd.items():
        if k == "samples":
            continue
        key = _field_key(doc, "random", k)
        kind = next(iter(sp)) if isinstance(sp, dict) and len(sp) == 1 else None
        args = sp[kind] if kind else None
        number = (int,) if kind == "randint" else (int, float)
        ok = kind in SPACES and isinstance(args, list) and args and (
            SPACES[kind] is None and all(not isinstance(a, (dict, list)) for a in args)
            or SPACES[kind] == len(args) and all(isinstance(a, number) and not isinstance(a, bool) for a in args)
            and args[0] < args[1] and (kind != "loguniform" or args[0] > 0))
        if not ok:
            hint = " (randint takes whole-number bounds)" if kind == "randint" else ""
            raise SpecError(doc.where(("sweep", "random", k)), f"sweep.random.{shorten(k)}", "must be one search "
                            "space: {uniform: [lo, hi]}, {loguniform: [lo, hi]} (lo > 0), {randint: [lo, hi]} "
                            f"(whole numbers, hi excluded) or {{choice: [a, b, ...]}}{hint} (got {shorten(repr(sp))})")
        if kind == "choice" and len({repr(a) for a in args}) != len(args):
            raise SpecError(doc.where(("sweep", "random", k)), f"sweep.random.{shorten(k)}",
                            f"choice lists a value twice (got {shorten(repr(args))}); each value once")
        spaces[key] = (kind, args)
        size = size * (len(args) if kind == "choice" else args[1] - args[0] if kind == "randint" else math.inf)
    if n > size:
        raise SpecError(doc.where(("sweep", "random", "samples")), "sweep.random.samples",
                        f"{n} draws from a space of only {size} different points would repeat trials; "
                        f"use samples: {size} or fewer, or a `grid:` to run every point")
    seed = int(hashlib.sha256(json.dumps(rnd, sort_keys=True, default=str).encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    for _ in range(100 * n):  # enough for any space with >= n points (a repeat is drawn again)
        d = {}
        for key, (kind, (*args,)) in spaces.items():
            if kind == "uniform":
                d[key] = float(f"{rng.uniform(args[0], args[1]):.4g}")
            elif kind == "loguniform":
                d[key] = float(f"{math.exp(rng.uniform(math.log(args[0]), math.log(args[1]))):.4g}")
            elif kind == "randint":
                d[key] = int(rng.integers(args[0], args[1]))
            else:
                d[key] = args[int(rng.integers(len(args)))]
        point = json.dumps(d, sort_keys=True, default=str)
        if point not in seen:
            seen.add(point)
            out.append((f"r{len(out) + 1}-" + "-".join(f"{k.split('.')[-1]}={v}" for k, v in d.items()), d))
            if len(out) == n:
                return out
    raise SpecError(doc.where(("sweep", "random", "samples")), "sweep.random.samples",
                    f"only {len(out)} different points found in {100 * n} draws (values are rounded to 4 "
                    "significant digits); widen the ranges or lower samples")


def resolve(path: str | Path, variant: str | None = None, profile: str = "paper",
            sets: list[str] | None = None, seeds: list[int] | None = None,
            data_dir: str | Path | None = None) -> list[Config]:
    """All trials of a spec file or built-in spec name (or of one `variant`), resolved and validated:
    one per variant, or, with a seeds axis (`seeds:` in the spec or profile, or `seeds`), one per
    variant and seed, named VARIANT-seedN."""
    path = spec_path(path)
    doc = load_file(path)
    problem = name_problem(path.stem)
    if problem:  # STORAGE/<spec stem>/... is a folder
        raise SpecError(f"{path}:1", "spec", f"the file name {problem}; rename the file")
    variants = _variants(doc, path)
    if variant is not None and variant not in variants:
        raise SpecError(f"{path}", "--variant", f"no variant '{shorten(variant)}'{_did_you_mean(variant, variants)}")
    prof_path = find_profile(profile, path)
    set_data, set_locs = parse_set(sets)
    axis = _seeds(doc, prof_path, seeds)
    _check_size(doc, 1 if variant is not None else len(variants), sweep_size(doc), len(axis or [None]))
    _check_seed_axes(doc, axis, seeds)
    grid = _grid(doc)
    asha = _asha(doc)  # validated with the rest (the runner reads it with `scheduler`)
    prof_text = _description(prof_path)
    out = []
    for (name, over), (suffix, point, plocs) in itertools.product(variants.items(), grid):
        if variant is not None and name != variant:
            continue
        vlocs = {p[2:]: l for p, l in doc.variants_from.locs.items() if p[:2] == ("variants", name) and len(p) > 2}
        # variant x sweep point: the sizes a profile scales (widths, layers, steps) go in before it, so it
        # scales them as it scales the spec's own; every other swept value is what the trial runs with
        sized, exact = _split_scaled(point)
        d = deep_merge(deep_merge(doc, over, vlocs), sized, plocs)
        stem = trial_name(name, suffix)
        over = {**_dotted(over), **_dotted(point)}
        if prof_path is not None:  # the spec as written must be valid too, not only what a profile leaves of it
            _validate(d, {"variant": name, "trial": stem, "spec": str(path)})
        notes: list[str] = []
        d = apply_profile(d, prof_path, data_dir, notes)
        d = deep_merge(d, exact, plocs)
        d = deep_merge(d, set_data, set_locs)
        if notes:  # which corpus a profile's `prefer:` picked: said once, and kept with each run
            _say(" ".join(notes))
        paper = d.data.get("paper")
        if isinstance(paper, dict) and paper.get("table") and "row" not in paper:
            d.data["paper"] = {**paper, "row": name}
        for seed in axis or [None]:
            ds = d if seed is None else deep_merge(d, {"train": {"seed": seed}}, {})
            header = {"variant": name, "trial": trial_name(name, suffix, seed),
                      "overrides": over | ({} if seed is None else {"train.seed": seed}),
                      "spec": str(path), "profile": profile_name(profile),
                      "profile_description": " ".join([prof_text, *notes]).strip()}
            cfg = _validate(ds, header)
            _check_corpus(ds, cfg)
            out.append(cfg)
    if asha is not None and out and asha.grace_steps >= max(c.train.steps for c in out):
        steps = max(c.train.steps for c in out)
        raise SpecError(doc.where(("sweep", "scheduler", "asha", "grace_steps")), "sweep.scheduler.asha.grace_steps",
                        f"{asha.grace_steps} is not below the trials' {steps} steps (profile {profile_name(profile)}), "
                        f"so ASHA would never stop a trial; set it below {steps} (e.g. {max(1, steps // 8)}) or "
                        "remove the scheduler")
    return out


def trial_name(variant: str, suffix: str = "", seed: int | None = None) -> str:
    """A trial's name: the variant, its sweep point and seed (`A1-h=4-seed2`). zoo's own business, so a
    name too long for a folder is shortened with a hash of the whole rather than refused: the user's
    valid 64-character variant name stays valid on a seeds axis."""
    tail = "" if seed is None else f"-seed{seed}"
    full = "-".join(x for x in (variant, suffix) if x) + tail
    if name_problem(full) is None:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[: 64 - len(tail) - 9].rstrip('-.')}-{digest}{tail}"


def _check_size(doc: Doc, variants: int, points: int, seeds: int) -> None:
    """Refuse a spec that makes more than MAX_TRIALS trials, from the counts alone (nothing built)."""
    n = variants * points * seeds
    if n <= MAX_TRIALS:
        return
    raw = doc.variants_from
    key = next((k for k in ("sweep", "seeds", "variants") if k in doc.data or k in raw.data), "variants")
    where = doc.where((key,)) if key in doc.data else raw.where((key,))
    raise SpecError(where, key, f"makes {n:,} trials ({variants} variants x {points} sweep points x {seeds} "
                    f"seeds); at most {MAX_TRIALS:,} per spec: split the study into several specs, or sweep "
                    "fewer values")


def _check_seed_axes(doc: Doc, axis: list[int] | None, cli: list[int] | None) -> None:
    """`train.seed` swept in `sweep:` and a seeds axis as well: the axis would overwrite every swept seed."""
    sw = doc.data.get("sweep")
    if axis is None or not isinstance(sw, dict):
        return
    for sec in ("grid", "random"):
        if isinstance(sw.get(sec), dict) and "train.seed" in sw[sec]:
            other = "--seeds" if cli is not None else "`seeds:`"
            raise SpecError(doc.where(("sweep", sec, "train.seed")), f"sweep.{sec}.train.seed",
                            f"the seed is swept here and also by {other}, which would overwrite every "
                            "swept value; keep one of the two")


def _dotted(d: dict, prefix: str = "") -> dict:
    """{"model": {"h": 1}} -> {"model.h": 1}."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out |= _dotted(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v
    return out


@functools.lru_cache(maxsize=None)
def _say(note: str) -> None:
    logging.getLogger(__name__).warning("profile: %s", note)


def _check_corpus(doc: Doc, cfg: Config) -> None:
    """The corpus and splits exist in the registry (zoo.data: no torch there), so a typo fails here,
    not when the run starts."""
    from zoo.data import CORPORA
    name = cfg.data.dataset
    if name not in CORPORA:
        raise SpecError(doc.where(("data", "dataset")), "data.dataset",
                        _unknown("corpus", name, CORPORA) + " (see `zoo data list`)")
    if CORPORA[name].tgt != "tree":  # parsing-only options on a translation corpus would fail or mislead later
        for field, value, set_ in (("data.target_vocab", cfg.data.target_vocab, "symbols"), ("eval.metric", cfg.eval.metric, "f1"),
                                   ("eval.tree_constraint", cfg.eval.tree_constraint, True),
                                   ("model.word_pointer", cfg.model.word_pointer, True)):
            if value == set_:
                raise SpecError(doc.where(tuple(field.split("."))), field,
                                f"{shorten(repr(value))} is for parsing (a corpus of trees, such as wsj_sample), but "
                                f"{name} is a translation corpus ({CORPORA[name].src}-{CORPORA[name].tgt}); remove it "
                                "or choose a parsing corpus")
    splits = CORPORA[name].split_choices()
    for field, split in [("split", cfg.eval.split)] + [("extra_splits", x) for x in cfg.eval.extra_splits]:
        if split not in splits:
            raise SpecError(doc.where(("eval", field)), f"eval.{field}",
                            f"corpus {name} has no split '{split}'{_did_you_mean(split, splits)}")


def spec_files(paths: list[str | Path]) -> list[Path]:
    """Expand folders into their spec files (profiles excluded: they are overlays, not specs)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.y*ml") if "profiles" not in f.relative_to(p).parts)
        else:
            try:
                files.append(spec_path(p))
            except SpecError:
                files.append(p)  # validate reports it as a missing file
    return files
