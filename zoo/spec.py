"""The spec language: YAML files -> validated, fully resolved configs, one per variant.

A spec file holds the sections `model`, `data`, `train`, `eval`, `resources` (field names follow the
paper), may `extends:` another file (relative path, chains allowed) and may list `variants:`
(name -> overrides). Resolution order, later wins:

    extends chain (root first) -> this file -> variant overrides -> profile -> --set overrides

Every user mistake raises SpecError carrying `path:line: field.path: message`. Line numbers come
from the YAML node marks, tracked through every merge so an error points at the line that set the
bad value. This module imports neither torch nor ray: `zoo validate` must start fast.
"""
from __future__ import annotations

import copy
import difflib
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from zoo.errors import UserError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# ----------------------------------------------------------------------------------------------
# The typed config. Defaults are the paper's base model (section 3, 5 and Table 3 row "base").


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


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

    @model_validator(mode="after")
    def _even_for_sinusoid(self):
        if self.positional_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"d_model must be even for sinusoidal positions (got {self.d_model})")
        return self


class DataSpec(_Strict):
    dataset: str = Field("wmt14_en_de", description="corpus name from `zoo data list`")
    vocab_size: int = Field(37000, ge=16, le=1_000_000, description="shared source/target BPE size")
    max_len: int = Field(256, ge=4, description="drop training pairs longer than this (word-pieces)")
    max_train_pairs: int | None = Field(None, ge=1, description="use only the first K pairs")
    target_vocab: Literal["shared", "symbols"] = Field(
        "shared", description="shared: one BPE for both sides (translation, the paper); symbols: the "
        "tree side has its own whole-symbol vocabulary and vocab_size is the source-only BPE (parsing)")


class OptimizerSpec(_Strict):
    name: Literal["adam"] = "adam"
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = Field(1e-9, gt=0)

    @model_validator(mode="after")
    def _betas_range(self):
        if not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas must lie in [0, 1) (got {list(self.betas)})")
        return self


class ScheduleSpec(_Strict):
    # lr = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)   (eq. 3)
    name: Literal["noam"] = "noam"
    warmup_steps: int = Field(4000, ge=1)
    lr_scale: float = Field(1.0, gt=0, description="multiplies the paper's formula (1.0 = paper)")


class TrainSpec(_Strict):
    steps: int = Field(100_000, ge=1)
    batch_tokens: int = Field(25_000, ge=1, description="source and target tokens per optimizer step")
    max_tokens_per_device: int | None = Field(
        None, ge=1, description="memory cap per micro-batch; gradient accumulation is derived from it")
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0, description="eps_ls")
    optimizer: OptimizerSpec = OptimizerSpec()
    schedule: ScheduleSpec = ScheduleSpec()
    checkpoint_every: int = Field(1000, ge=1, description="steps between checkpoints")
    keep_checkpoints: int = Field(5, ge=1, description="keep the last k checkpoints")
    eval_every: int = Field(1000, ge=1, description="steps between dev-perplexity evaluations")
    log_every: int = Field(10, ge=1, description="steps between training-metric reports")
    time_limit_minutes: float | None = Field(
        None, gt=0, description="stop early after this wall time (the run records the steps done)")
    seed: int = 1


class EvalSpec(_Strict):
    split: str = Field("dev", description="dev (Table 3) or test (Table 2)")
    beam_size: int = Field(4, ge=1, le=256)
    length_penalty: float = Field(0.6, ge=0.0, description="GNMT alpha")
    max_len_offset: int = Field(50, ge=0, description="max output length = input length + offset")
    average_checkpoints: int = Field(0, ge=0, description="average the last k checkpoints (0 = off)")
    max_sentences: int | None = Field(None, ge=1, description="score only the first K sentences")
    metric: Literal["bleu", "f1"] = "bleu"
    extra_splits: list[str] = Field(default_factory=list, description="also score these splits (e.g. test)")
    min_len_per_word: float = Field(0.0, ge=0.0, description="no eos before this many tokens per source word")
    tree_constraint: bool = Field(False, description="parsing: beam search only emits well-formed trees, "
                                  "one preterminal per word (needs data.target_vocab: symbols)")


class ResourcesSpec(_Strict):
    gpus: float = Field(0, ge=0, description="GPUs per worker")
    cpus: float = Field(1, gt=0, description="CPUs per worker")
    workers: int = Field(1, ge=1, description="data-parallel workers per trial")
    max_retries: int = Field(0, ge=0, description="re-runs of a failed trial")


