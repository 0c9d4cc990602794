"""model-index.yml: the measured rows in the Papers-with-Code model-index format (as OpenMMLab's
repositories keep it, and model-index readers parse it), so our figures can be shared and compared.

One model per paper row that finished: its sacreBLEU (and the tokenized BLEU, labelled) and dev
perplexity, the mean over the seeds that ran, on the split it was scored on; the profile in the
name, since a scaled-down profile's figures are not the paper's. Read from the same typed rows as
Tables 2 and 3, and printed through their columns: a figure here is the one on the page.
"""
from __future__ import annotations

import yaml

from zoo.reports.cells import column, truncated
from zoo.reports.runs import Runs
from zoo.reports.tables import T2Row, T3Row, table2_rows, table3_rows

PAPER = "https://arxiv.org/abs/1706.03762"


def _model(row: T2Row | T3Row, name: str) -> dict | None:
    t, m = row.run.trial, row.run.result
    if m is None or row.bleu is None or truncated(t):
        return None
    split = row.split if isinstance(row, T2Row) else m.eval_split
    as_shown = lambda key: float(column(type(row), key).text(getattr(row, key)))  # the page's digits
    metrics = {"sacreBLEU": as_shown("bleu")}
    if row.ppl is not None:
        metrics["dev perplexity (per word-piece)"] = round(row.ppl, 2)
    if row.bleu_tokenized is not None:
        metrics["tokenized BLEU (sacreBLEU tok:intl; not the paper's pipeline)"] = round(row.bleu_tokenized, 2)
    return {"Name": f"transformer-{name}-{t.profile}", "In Collection": "Attention Is All You Need (zoo)",
            "Metadata": {"Profile": t.profile, "Training Steps": m.steps_done, "Spec": t.spec,
                         "Seeds": len(row.run.seeds),
                         "Trials": sorted(x.trial for x in row.run.seeds)},
            "Results": [{"Task": "Machine Translation", "Dataset": f"{m.dataset} {split}", "Metrics": metrics}],
            "Paper": {"Title": "Attention Is All You Need", "URL": PAPER}}


def model_index(runs: Runs) -> str:
    models = [x for r in table3_rows(runs) if not r.yours and (x := _model(r, f"table3-{r.name}"))]
    models += [x for r in table2_rows(runs) if (x := _model(r, f"table2-{r.group.lower()}-{r.name}"))]
    doc = {"Collections": [{"Name": "Attention Is All You Need (zoo)", "Paper": {"Title": "Attention Is All You Need",
                                                                                   "URL": PAPER}}],
           "Models": models}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
