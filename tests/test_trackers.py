"""`zoo run --logger mlflow|wandb` for real: one smoke trial each (A1 of Table 3, shrunk as in test_runner),
then the run read back by the tracker's own reader: MLflow's client on a SQLite store, W&B's protobuf
records of an offline run. Both must hold the trial's resolved config by its `--set` names and the
curve and final scores that zoo's own store holds (runner.trackers.tracked: tracker_params, tracker_metrics).
TensorBoard's files are checked in test_runner. No network: MLflow writes a file, W&B runs offline.

A tracker that cannot start (issue 51) is one `zoo: error:` line naming the setting to fix, exit 2, before
Ray starts: the storage folder is never even made. These need neither Ray nor the network (a server that
does not answer is a closed port on 127.0.0.1); the read-only cases run as user nobody (root writes anywhere).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from zoo.config import dotted
from zoo.runner.store import Store

REPO = Path(__file__).resolve().parents[1]
SPEC = "specs/table3_A.yaml"
SMALL = ["train.steps=6", "train.eval_every=6", "train.checkpoint_every=3", "eval.max_sentences=4", "train.log_every=2"]
RUN = 600  # seconds one `zoo run` of this trial may take on a busy 2-core machine (about 45 s idle)


def run_with(loggers: list[str], tmp_path: Path, **env) -> tuple:
    """`zoo run` of A1 with each of `--logger`, the trackers' settings only from `env`; (the store's row, its points)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "WANDB_"))}
    storage = tmp_path / "runs"
    cmd = [sys.executable, "-m", "zoo.cli", "run", SPEC, "--profile", "smoke", "--variant", "A1",
           "--storage", str(storage), *[x for n in loggers for x in ("--logger", n)],
           *[x for s in SMALL for x in ("--set", s)]]
    r = subprocess.run(cmd, cwd=REPO, env=clean | env, capture_output=True, text=True, timeout=RUN)
    assert r.returncode == 0 and "1 finished, 0 failed" in r.stdout, r.stdout + r.stderr
    store = Store(storage / "zoo.db", readonly=True)
    (row,) = store.trials()
    assert row.result is not None and row.result.steps_done == 6
    points = [p for p in store.points(SPEC, "A1", "smoke") if p.loss is not None]
    assert points and points[-1].step == 6
    return row, points


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """One `zoo run` of A1 logging to MLflow and to W&B (offline) at once: (its folder, the store's row, its points).
    Both trackers read the same trial, so one Ray start and one training serve both tests."""
    tmp_path = tmp_path_factory.mktemp("tracked")
    w = tmp_path / "wandb"
    row, points = run_with(["mlflow", "wandb"], tmp_path, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}",
                           WANDB_MODE="offline", WANDB_DIR=str(w), WANDB_SILENT="true",
                           WANDB_CONFIG_DIR=str(w / "config"), WANDB_CACHE_DIR=str(w / "cache"),
                           WANDB_DATA_DIR=str(w / "data"))
    return tmp_path, row, points


