"""The model: the Transformer of the paper, its components, their exact costs, and decoding.

The parts, each one idea:
1. zoo.model.transformer: the Transformer, section by section as in the paper (`build_model`);
2. zoo.model.components: the components a spec names (norm, ffn, positional, attention) as registries:
   classes and exact costs, a third-party package's through entry points;
3. zoo.model.costs: the analytic cost model: parameters, FLOPs, memory (no torch);
4. zoo.model.decode: beam and greedy search on an incremental key/value cache;
5. zoo.model.dropout: training's dropout masks as a function of (seed, step, call site, element).
This door serves their public names to outsiders (`from zoo.model import build_model, train_memory`), lazily:
counting a spec's costs imports no torch.
"""
from zoo._door import door

__getattr__, __dir__ = door(__name__, __file__, ["transformer", "components", "costs", "decode", "dropout"])
