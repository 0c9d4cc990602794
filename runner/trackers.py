"""`zoo run --logger wandb|mlflow`: Ray Tune's callback for each tracker, fed zoo's view of a trial (its
resolved config as parameters; its curve and final scores at the training step as metrics). TensorBoard's
files are written per trial by runner.trial, whatever the loggers."""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

from zoo.errors import UserError
from zoo.text import shorten


LOGGERS = {  # --logger NAME: (the package it needs, Ray Tune's callback for it)
    "wandb": ("wandb", "ray.air.integrations.wandb", "WandbLoggerCallback"),
    "mlflow": ("mlflow", "ray.air.integrations.mlflow", "MLflowLoggerCallback"),
}


def logger_callbacks(names: list[str] | None) -> list:
    """Ray Tune's W&B or MLflow callback for each name (TensorBoard files are always written, per
    trial). A tracker that cannot start (not installed, failing to import, a store it cannot write, no
    key or no way to its server) is one line here, in the driver, before Ray starts or any trial runs."""
    import importlib.util
    out = []
    for n in dict.fromkeys(names or []):  # each tracker once, however often it is named
        if n not in LOGGERS:
            raise UserError(f"--logger {n}: unknown; choose from {', '.join(LOGGERS)} (TensorBoard files are "
                            "always written to each trial's folder)")
        package, module, cls = LOGGERS[n]
        if importlib.util.find_spec(package) is None:
            raise UserError(f"--logger {n} needs the `{package}` package: pip install {package} (and log in as "
                            f"{package} asks), or leave --logger {n} out")
        PROBES[n](imported(n, package))
        base = tracked(getattr(imported(n, module), cls))
        out.append(base(project="zoo") if n == "wandb" else base(experiment_name="zoo"))
    return out


def imported(logger: str, module: str):
    """`module`, or one line saying that it is installed but broken (a missing dependency, a version clash)."""
    try:
        return importlib.import_module(module)
    except Exception as e:
        raise UserError(f"--logger {logger}: the installed `{module}` fails to import ({type(e).__name__}: "
                        f"{first_line(e)}); repair it (pip install --force-reinstall {module.split('.')[0]}) or leave "
                        f"--logger {logger} out") from None


def first_line(e: BaseException, n: int = 300) -> str:
    """A library's message as part of one line: its first line, cut."""
    return shorten((str(e).strip().splitlines() or [type(e).__name__])[0], n)


def writable(folder: Path) -> bool:
    """Whether zoo may write in `folder`, or create it: its nearest existing ancestor is a folder it may write."""
    p = folder.expanduser().absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p.is_dir() and os.access(p, os.W_OK | os.X_OK)


# -- MLflow: the store its tracking URI names --------------------------------------------------------
MLFLOW_FIX = ("set MLFLOW_TRACKING_URI to a store you may write: sqlite:///PATH/mlflow.db, a tracking server's "
              "http://HOST:5000, or a file:///FOLDER with MLFLOW_ALLOW_FILE_STORE=true (docs/reports.md, Trackers)")


def mlflow_folder(uri: str) -> tuple[Path, Path | None] | None:
    """(the folder MLflow writes in, the database file in it or None) for a local store; None for a server."""
    u = urlparse(uri)
    if u.scheme in ("", "file"):
        return Path(u.path or uri), None
    if u.scheme == "sqlite" and uri.startswith("sqlite:///") and len(uri) > len("sqlite:///"):
        db = Path(uri.removeprefix("sqlite:///").split("?")[0])
        db = db if uri.startswith("sqlite:////") or db.is_absolute() else Path.cwd() / db
        return db.parent, db
    return None


