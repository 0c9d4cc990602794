"""`zoo run --logger wandb|mlflow`: Ray Tune's callback for each tracker, fed zoo's view of a trial (its
resolved config as parameters; its curve and final scores at the training step as metrics). TensorBoard's
files are written per trial by runner.trial, whatever the loggers."""
from __future__ import annotations

from zoo.errors import UserError


LOGGERS = {  # --logger NAME: (the package it needs, Ray Tune's callback for it)
    "wandb": ("wandb", "ray.air.integrations.wandb", "WandbLoggerCallback"),
    "mlflow": ("mlflow", "ray.air.integrations.mlflow", "MLflowLoggerCallback"),
}


def logger_callbacks(names: list[str] | None) -> list:
    """Ray Tune's W&B or MLflow callback for each name (TensorBoard files are always written, per
    trial); a name whose package is not installed is a clear error before anything runs."""
    import importlib
    import importlib.util
    out = []
    for n in names or []:
        if n not in LOGGERS:
            raise UserError(f"--logger {n}: unknown; choose from {', '.join(LOGGERS)} (TensorBoard files are "
                            "always written to each trial's folder)")
        package, module, cls = LOGGERS[n]
        if importlib.util.find_spec(package) is None:
            raise UserError(f"--logger {n} needs the `{package}` package: pip install {package} (and log in as "
                            f"{package} asks), or leave --logger {n} out")
        base = tracked(getattr(importlib.import_module(module), cls))
        out.append(base(project="zoo") if n == "wandb" else base(experiment_name="zoo"))
    return out


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
