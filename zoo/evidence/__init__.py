"""The evidence: a run's scores, and what they say about the paper's claims.

The parts, each one idea:
1. zoo.evidence.metrics: sacreBLEU, the paper's tokenized BLEU, perplexity per wordpiece, parsing F1;
2. zoo.evidence.evalb (with evalb_params, EVALB's parameter files): EVALB re-implemented step by step;
3. zoo.evidence.stats: the noise on a difference between two rows (a bootstrap over seeds and sentences);
4. zoo.evidence.claims: the paper's Table 3 claims as data, and their tests (`compare`, `judge`);
5. zoo.evidence.analysis: the analysis plan, fixed before a reference's runs (`load_plan`);
6. zoo.evidence.sequential: the group-sequential boundary of `--until-resolved`;
7. zoo.evidence.trend: the scale trend, a comparison's slope over log2(d_model) (`fit_trend`);
8. zoo.evidence.sentence: a verdict as one sentence to paste (`say`, `say_versus`).
This door serves their public names to outsiders (`from zoo import evidence as E; E.judge(...)`), lazily.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import door

# The door, written by scripts/doors.py from the parts' __all__ (tests/test_structure.py checks it).
if TYPE_CHECKING:
    from .analysis import AnalysisPlan, claim_post_hoc, load_plan, post_hoc
    from .claims import (ALPHA, BOUNDARY, CLAIMS, Claim, Comparison, MC_RANGE, REFINE, RowRun, TIE_MARGIN, Tally,
        UNTESTABLE, VERDICTS, compare, from_specs, judge, kendall_tau, refiner)
    from .evalb import evalb_main, f1, score
    from .evalb_params import EvalbError
    from .metrics import (PAPER_BLEU_LABEL, bleu, bleu_stats, dev_perplexity, dev_sentence_nll, paper_bleu,
        parse_f1, perplexity, tokenized_bleu)
    from .sentence import say, say_versus
    from .sequential import describe_boundary, levels, looks, seed_order
    from .stats import BOOTSTRAP_SEED, RESAMPLES, Estimate, Resampler, holm
    from .trend import AtWidth, Seeded, Slope, fit_trend

_PART = {  # name -> the part that lends it
    "AnalysisPlan": "analysis", "claim_post_hoc": "analysis", "load_plan": "analysis", "post_hoc": "analysis",
    "ALPHA": "claims", "BOUNDARY": "claims", "CLAIMS": "claims", "Claim": "claims", "Comparison": "claims",
    "MC_RANGE": "claims", "REFINE": "claims", "RowRun": "claims", "TIE_MARGIN": "claims", "Tally": "claims",
    "UNTESTABLE": "claims", "VERDICTS": "claims", "compare": "claims", "from_specs": "claims", "judge": "claims",
    "kendall_tau": "claims", "refiner": "claims", "evalb_main": "evalb", "f1": "evalb", "score": "evalb",
    "EvalbError": "evalb_params", "PAPER_BLEU_LABEL": "metrics", "bleu": "metrics", "bleu_stats": "metrics",
    "dev_perplexity": "metrics", "dev_sentence_nll": "metrics", "paper_bleu": "metrics", "parse_f1": "metrics",
    "perplexity": "metrics", "tokenized_bleu": "metrics", "say": "sentence", "say_versus": "sentence",
    "describe_boundary": "sequential", "levels": "sequential", "looks": "sequential", "seed_order": "sequential",
    "BOOTSTRAP_SEED": "stats", "RESAMPLES": "stats", "Estimate": "stats", "Resampler": "stats", "holm": "stats",
    "AtWidth": "trend", "Seeded": "trend", "Slope": "trend", "fit_trend": "trend",
}
# End of the door.
__all__ = list(_PART)
__getattr__, __dir__ = door(__name__, _PART)