def test_the_callbacks_get_zoo_params_and_metrics_at_the_training_step():
    """Without Ray: what runner.trackers.tracked hands its base callback."""
    from zoo.result import Done, LogPoint, RunResult, SplitScore, Started, wire
    from zoo.runner.trackers import tracked, tracker_metrics

    class Base:  # the two methods zoo wraps, as Ray's LoggerCallback calls them
        def __init__(self):
            self.seen = []

        def log_trial_start(self, trial):
            self.seen.append(("params", trial.config))

        def log_trial_result(self, iteration, trial, result):
            self.seen.append(("metrics", result))

    class Trial:
        config = {"trial": {"trial": "A1", "out_dir": "/x", "config": {"variant": "A1", "model": {"d_model": 32}}}}

    cb, trial = tracked(Base)(), Trial()
    space = trial.config
    cb.log_trial_start(trial)
    assert trial.config is space  # Tune's own copy is left as it was
    for e in (Started(placement={}), LogPoint(step=3, steps=6, loss=2.5, lr=0.1),
              Done(result=RunResult(variant="A1", profile="smoke", steps_done=6, dev_ppl=9.0, eval_split="dev",
                                    splits={"dev": SplitScore(eval_split="dev", bleu=1.5)}))):
        cb.log_trial_result(1, trial, {"zoo": wire(e), "config": space, "pid": 1, "training_iteration": 1})
    assert cb.seen == [("params", {"variant": "A1", "model.d_model": 32}),
                       ("metrics", {"train/loss": 2.5, "train/lr": 0.1, "training_iteration": 3}),
                       ("metrics", {"eval/dev_bleu": 1.5, "eval/dev_ppl": 9.0, "train/seconds": 0.0,
                                    "train/tokens_seen": 0, "training_iteration": 6})]
    assert tracker_metrics({"done": True}) == {}


@pytest.mark.slow  # starts Ray and trains
def test_mlflow_holds_the_config_the_curve_and_the_final_scores(tracked):
    from mlflow.tracking import MlflowClient
    tmp_path, row, points = tracked
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    m = row.result

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("zoo")
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.run_name == "A1" and run.info.status == "FINISHED"
    # every field of the resolved config, by its --set name, as MLflow keeps params (strings); nothing else
    assert run.data.params == {k: str(v) for k, v in dotted(row.config.model_dump(mode="json")).items()}
    assert run.data.params["model.d_model"] == str(row.config.model.d_model) and run.data.params["variant"] == "A1"

    def history(key):
        return [(h.step, h.value) for h in sorted(client.get_metric_history(run.info.run_id, key), key=lambda h: h.step)]

    # the training curve at the training steps, as zoo's store has it
    assert history("train/loss") == [(p.step, pytest.approx(p.loss)) for p in points]
    assert history("train/nll") == [(p.step, pytest.approx(p.nll)) for p in points]
    assert [s for s, _ in history("train/lr")] == [p.step for p in points]
    assert history("train/dev_ppl") == [(6, pytest.approx(m.dev_ppl))]
    # the final scores, at the last step
    assert history("eval/dev_ppl") == [(6, pytest.approx(m.dev_ppl))]
    assert history("eval/dev_bleu") == [(6, pytest.approx(m.primary.bleu))]
    assert history("eval/dev_bleu_paper") == [(6, pytest.approx(m.primary.bleu_paper))]
    assert history("train/tokens_seen") == [(6, m.tokens_seen)]
    assert set(run.data.metrics) == {"train/loss", "train/nll", "train/lr", "train/tokens_per_s", "train/dev_ppl",
                                     "eval/dev_ppl", "eval/dev_bleu", "eval/dev_bleu_paper", "train/seconds",
                                     "train/tokens_seen", "training_iteration"}  # no Tune bookkeeping, no config


# -- W&B: an offline run's file, read record by record with W&B's own protobuf schema -----------------

def wandb_records(path: Path):
    """The records of a `run-*.wandb` file: W&B's LevelDB-style log (a 7-byte header ':W&B', 0xBEE1,
    version 0; 32 KiB blocks of chunks, each with a 7-byte header: CRC, length, type FULL/FIRST/MIDDLE/LAST),
    each record a `wandb_internal_pb2.Record`. The installed wandb reads these files in its Go core only."""
    from wandb.proto import wandb_internal_pb2 as pb
    data = path.read_bytes()
    assert struct.unpack("<4sHB", data[:7]) == (b":W&B", 0xBEE1, 0), data[:7]
    pos, parts = 7, b""
    while pos + 7 <= len(data):
        if (left := 32768 - pos % 32768) < 7:  # a block's tail too short for a header: padding
            pos += left
            continue
        _crc, n, kind = struct.unpack("<IHB", data[pos:pos + 7])
        parts, pos = parts + data[pos + 7:pos + 7 + n], pos + 7 + n
        if kind in (1, 4):  # FULL or LAST: a whole record
            rec = pb.Record()
            rec.ParseFromString(parts)
            parts = b""
            yield rec