class PaperRef(_Strict):
    table: int | None = Field(None, ge=2, le=4)
    group: str | None = None
    row: str | None = None


class Config(_Strict):
    """One fully resolved variant: what a trial trains."""
    variant: str
    spec: str = ""
    profile: str = "paper"
    description: str = ""
    paper: PaperRef = PaperRef()
    model: ModelSpec = ModelSpec()
    data: DataSpec = DataSpec()
    train: TrainSpec = TrainSpec()
    eval: EvalSpec = EvalSpec()
    resources: ResourcesSpec = ResourcesSpec()

    @model_validator(mode="after")
    def _averaging_needs_checkpoints(self):
        if self.eval.average_checkpoints > self.train.keep_checkpoints:
            raise ValueError(f"eval.average_checkpoints ({self.eval.average_checkpoints}) needs "
                             f"train.keep_checkpoints >= it (got {self.train.keep_checkpoints})")
        return self

    @model_validator(mode="after")
    def _constraint_needs_symbols(self):
        if self.eval.tree_constraint and self.data.target_vocab != "symbols":
            raise ValueError("eval.tree_constraint needs data.target_vocab: symbols (the search must "
                             "know which token opens, closes or stands for a word)")
        return self

    def config_hash(self) -> str:
        """Hash of everything that changes the result (not where it runs, not its labels)."""
        body = self.model_dump(mode="json", include={"model", "data", "train", "eval"})
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


SECTIONS = ("model", "data", "train", "eval", "resources")
FILE_KEYS = {"extends", "name", "description", "paper", "variants", *SECTIONS}
PROFILE_KEYS = {"description", "scale", "set", "datasets"}
SCALE_KEYS = {"width", "depth", "steps"}


# ----------------------------------------------------------------------------------------------
# Errors


class SpecError(UserError):
    """A user mistake in a spec, profile or override. str() is the one-paragraph message."""

    def __init__(self, where: str, field: str, message: str):
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


