"""zoo/spec/ split by idea (issue 54): no function there over 60 lines (resolve and apply_profile were 91
and 117), no `_check_*` left in resolution.py (the checks live in zoo/spec/checks.py), and a profile's
grammar written once: the `Profile` model that both the validator and `zoo schema --profile-file` read."""
import ast
from pathlib import Path

SPEC = Path(__file__).resolve().parents[1] / "zoo" / "spec"
LIMIT = 60


def functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def test_no_function_in_zoo_spec_is_over_60_lines():
    long = [f"{p.name}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1} lines)"
            for p in sorted(SPEC.glob("*.py")) for f in functions(p) if f.end_lineno - f.lineno + 1 > LIMIT]
    assert not long, long


def test_the_checks_are_in_their_own_module():
    left = [f.name for f in functions(SPEC / "resolution.py") if f.name.lstrip("_").startswith("check")]
    assert not left, left
    assert {"check_size", "check_same", "check_corpus", "check_grace"} <= {f.name for f in functions(SPEC / "checks.py")}


def test_the_profile_grammar_is_spelt_once():
    """schema.py derives the profile schema from the model: it names no profile key of its own."""
    from zoo.spec import Profile, profile_schema
    schema = profile_schema()
    assert set(schema["properties"]) == set(Profile.model_fields)
    source = (SPEC / "schema.py").read_text()
    assert not any(f'"{k}"' in source for k in ("untestable", "datasets", "prefer", "heads"))
