"""model-index.yml: the measured rows in the Papers-with-Code model-index format (as OpenMMLab's
repositories keep it, and model-index readers parse it), so our figures can be shared and compared.

One model per paper row that finished: its sacreBLEU (and the tokenized BLEU, labelled) and dev
perplexity, the mean over the seeds that ran, on the split it was scored on; the profile in the
name, since a scaled-down profile's figures are not the paper's.
"""
from __future__ import annotations

import yaml

from zoo import paper
from zoo.reports.runs import Runs
from zoo.reports.cells import over_seeds, truncated
from zoo.result import Trial

PAPER = "https://arxiv.org/abs/1706.03762"


def _model(t: Trial, name: str, runs: Runs) -> dict | None:
    seeds = runs.seeds(t)
    m = t.result
    split = m.primary
    if split is None or split.bleu is None or truncated(t):
        return None
    metrics = {}
    for key, label in (("bleu", "sacreBLEU"), ("dev_ppl", "dev perplexity (per word-piece)")):
        mean, _, n = over_seeds(seeds, key)
        if mean is not None:
            metrics[label] = round(mean, 2)
    tok = [x.result.primary.bleu_tokenized for x in seeds if x.result.primary
           and x.result.primary.bleu_tokenized is not None]
    if tok:
        metrics["tokenized BLEU (sacreBLEU tok:intl; not the paper's pipeline)"] = round(sum(tok) / len(tok), 2)
    return {"Name": f"transformer-{name}-{t.profile}", "In Collection": "Attention Is All You Need (zoo)",
            "Metadata": {"Profile": t.profile, "Training Steps": m.steps_done, "Spec": t.spec,
                         "Seeds": len(seeds),
                         "Trials": sorted(x.trial for x in seeds)},
            "Results": [{"Task": "Machine Translation",
                         "Dataset": f"{m.dataset} {split.eval_split}",
                         "Metrics": metrics}],
            "Paper": {"Title": "Attention Is All You Need", "URL": PAPER}}


def model_index(runs: Runs) -> str:
    models = []
    for row, *_ in paper.TABLE3:
        t = runs.pick(3, row)
        if t and t.finished and (x := _model(t, f"table3-{row}", runs)):
            models.append(x)
    for group in ("EN-DE", "EN-FR"):
        for row in ("base", "big"):
            t = runs.pick(2, row, group)
            if t and t.finished and (x := _model(t, f"table2-{group.lower()}-{row}", runs)):
                models.append(x)
    doc = {"Collections": [{"Name": "Attention Is All You Need (zoo)", "Paper": {"Title": "Attention Is All You Need",
                                                                                   "URL": PAPER}}],
           "Models": models}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
