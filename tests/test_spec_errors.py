"""How validation reports a spec's mistakes: every error of a file, each at its line and field; cross-field rules
at the line to change; mistakes that used to pass silently; a profile that makes a claim's two rows one model."""
import pytest

from helpers import fails_at, run, spec
from zoo.spec import resolve


MULTI = """extends: base
model:
  N: true
  d_model: -3
train:
  steps: "100"
  bogus: 1
variants:
  a: {model: {dropout: 2}}
  b: {eval: {beam_size: 0}}
"""


def test_validate_reports_every_error_of_a_file(tmp_path, capsys):
    f = spec(tmp_path, MULTI)
    code, out, err = run("validate", f, capsys=capsys)
    assert code == 2 and "Traceback" not in out + err, out + err
    fails = [l for l in out.splitlines() if l.startswith("FAIL  ")]
    assert [l.split(": ")[0:2] for l in fails] == [
        [f"FAIL  {f}:3", "model.N"], [f"FAIL  {f}:4", "model.d_model"], [f"FAIL  {f}:6", "train.steps"],
        [f"FAIL  {f}:7", "train.bogus"], [f"FAIL  {f}:9", "model.dropout"], [f"FAIL  {f}:10", "eval.beam_size"]], out
    assert "Allowed: batch_tokens" in fails[3] and "0 valid, 1 invalid" in out
    # any other command that loads the spec says all of them too, one paragraph each, exit 2
    code, out, err = run("show", f, capsys=capsys)
    assert code == 2 and err.count(f"{f}:") == 6 and "Traceback" not in err, err


def test_a_profile_that_makes_a_claims_two_rows_one_model(tmp_path, capsys, caplog):
    f = spec(tmp_path, "extends: base\nvariants:\n  two: {model: {N: 2}}\n  four: {model: {N: 4}}\nclaims:\n"
                       "  - {id: deeper-better, better: four, than: two, metric: dev_ppl}\n")
    assert run("validate", f, "--profile", "ablation", capsys=capsys)[0] == 0  # 4 and 2 layers stay apart there
    assert "same model" not in caplog.text
    assert run("validate", f, "--profile", "smoke", capsys=capsys)[0] == 0  # smoke checks the path: said, not refused
    for fragment in (f"{f}:6: claims.0: under profile smoke", "four and two train the same model", "model.N 4 and 2",
                     "deeper-better compares a model with itself"):
        assert fragment in caplog.text, caplog.text


def test_averaging_beyond_kept_checkpoints_points_at_the_field_set(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\ndescription: x\neval:\n  average_checkpoints: 9\n", 4,
             "eval.average_checkpoints")
    fails_at(tmp_path, capsys, "extends: base\neval:\n  average_checkpoints: 5\ntrain:\n  keep_checkpoints: 2\n", 3,
             "eval.average_checkpoints")  # both set in the file: the rule's first field


def test_kept_checkpoints_blamed_when_only_it_was_set(tmp_path, capsys):
    base = spec(tmp_path, "extends: base\neval: {average_checkpoints: 5}\ntrain: {keep_checkpoints: 5}\n", "b.yaml")
    fails_at(tmp_path, capsys, f"extends: {base}\nmodel: {{N: 6}}\ntrain:\n  keep_checkpoints: 2\n", 4,
             "train.keep_checkpoints")


def test_random_samples_errors_point_at_samples_and_echo_it(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nsweep:\n  random:\n    samples: 0\n    model.dropout: {uniform: [0, 1]}\n",
             4, "sweep.random.samples", fragment="(got 0)")


def test_parsing_only_options_on_a_translation_corpus(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\ndata:\n  dataset: multi30k\neval:\n  metric: f1\n", 5, "eval.metric",
             fragment="multi30k is a translation corpus")
    fails_at(tmp_path, capsys, "extends: base\ndata:\n  dataset: multi30k\n  target_vocab: symbols\n", 4,
             "data.target_vocab")


def test_model_max_len_must_hold_the_training_sentences(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nmodel:\n  max_len: 256\n", 3, "model.max_len", fragment="data.max_len + 2")


def test_asha_grace_beyond_the_trials_steps(tmp_path, capsys):
    text = ("extends: base\nsweep:\n  grid: {model.dropout: [0.0, 0.1]}\n  scheduler:\n    asha:\n"
            "      grace_steps: 200\n")
    fails_at(tmp_path, capsys, text, 6, "sweep.scheduler.asha.grace_steps", "--profile", "smoke",
             fragment="ASHA would never stop a trial")
    assert resolve(spec(tmp_path, text, "ok.yaml"))  # at the paper's 100k steps it is fine


def test_unreachable_min_len(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\neval:\n  min_len: 1024\n", 3, "eval.min_len", fragment="never be reached")


def test_randint_takes_whole_numbers(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nsweep:\n  random:\n    samples: 2\n    model.N: {randint: [1.5, 4]}\n",
             5, "sweep.random.model.N", fragment="whole-number bounds")


def test_seed_swept_and_on_a_seeds_axis(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nseeds: [1, 2]\nsweep:\n  grid:\n    train.seed: [1, 2]\n", 5,
             "sweep.grid.train.seed", fragment="keep one of the two")


def test_random_draws_never_repeat_a_point(tmp_path, capsys):
    f = spec(tmp_path, "extends: base\nsweep:\n  random:\n    samples: 6\n    model.h: {choice: [1, 2, 4, 8, 16, 32]}\n")
    assert sorted(c.model.h for c in resolve(f)) == [1, 2, 4, 8, 16, 32]
    fails_at(tmp_path, capsys, "extends: base\nsweep:\n  random:\n    samples: 7\n    model.h: {randint: [1, 4]}\n",
             4, "sweep.random.samples", fragment="only 3 different points")


def test_a_misspelt_compare_to_is_refused_at_its_line(tmp_path, capsys):
    """A reference row that does not exist would leave 'yours against' as 'not run' in every report."""
    text = ("extends: base\npaper: {table: 3, group: A}\nvariants:\n  mine: {model: {h: 4}}\n"
            "  theirs:\n    model: {h: 2}\n    paper: {compare_to: bsae}\n")
    fails_at(tmp_path, capsys, text, 7, "paper.compare_to", fragment="did you mean 'base'")
    ok = spec(tmp_path, text.replace("bsae", "mine"), "ok.yaml")
    assert run("validate", ok, capsys=capsys)[0] == 0


def test_a_look_alike_letter_in_an_enum_value(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\nmodel:\n  positional_encoding: sinus\u043eidal\n", 3,
             "model.positional_encoding", fragment="look-alike")


def test_sexagesimal_is_a_string_not_5400(tmp_path, capsys):
    fails_at(tmp_path, capsys, "extends: base\ntrain:\n  time_limit_minutes: 1:30:00\n", 3,
             "train.time_limit_minutes", fragment="'1:30:00'")


@pytest.mark.parametrize("value", ["yes", "on", "off"])
def test_yaml11_booleans_are_strings_with_a_hint(tmp_path, capsys, value):
    fails_at(tmp_path, capsys, f"extends: base\nmodel:\n  share_embeddings: {value}\n", 3, "model.share_embeddings",
             fragment="only true and false are booleans")