@contextmanager
def one_try(seconds: int = 10):
    """MLflow's HTTP requests, for the probe only: one try of `seconds`, not its minutes of retries."""
    keep = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    os.environ.update(MLFLOW_HTTP_REQUEST_MAX_RETRIES="0", MLFLOW_HTTP_REQUEST_TIMEOUT=str(seconds))
    try:
        yield
    finally:
        for k, v in keep.items():  # as they were
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def probe_mlflow(mlflow) -> None:
    """Open the store (creating it and the `zoo` experiment, as the callback would) and check that it can
    be written; say where the runs go."""
    uri = mlflow.get_tracking_uri()  # MLFLOW_TRACKING_URI, else MLflow's default (a database in this folder)
    given = bool(os.environ.get("MLFLOW_TRACKING_URI"))
    setting = f"MLFLOW_TRACKING_URI={shorten(uri, 200)}" if given else f"MLflow's default store {shorten(uri, 200)}"
    local = mlflow_folder(uri)
    if local is not None:
        folder, db = local
        if not writable(folder) or (db is not None and db.exists() and not os.access(db, os.W_OK)) \
                or (db is None and folder.exists() and not folder.is_dir()):
            raise UserError(f"--logger mlflow: {setting}: {db or folder} is not a store zoo may write (read-only, "
                            f"or not a folder); {MLFLOW_FIX}")
    from mlflow.tracking import MlflowClient
    try:
        with one_try():
            client = MlflowClient(tracking_uri=uri)
            client.get_experiment_by_name("zoo") or client.create_experiment("zoo")
    except Exception as e:  # an unknown scheme, a file store MLflow refuses, a server that does not answer
        raise UserError(f"--logger mlflow: MLflow cannot use {setting} ({first_line(e)}); {MLFLOW_FIX}") from None
    print(f"mlflow: logging to {shorten(uri, 200)}, experiment `zoo`" +
          ("" if given else " (MLflow's default; MLFLOW_TRACKING_URI chooses another)"), file=sys.stderr)


# -- W&B: its mode, key, server and folders ----------------------------------------------------------
WANDB_MODES = ("online", "offline", "disabled", "dryrun", "run", "shared")  # wandb.Settings.mode
WANDB_DIRS = ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_ARTIFACT_DIR")
WANDB_OFFLINE = "WANDB_MODE=offline to write runs to files instead (`wandb sync` uploads them later)"


def wandb_key(wandb) -> bool:
    """Whether Ray Tune's W&B callback will find a key: WANDB_API_KEY, its key hook, or a `wandb login`."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_SETUP_API_KEY_HOOK"):
        return True
    try:  # what wandb.api.api_key reads (a login's netrc entry, the settings' key), without its warning
        from wandb.sdk import wandb_setup
        from wandb.sdk.lib import wbauth
        settings = wandb_setup.singleton().settings
        return bool(wbauth.read_netrc_auth(host=settings.base_url) or settings.api_key)
    except Exception:
        return bool(getattr(getattr(wandb, "api", None), "api_key", None))


def reachable(url: str, seconds: float = 5) -> str | None:
    """None if a TCP connection to `url`'s server (or the proxy for it) opens within `seconds`, else why not."""
    import socket
    import urllib.request
    u = urlparse(url)
    proxy = None if urllib.request.proxy_bypass(u.hostname or "") else urllib.request.getproxies().get(u.scheme)
    p = urlparse(proxy) if proxy else u
    try:
        socket.create_connection((p.hostname, p.port or (443 if p.scheme == "https" else 80)), timeout=seconds).close()
    except (OSError, ValueError, TypeError) as e:
        return f"{'its proxy ' + shorten(proxy) + ' ' if proxy else ''}{e.strerror or e if isinstance(e, OSError) else e}"
    return None