@pytest.mark.slow  # starts Ray and trains
def test_wandb_offline_run_holds_the_config_the_curve_and_the_final_scores(tracked):
    tmp_path, row, points = tracked
    w = tmp_path / "wandb"
    m = row.result
    (path,) = w.glob("wandb/offline-run-*/run-*.wandb")
    records = list(wandb_records(path))

    def key(item):
        return item.key or "/".join(item.nested_key)

    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert run.project == "zoo" and run.display_name == "A1"
    config = {key(i): json.loads(i.value_json) for i in run.config.update if key(i) != "_wandb"}
    assert config == dotted(row.config.model_dump(mode="json"))  # every field by its --set name, at its value
    assert config["model.d_model"] == row.config.model.d_model == 32

    history = [{key(i): json.loads(i.value_json) for i in r.history.item}
               for r in records if r.WhichOneof("record_type") == "history"]
    assert [h["_step"] for h in history] == [p.step for p in points]  # W&B's step is the training step
    assert [h["train/loss"] for h in history] == [pytest.approx(p.loss) for p in points]
    assert [h["train/nll"] for h in history] == [pytest.approx(p.nll) for p in points]
    last = history[-1]  # the last log point and the finished run's scores share step 6
    assert last["train/dev_ppl"] == pytest.approx(m.dev_ppl) and last["eval/dev_ppl"] == pytest.approx(m.dev_ppl)
    assert last["eval/dev_bleu"] == pytest.approx(m.primary.bleu)
    assert last["eval/dev_bleu_paper"] == pytest.approx(m.primary.bleu_paper)
    assert last["train/tokens_seen"] == m.tokens_seen
    assert not {k for h in history for k in h if k.startswith(("config/", "zoo/", "time_", "pid"))}
    exits = [r.exit for r in records if r.WhichOneof("record_type") == "exit"]
    assert exits and exits[-1].exit_code == 0


# -- a tracker that cannot start: one line, exit 2, no trial --------------------------------------------

def refused(code: int, out: str, err: str, storage: Path, *setting: str) -> str:
    """Exit 2, one `zoo: error:` line naming each of `setting`, no traceback, and no trial: the run refused
    before it made its storage folder (where the store, Ray's experiment and every trial's folder go)."""
    msg = (out + err).strip()
    assert code == 2 and "Traceback" not in msg, (code, msg)
    (line,) = [x for x in err.splitlines() if x.startswith("zoo: error:")]
    assert "--logger" in line and all(s in line for s in setting), line
    assert not storage.exists(), f"{storage} was made: the run went on"
    return line