def read_yaml(path: Path) -> Doc:
    """Parse one YAML file, rejecting what PyYAML lets through silently (duplicate keys)."""
    where = f"{path}"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecError(where, "", "file not found") from None
    except IsADirectoryError:
        raise SpecError(where, "", "is a directory, expected a .yaml file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SpecError(f"{path}:{line}", "", f"not valid UTF-8 (byte 0x{raw[e.start]:02x}); save the file as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise SpecError(f"{path}:{line}", "", f"YAML syntax error: {problem}") from None
    if node is None:
        raise SpecError(f"{path}:1", "", "file is empty; a spec needs at least one of "
                        f"{', '.join(SECTIONS)} or `extends:`")
    if not isinstance(node, yaml.MappingNode):
        raise SpecError(f"{path}:{node.start_mark.line + 1}", "",
                        f"the top level must be a mapping of sections, not a {_node_kind(node)}")
    locs: dict[tuple, str] = {}
    _walk(node, (), path, locs)
    data = yaml.SafeLoader(text).get_single_data()
    return Doc(data, locs, f"{path}:1")


def _node_kind(node) -> str:
    return {yaml.SequenceNode: "list", yaml.MappingNode: "mapping"}.get(type(node), "scalar")


def _walk(node, prefix: tuple, path: Path, locs: dict):
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for k, v in node.value:
            key, line = k.value, k.start_mark.line + 1
            if key in seen:
                field = ".".join(map(str, prefix + (key,)))
                raise SpecError(f"{path}:{line}", field,
                                f"duplicate key '{key}' (first set on line {seen[key]}); "
                                "YAML would silently keep only the last one")
            seen[key] = line
            locs[prefix + (key,)] = f"{path}:{line}"
            _walk(v, prefix + (key,), path, locs)


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
        kind = "list" if isinstance(value, list) else type(value).__name__
        raise SpecError(doc.where((key,)), key, f"must be a mapping of fields, not a {kind}")


def load_file(path: Path, _stack: tuple = ()) -> Doc:
    """One spec file with its `extends:` chain merged in (variants are not inherited)."""
    path = Path(path).resolve() if _stack else Path(path)
    key = Path(path).resolve()
    if key in _stack:
        chain = " -> ".join(str(p) for p in (*_stack, key))
        raise SpecError(f"{path}:1", "extends", f"cycle in extends: {chain}")
    doc = read_yaml(path)
    for k in doc.data:
        if k not in FILE_KEYS:
            raise SpecError(doc.where((k,)), str(k), f"unknown top-level key '{k}'{_did_you_mean(str(k), FILE_KEYS)}")
    for k in SECTIONS:
        if k in doc.data:
            _check_mapping(doc, k, doc.data[k])
    parent = doc.data.get("extends")
    own = {k: v for k, v in doc.data.items() if k not in ("extends", "variants", "name")}
    own_locs = {p: l for p, l in doc.locs.items() if p[0] not in ("extends", "variants", "name")}
    if parent is None:
        merged = Doc(own, own_locs, doc.origin)
    else:
        if not isinstance(parent, str):
            raise SpecError(doc.where(("extends",)), "extends", "must be a file path (relative to this file)")
        ppath = (key.parent / parent)
        if not ppath.exists():
            raise SpecError(doc.where(("extends",)), "extends", f"file '{parent}' not found (looked for {ppath})")
        base = load_file(ppath, _stack + (key,))
        merged = deep_merge(base, own, own_locs, doc.origin)
    merged.raw = doc  # the file itself, for variants and name
    return merged


def variant_names(path: Path) -> list[str]:
    doc = load_file(path)
    return list(_variants(doc, path))


def _variants(doc: Doc, path: Path) -> dict[str, dict]:
    raw = doc.raw
    vs = raw.data.get("variants")
    if vs is None:
        name = raw.data.get("name") or Path(path).stem
        return {str(name): {}}
    if not isinstance(vs, dict) or not vs:
        raise SpecError(raw.where(("variants",)), "variants", "must be a non-empty mapping of name -> overrides")
    for name, over in vs.items():
        if over is None:
            vs[name] = {}
        elif not isinstance(over, dict):
            raise SpecError(raw.where(("variants", name)), f"variants.{name}", "overrides must be a mapping of sections")
        for k in vs[name]:
            if k not in SECTIONS and k not in ("description", "paper"):
                raise SpecError(raw.where(("variants", name, k)), f"variants.{name}.{k}",
                                f"unknown section '{k}'{_did_you_mean(str(k), set(SECTIONS) | {'description', 'paper'})}")
    return {str(k): v for k, v in vs.items()}


# ----------------------------------------------------------------------------------------------
# Profiles: overlays that scale a paper spec to a budget


def profiles_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "specs" / "profiles"


def find_profile(name: str, spec_path: Path | None = None) -> Path | None:
    if name in ("paper", "", None):
        return None
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


def apply_profile(doc: Doc, profile_path: Path | None) -> Doc:
    if profile_path is None:
        return doc
    prof = read_yaml(profile_path)
    for k in prof.data:
        if k not in PROFILE_KEYS:
            raise SpecError(prof.where((k,)), str(k), f"unknown profile key '{k}'{_did_you_mean(str(k), PROFILE_KEYS)}")
    scale = prof.data.get("scale") or {}
    if not isinstance(scale, dict):
        raise SpecError(prof.where(("scale",)), "scale", "must be a mapping like {width: 0.5, depth: 0.5, steps: 0.01}")
    for k, v in scale.items():
        if k not in SCALE_KEYS:
            raise SpecError(prof.where(("scale", k)), f"scale.{k}", f"unknown scale '{k}'{_did_you_mean(str(k), SCALE_KEYS)}")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
            raise SpecError(prof.where(("scale", k)), f"scale.{k}", f"must be a positive number (got {v!r})")
    data = copy.deepcopy(doc.data)
    m, t = data.setdefault("model", {}), data.setdefault("train", {})
    base_m, base_t = ModelSpec(), TrainSpec()
    w, d, s = scale.get("width", 1), scale.get("depth", 1), scale.get("steps", 1)

    def sc(value, f, even=False):
        x = max(1, round(value * f))
        return x + (x % 2) if even else x

    # Widths scale together so h*d_k = d_model keeps holding where the paper kept it (rows A, C4, C5);
    # h stays, so each row's head count is still the paper's.
    for k, even in (("d_model", True), ("d_ff", False), ("d_k", False), ("d_v", False)):
        if w != 1:
            m[k] = sc(m.get(k, getattr(base_m, k)), w, even)
    if d != 1:
        m["N"] = sc(m.get("N", base_m.N), d)
    if s != 1:
        t["steps"] = sc(t.get("steps", base_t.steps), s)
    out = Doc(data, doc.locs, doc.origin)
    sets = prof.data.get("set") or {}
    if not isinstance(sets, dict):
        raise SpecError(prof.where(("set",)), "set", "must be a mapping of sections")
    set_locs = {p[1:]: loc for p, loc in prof.locs.items() if p[0] == "set" and len(p) > 1}
    for k in sets:
        if k not in SECTIONS:
            raise SpecError(prof.where(("set", k)), f"set.{k}", f"unknown section '{k}'{_did_you_mean(str(k), SECTIONS)}")
    out = deep_merge(out, sets, set_locs)
    # `datasets:` maps the spec's corpus to the one this budget uses, with its data settings
    # (e.g. wmt14_en_de -> multi30k), so a translation profile never rewrites a parsing spec.
    maps = prof.data.get("datasets") or {}
    if not isinstance(maps, dict) or not all(isinstance(v, dict) for v in maps.values()):
        raise SpecError(prof.where(("datasets",)), "datasets",
                        "must map a corpus name to data settings, e.g. {wmt14_en_de: {dataset: multi30k}}")
    name = (out.data.get("data") or {}).get("dataset", DataSpec().dataset)
    if name in maps:
        # an entry's optional `set:` overrides other sections for that corpus only (a parsing recipe)
        entry = dict(maps[name])
        extra = entry.pop("set", None) or {}
        if not isinstance(extra, dict) or not set(extra) <= set(SECTIONS):
            raise SpecError(prof.where(("datasets", name, "set")), f"datasets.{name}.set",
                            f"must be a mapping of sections ({', '.join(SECTIONS)})")
        m_locs = {("data",) + p[2:]: loc for p, loc in prof.locs.items()
                  if p[:2] == ("datasets", name) and len(p) > 2 and p[2] != "set"}
        out = deep_merge(out, {"data": entry}, m_locs)
        s_locs = {p[3:]: loc for p, loc in prof.locs.items() if p[:3] == ("datasets", name, "set") and len(p) > 3}
        out = deep_merge(out, extra, s_locs)
    return out


def profile_description(name: str, spec_path: Path | None = None) -> str:
    p = find_profile(name, spec_path)
    if p is None:
        return "paper: the spec exactly as written"
    return f"{name}: {read_yaml(p).data.get('description', '').strip()}"


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
        try:
            value = yaml.safe_load(val) if val.strip() else ""
        except yaml.YAMLError:
            value = val
        d = data
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = value
        locs[parts] = f"--set {item}"
    return data, locs


# ----------------------------------------------------------------------------------------------
# Resolution and validation


def _validate(doc: Doc, header: dict) -> Config:
    body = {**header, **{k: doc.data[k] for k in (*SECTIONS, "paper", "description") if k in doc.data}}
    try:
        return Config.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(str(x) for x in err["loc"])
        field = ".".join(loc)
        if err["type"] == "extra_forbidden":
            model = Config
            for part in loc[:-1]:
                model = model.model_fields[part].annotation if part in model.model_fields else model
            allowed = getattr(model, "model_fields", {}).keys()
            msg = f"unknown field '{loc[-1]}'{_did_you_mean(loc[-1], allowed)}"
        else:
            msg = err["msg"].removeprefix("Value error, ")
            if "input" in err and not isinstance(err["input"], dict):
                msg += f" (got {err['input']!r})"
        # point at the field, or its nearest parent, where the data set it
        where = doc.where(tuple(p for p in loc))
        raise SpecError(where, field, msg) from None


def resolve(path: str | Path, variant: str | None = None, profile: str = "paper",
            sets: list[str] | None = None) -> list[Config]:
    """All variants of a spec file (or just `variant`), fully resolved and validated."""
    path = Path(path)
    doc = load_file(path)
    variants = _variants(doc, path)
    if variant is not None and variant not in variants:
        raise SpecError(f"{path}", "--variant", f"no variant '{variant}'{_did_you_mean(variant, variants)}")
    prof_path = find_profile(profile, path)
    set_data, set_locs = parse_set(sets)
    out = []
    for name, over in variants.items():
        if variant is not None and name != variant:
            continue
        vlocs = {p[2:]: l for p, l in doc.raw.locs.items() if p[:2] == ("variants", name) and len(p) > 2}
        d = deep_merge(doc, over, vlocs)
        d = apply_profile(d, prof_path)
        d = deep_merge(d, set_data, set_locs)
        header = {"variant": name, "spec": str(path), "profile": profile or "paper"}
        paper = dict(d.data.get("paper") or {})
        if isinstance(paper, dict) and paper.get("table") and "row" not in paper:
            paper["row"] = name
            d.data["paper"] = paper
        out.append(_validate(d, header))
    return out


def spec_files(paths: list[str | Path]) -> list[Path]:
    """Expand folders into their spec files (profiles excluded: they are overlays, not specs)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.y*ml") if "profiles" not in f.relative_to(p).parts)
        else:
            files.append(p)
    return files
