"""The paper's published figures, typed in from Tables 2-4 (Vaswani et al. 2017), as data.

Reports set these beside measured numbers; costs uses the training times for the paper's own
hardware-time estimate (footnote 5: time x GPUs x sustained single-precision TFLOPS per GPU).
"""
from __future__ import annotations

P100_TFLOPS = 9.5  # footnote 5; K80 2.8, K40 3.7, M40 6.0
GPUS = 8

# Training wall time in hours on 8 P100 where the paper states it (section 5.2).
TRAIN_HOURS = {"base": 12.0, "big": 3.5 * 24}
SECONDS_PER_STEP = {"base": 0.4, "big": 1.0}

# Table 3: newstest2013 dev, per-wordpiece perplexity, BLEU, parameters x 1e6 (None = not printed).
# Columns printed empty in the paper equal the base row; the specs carry those values.
TABLE3 = [  # (row, group, ppl, bleu, params_m)
    ("base", "base", 4.92, 25.8, 65),
    ("A1", "A", 5.29, 24.9, None),
    ("A2", "A", 5.00, 25.5, None),
    ("A3", "A", 4.91, 25.8, None),
    ("A4", "A", 5.01, 25.4, None),
    ("B1", "B", 5.16, 25.1, 58),
    ("B2", "B", 5.01, 25.4, 60),
    ("C1", "C", 6.11, 23.7, 36),
    ("C2", "C", 5.19, 25.3, 50),
    ("C3", "C", 4.88, 25.5, 80),
    ("C4", "C", 5.75, 24.5, 28),
    ("C5", "C", 4.66, 26.0, 168),
    ("C6", "C", 5.12, 25.4, 53),
    ("C7", "C", 4.75, 26.2, 90),
    ("D1", "D", 5.77, 24.6, None),
    ("D2", "D", 4.95, 25.5, None),
    ("D3", "D", 4.67, 25.3, None),
    ("D4", "D", 5.47, 25.7, None),
    ("E", "E", 4.92, 25.7, None),
    ("big", "big", 4.33, 26.4, 213),
]
TABLE3_GROUPS = {
    "base": "base model", "A": "(A) attention heads", "B": "(B) attention key size",
    "C": "(C) model size", "D": "(D) dropout and label smoothing", "E": "(E) positional embedding",
    "big": "big model",
}

# Table 2: newstest2014 BLEU and training cost in FLOPs (None = not printed).
TABLE2 = [  # (model, bleu_en_de, bleu_en_fr, cost_en_de, cost_en_fr, ours)
    ("ByteNet [18]", 23.75, None, None, None, None),
    ("Deep-Att + PosUnk [39]", None, 39.2, None, 1.0e20, None),
    ("GNMT + RL [38]", 24.6, 39.92, 2.3e19, 1.4e20, None),
    ("ConvS2S [9]", 25.16, 40.46, 9.6e18, 1.5e20, None),
    ("MoE [32]", 26.03, 40.56, 2.0e19, 1.2e20, None),
    ("Deep-Att + PosUnk Ensemble [39]", None, 40.4, None, 8.0e20, None),
    ("GNMT + RL Ensemble [38]", 26.30, 41.16, 1.8e20, 1.1e21, None),
    ("ConvS2S Ensemble [9]", 26.36, 41.29, 7.7e19, 1.2e21, None),
    ("Transformer (base model)", 27.3, 38.1, 3.3e18, 3.3e18, "base"),
    ("Transformer (big)", 28.4, 41.8, 2.3e19, 2.3e19, "big"),
]

# Table 4: WSJ section 23 F1.
TABLE4 = [  # (parser, training, f1, ours)
    ("Vinyals & Kaiser et al. (2014) [37]", "WSJ only, discriminative", 88.3, None),
    ("Petrov et al. (2006) [29]", "WSJ only, discriminative", 90.4, None),
    ("Zhu et al. (2013) [40]", "WSJ only, discriminative", 90.4, None),
    ("Dyer et al. (2016) [8]", "WSJ only, discriminative", 91.7, None),
    ("Transformer (4 layers)", "WSJ only, discriminative", 91.3, "wsj_only"),
    ("Zhu et al. (2013) [40]", "semi-supervised", 91.3, None),
    ("Huang & Harper (2009) [14]", "semi-supervised", 91.3, None),
    ("McClosky et al. (2006) [26]", "semi-supervised", 92.1, None),
    ("Vinyals & Kaiser et al. (2014) [37]", "semi-supervised", 92.1, None),
    ("Transformer (4 layers)", "semi-supervised", 92.7, "semi_supervised"),
    ("Luong et al. (2015) [23]", "multi-task", 93.0, None),
    ("Dyer et al. (2016) [8]", "generative", 93.3, None),
]


def table3_row(row: str) -> dict | None:
    for r, group, ppl, bleu, params in TABLE3:
        if r == row:
            return {"row": r, "group": group, "ppl": ppl, "bleu": bleu, "params_m": params}
    return None


def paper_cost_flops(row: str | None) -> float | None:
    """The paper's hardware-time estimate: hours x 3600 x 8 GPUs x 9.5e12 (base 3.3e18, big 2.3e19)."""
    hours = TRAIN_HOURS.get(row or "")
    return None if hours is None else hours * 3600 * GPUS * P100_TFLOPS * 1e12