def zoo_run(logger: str, storage: Path, env: dict) -> tuple:
    """`zoo run` of A1 with `--logger`, the trackers' settings only from `env`, HOME a folder without a
    W&B login (no netrc key)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "WANDB_"))}
    cmd = [sys.executable, "-m", "zoo.cli", "run", SPEC, "--profile", "smoke", "--variant", "A1",
           "--storage", str(storage), "--logger", logger, *[x for s in SMALL for x in ("--set", s)]]
    r = subprocess.run(cmd, cwd=REPO, env=clean | {"HOME": str(storage.parent)} | env, capture_output=True,
                       text=True, timeout=RUN)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("uri, said", [
    ("nosuchscheme://x", "unsupported URI"),  # a scheme MLflow does not know
    ("http://127.0.0.1:1", "127.0.0.1"),      # a server that does not answer (tried once, not for minutes)
])
def test_an_mlflow_store_it_cannot_open_is_one_line_before_any_trial(tmp_path, uri, said):
    storage = tmp_path / "runs"
    line = refused(*zoo_run("mlflow", storage, {"MLFLOW_TRACKING_URI": uri}), storage,
                   f"MLFLOW_TRACKING_URI={uri}", said)
    assert "sqlite:///" in line  # what to set instead


@pytest.mark.parametrize("logger", ["wandb", "mlflow"])
def test_a_tracker_that_fails_to_import_is_one_line(tmp_path, logger):
    """An installed package that is broken (here one shadowing the real one, raising as a missing
    dependency would)."""
    broken = tmp_path / "site" / logger
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('cannot import name core (a version clash)')\n")
    storage = tmp_path / "runs"
    refused(*zoo_run(logger, storage, {"PYTHONPATH": str(tmp_path / "site"), "WANDB_MODE": "offline"}), storage,
            f"`{logger}` fails to import", "a version clash", f"--force-reinstall {logger}")


def test_wandb_online_without_a_key_is_refused_before_the_network(tmp_path):
    storage = tmp_path / "runs"
    # W&B's server a closed port: were the key not checked first, the line would name the server instead
    refused(*zoo_run("wandb", storage, {"WANDB_BASE_URL": "http://127.0.0.1:1"}), storage,
            "no API key", "WANDB_API_KEY", "WANDB_MODE=offline")


def test_wandb_online_with_a_key_but_no_server_is_refused_at_once(tmp_path):
    storage = tmp_path / "runs"
    refused(*zoo_run("wandb", storage, {"WANDB_API_KEY": "x" * 40, "WANDB_BASE_URL": "http://127.0.0.1:1"}),
            storage, "http://127.0.0.1:1 cannot be reached", "WANDB_BASE_URL", "WANDB_MODE=offline")


def test_a_wandb_mode_that_is_none_is_refused(tmp_path):
    storage = tmp_path / "runs"
    refused(*zoo_run("wandb", storage, {"WANDB_MODE": "ofline"}), storage, "WANDB_MODE=ofline", "offline")


@pytest.fixture
def read_only(as_nobody):
    """A folder user nobody may read but not write (root's, mode 0755), a --storage path nobody could make
    (removed afterwards only if a run made it), and zoo run as nobody."""
    folder = Path(tempfile.mkdtemp(prefix="zoo-ro-"))  # not under pytest's root-only folder
    storage = Path(tempfile.mkdtemp(prefix="zoo-never-"))
    storage.rmdir()  # a name no one else uses, for a folder the run must not make
    try:
        folder.chmod(0o755)
        yield folder, storage, as_nobody
    finally:
        shutil.rmtree(folder)
        shutil.rmtree(storage, ignore_errors=True)  # only there if a refused run made it


def nobody_run(as_nobody, logger: str, storage: Path, env: dict) -> tuple:
    return as_nobody("run", "table3_A", "--profile", "smoke", "--variant", "A1", "--storage", storage,
                     "--logger", logger, timeout=RUN, extra_env=env)


@pytest.mark.parametrize("store", ["file", "sqlite"])
def test_a_read_only_mlflow_store_is_one_line_before_any_trial(read_only, store):
    folder, storage, as_nobody = read_only
    uri = f"file://{folder}/mlruns" if store == "file" else f"sqlite:///{folder}/mlflow.db"
    refused(*nobody_run(as_nobody, "mlflow", storage, {"MLFLOW_TRACKING_URI": uri, "MLFLOW_ALLOW_FILE_STORE": "true"}),
            storage, f"MLFLOW_TRACKING_URI={uri}", "not a store zoo may write")
    assert list(folder.iterdir()) == []


def test_wandb_offline_with_a_read_only_dir_is_refused_not_sent_to_tmp(read_only):
    folder, storage, as_nobody = read_only
    line = refused(*nobody_run(as_nobody, "wandb", storage, {"WANDB_MODE": "offline", "WANDB_DIR": str(folder)}),
                   storage, f"WANDB_DIR={folder}", "/wandb instead")
    assert "writable folder" in line and list(folder.iterdir()) == []