def probe_wandb(wandb) -> None:
    """W&B's settings, checked before anything touches the network: its mode, its folders, a key when
    online; only then whether its server answers. An offline run says where it writes."""
    mode = os.environ.get("WANDB_MODE", "")
    if mode and mode not in WANDB_MODES:
        raise UserError(f"--logger wandb: WANDB_MODE={shorten(mode)} is not a W&B mode; choose from "
                        f"{', '.join(WANDB_MODES)}")
    for var in WANDB_DIRS:
        if (d := os.environ.get(var)) and not writable(Path(d)):
            instead = f" (W&B would write to {tempfile.gettempdir()}/wandb instead, without a word)" if var == "WANDB_DIR" else ""
            raise UserError(f"--logger wandb: {var}={shorten(d, 200)} is not a folder zoo may write{instead}; set "
                            f"{var} to a writable folder, or unset it")
    if mode in ("offline", "disabled"):  # the two Ray Tune's callback runs without a key
        where = os.environ.get("WANDB_DIR") or "each trial's Tune folder under --storage (WANDB_DIR chooses another)"
        if mode == "offline":
            print(f"wandb: offline, writing runs under {where}; `wandb sync` uploads them", file=sys.stderr)
        return
    if not wandb_key(wandb):
        raise UserError(f"--logger wandb: W&B is online (WANDB_MODE={mode or 'unset'}) but has no API key: set "
                        f"WANDB_API_KEY or run `wandb login`, or set {WANDB_OFFLINE}")
    try:
        from wandb.sdk import wandb_setup
        url = wandb_setup.singleton().settings.base_url
    except Exception:
        url = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    if (why := reachable(url)) is not None:
        raise UserError(f"--logger wandb: W&B is online but its server {shorten(url, 200)} cannot be reached "
                        f"({why}); check the network or WANDB_BASE_URL, or set {WANDB_OFFLINE}")


PROBES = {"mlflow": probe_mlflow, "wandb": probe_wandb}


def tracked(base: type) -> type:
    """Ray Tune's logger callback `base`, fed zoo's view of a trial, not Tune's: as parameters its resolved
    config by `--set` names (model.d_model, ...), not the param space's paths and Tune's copy as metrics; as
    metrics its curve and final scores at the training step (`tracker_metrics`), not Tune's report counter.
    W&B's logging actor also calls wandb.teardown() after wandb.finish(): Ray kills the actor once run()
    returns, before the atexit hook that tears W&B down, while its service (wandb-core) may still hold the
    run's records (an offline run's file then kept its header only)."""
    from zoo.config import dotted

    class Tracked(base):
        def log_trial_start(self, trial):  # both callbacks read trial.config
            space, trial.config = trial.config, dotted((trial.config.get("trial") or {}).get("config") or {})
            try:
                super().log_trial_start(trial)
            finally:
                trial.config = space

        def log_trial_result(self, iteration, trial, result):
            if m := tracker_metrics(result):
                super().log_trial_result(iteration, trial, m)

    if (actor := getattr(base, "_logger_actor_cls", None)) is not None:  # W&B's: one Ray actor per trial
        class TornDown(actor):
            def run(self):
                try:
                    super().run()
                finally:
                    self._wandb.teardown()
        Tracked._logger_actor_cls = TornDown
    Tracked.__name__ = Tracked.__qualname__ = f"Zoo{base.__name__}"
    return Tracked


def tracker_metrics(result: dict) -> dict:
    """A Tune result as tracker metrics, by TensorBoard's names (runner.trial.TensorBoard): a log point's
    train/loss, nll, lr, tokens_per_s, dev_ppl; the finished run's eval/dev_ppl, eval/SPLIT_bleu (_bleu_paper,
    _f1, _ppl), train/seconds, train/tokens_seen; at the training step, as `training_iteration` (where both
    callbacks take their step from). Other events: {}."""
    from zoo.result import Done, LogPoint, event
    e = event(result.get("zoo") or {})
    if isinstance(e, LogPoint):
        step, m = e.step, {f"train/{k}": getattr(e, k) for k in ("loss", "nll", "lr", "tokens_per_s", "dev_ppl")}
    elif isinstance(e, Done) and e.result is not None:
        r = e.result
        step = r.steps_done
        m = {f"eval/{name}_{k}": getattr(s, k) for name, s in r.splits.items() for k in ("bleu", "bleu_paper", "f1", "ppl")}
        m |= {"eval/dev_ppl": r.dev_ppl, "train/seconds": r.train_seconds, "train/tokens_seen": r.tokens_seen}
    else:
        return {}
    return {k: v for k, v in m.items() if v is not None} | {"training_iteration": step}
