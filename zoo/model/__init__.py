"""The model: the Transformer of the paper, its components, their exact costs, and decoding.

The parts, each one idea:
1. zoo.model.transformer: the Transformer, section by section as in the paper (`build_model`);
2. zoo.model.components: the components a spec names (norm, ffn, positional, attention) as registries:
   classes and exact costs, a third-party package's through entry points;
3. zoo.model.costs: the analytic cost model: parameters, FLOPs, memory (no torch);
4. zoo.model.decode: beam and greedy search on an incremental key/value cache;
5. zoo.model.dropout: training's dropout masks as a function of (seed, step, call site, element);
6. zoo.model.packing: the masks and positions that keep a packed row's sentences apart.
This door serves their public names to outsiders (`from zoo.model import build_model, train_memory`), lazily:
counting a spec's costs imports no torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import door

# The door, written by scripts/doors.py from the parts' __all__ (tests/test_structure.py checks it).
if TYPE_CHECKING:
    from .components import (AttentionModule, BUILT_IN, CONTRACTS, Cost, FIELDS, GATED_FFN, KINDS, PositionsModule,
        component_entry_points, component_names, component_package, component_problem, third_party)
    from .costs import (FLOAT, SEQ_LEN, cost_row, forward_flops, forward_flops_per_token, gib, memory_text,
        params_analytic, train_flops_per_step, train_flops_total, train_memory, activation_floats_per_token,
        paper_cost_flops)
    from .decode import beam_search, beam_search_nocache, greedy, translate
    from .dropout import Draws, active_draws, counter_dropout, drawing, dropout_key
    from .packing import Packed, positions, why_not_packed
    from .transformer import Transformer, MultiHeadAttention, build_model, count_params, encoder_attention

_PART = {  # name -> the part that lends it
    "AttentionModule": "components", "BUILT_IN": "components", "CONTRACTS": "components", "Cost": "components",
    "FIELDS": "components", "GATED_FFN": "components", "KINDS": "components", "PositionsModule": "components",
    "component_entry_points": "components", "component_names": "components", "component_package": "components",
    "component_problem": "components", "third_party": "components", "FLOAT": "costs", "SEQ_LEN": "costs",
    "cost_row": "costs", "forward_flops": "costs", "forward_flops_per_token": "costs", "gib": "costs",
    "memory_text": "costs", "params_analytic": "costs", "train_flops_per_step": "costs",
    "train_flops_total": "costs", "train_memory": "costs", "activation_floats_per_token": "costs",
    "paper_cost_flops": "costs", "beam_search": "decode", "beam_search_nocache": "decode", "greedy": "decode",
    "translate": "decode", "Draws": "dropout", "active_draws": "dropout", "counter_dropout": "dropout",
    "drawing": "dropout", "dropout_key": "dropout", "Packed": "packing", "positions": "packing",
    "why_not_packed": "packing", "Transformer": "transformer", "MultiHeadAttention": "transformer",
    "build_model": "transformer", "count_params": "transformer", "encoder_attention": "transformer",
}
# End of the door.
__all__ = list(_PART)
__getattr__, __dir__ = door(__name__, _PART)
