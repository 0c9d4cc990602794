"""BLEU equals sacreBLEU's own command line; perplexity checks by hand."""
import gzip
import json
import math
import random
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from zoo.evidence.metrics import bleu, dev_perplexity, perplexity, tokenized_bleu


@pytest.fixture(scope="module")
def refs(data_root):
    with gzip.open(data_root / "multi30k" / "test_2016_flickr.de.gz", "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def perturb(sentences, seed=0):
    """A system output stand-in: drop some words, swap some neighbours."""
    rng, out = random.Random(seed), []
    for s in sentences:
        w = [x for x in s.split() if rng.random() > 0.15]
        if len(w) > 1 and rng.random() < 0.5:
            i = rng.randrange(len(w) - 1)
            w[i], w[i + 1] = w[i + 1], w[i]
        out.append(" ".join(w))
    return out


def sacrebleu_cli(tmp_path, hyps, refs, *args):
    (tmp_path / "ref.de").write_text("".join(r + "\n" for r in refs), encoding="utf-8")
    (tmp_path / "hyp.de").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    cmd = [sys.executable, "-m", "sacrebleu", str(tmp_path / "ref.de"), "-i", str(tmp_path / "hyp.de"),
           "-f", "json", "-w", "6", *args]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def test_bleu_equals_sacrebleu_cli(tmp_path, refs):
    assert len(refs) == 1000
    hyps = perturb(refs)
    ours = bleu(hyps, refs)
    cli = sacrebleu_cli(tmp_path, hyps, refs)
    assert 20 < ours["bleu"] < 90
    assert ours["bleu"] == pytest.approx(cli["score"], abs=1e-5)
    assert ours["signature"] == cli["signature"]
    assert ours["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert bleu(refs, refs)["bleu"] == pytest.approx(100.0)


def test_tokenized_bleu_is_labelled_and_matches_cli(tmp_path, refs):
    hyps = perturb(refs[:300], seed=1)
    tok = tokenized_bleu(hyps, refs[:300])
    cli = sacrebleu_cli(tmp_path, hyps, refs[:300], "-tok", "intl")
    assert "tok:intl" in tok["signature"] and "tokenized" in tok["label"]
    assert tok["bleu"] == pytest.approx(cli["score"], abs=1e-5) and tok["signature"] == cli["signature"]
    assert tok["bleu"] != bleu(hyps, refs[:300])["bleu"]
    with pytest.raises(ValueError):
        bleu(hyps, refs)


def test_perplexity_by_hand():
    assert perplexity(10 * math.log(7), 10) == pytest.approx(7)
    assert perplexity(0.0, 5) == 1.0
    with pytest.raises(ValueError):
        perplexity(1.0, 0)


class Uniform(nn.Module):
    """Equal logits over V tokens: every token costs log V nats, so perplexity is V."""

    def __init__(self, V):
        super().__init__()
        self.V, self.w = V, nn.Parameter(torch.zeros(1))

    def forward(self, src, tgt_in):
        return torch.zeros(*tgt_in.shape, self.V) + self.w


def test_dev_perplexity_uniform_is_vocab_size():
    tgt_out = torch.tensor([[5, 6, 3, 0, 0], [7, 3, 0, 0, 0]])  # pads must not count
    batch = SimpleNamespace(src=torch.ones(2, 4, dtype=torch.long), tgt_in=tgt_out.clone(),
                            tgt_out=tgt_out)
    m = Uniform(37)
    assert dev_perplexity(m, [batch, batch]) == pytest.approx(37)
    assert m.training


def test_dev_perplexity_confident_model():
    # a model that puts probability p on the right token and spreads the rest: ppl = 1/p
    V, p = 10, 0.8

    class Confident(Uniform):
        def forward(self, src, tgt_in):
            probs = torch.full((*tgt_in.shape, V), (1 - p) / (V - 1))
            probs.scatter_(-1, self.gold.unsqueeze(-1), p)
            return probs.log() + self.w

    tgt_out = torch.tensor([[4, 5, 3], [6, 3, 0]])
    m = Confident(V)
    m.gold = tgt_out
    batch = SimpleNamespace(src=torch.ones(2, 2, dtype=torch.long), tgt_in=tgt_out, tgt_out=tgt_out)
    assert dev_perplexity(m, [batch]) == pytest.approx(1 / p)


def test_dev_sentence_nll_lands_each_sentence_in_its_place():
    from zoo.evidence.metrics import dev_nll, dev_sentence_nll
    tgt_out = torch.tensor([[5, 6, 3, 0, 0], [7, 3, 0, 0, 0]])
    batch = SimpleNamespace(src=torch.ones(2, 4, dtype=torch.long), tgt_in=tgt_out.clone(), tgt_out=tgt_out,
                            indices=[2, 0])  # batches come length-sorted: sentence 2 first
    m = Uniform(37)
    per = dev_sentence_nll(m, [batch], 3)
    assert [k for _, k in per] == [2, 0, 3] and per[2][0] == pytest.approx(3 * math.log(37))
    total, n = dev_nll(m, [batch])
    assert sum(x for x, _ in per) == pytest.approx(total) and sum(k for _, k in per) == n


def test_paper_bleu_splits_compounds_as_get_ende_bleu():
    from zoo.evidence.metrics import PAPER_BLEU_LABEL, _compound_split, paper_bleu
    from zoo.evidence.stats import bleu_from_stats
    assert _compound_split("rich-text format a-b-c") == "rich ##AT##-##AT## text format a ##AT##-##AT## b-c"  # as perl's /g
    same = paper_bleu(["Ein blau-weißes Haus."], ["Ein blau-weißes Haus ."])
    assert same["bleu"] == pytest.approx(100) and same["label"] == PAPER_BLEU_LABEL
    hyps = ["Ein Mann mit einem blau-grünen T-Shirt steht vor einem Haus.", "Zwei Hunde rennen über die Wiese."]
    refs = ["Ein Mann im blau-weißen T-Shirt steht vor dem Haus.", "Zwei Hunde laufen über eine Wiese."]
    ours = paper_bleu(hyps, refs)
    assert ours["bleu"] > bleu(hyps, refs)["bleu"]  # the split compounds add matches sacreBLEU's 13a does not see
    assert len(ours["stats"]) == 2 and bleu_from_stats(np.sum(ours["stats"], 0)) == pytest.approx(ours["bleu"])
