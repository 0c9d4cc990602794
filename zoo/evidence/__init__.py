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
from zoo._door import door

__getattr__, __dir__ = door(__name__, __file__, ["metrics", "evalb_params", "evalb", "stats", "claims", "analysis",
                                                 "sequential", "trend", "sentence"])
