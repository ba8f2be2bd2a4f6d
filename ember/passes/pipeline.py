"""The default optimization pipeline: an ordered list of named passes, each with its reason."""

from __future__ import annotations

from ember.passes.dce import remove_dead_nodes
from ember.passes.fold_constants import fold_constants
from ember.passes.manager import PassFn
from ember.passes.simplify import materialize_outputs, remove_identities

DEFAULT_PIPELINE: list[tuple[str, PassFn]] = [
    # Identity/Dropout are no-ops at inference; removing them lets producers write consumers' inputs.
    ("remove_identities", remove_identities),
    # Anything computable from weights alone is computed once, here, instead of on every inference.
    ("fold_constants", fold_constants),
    # Nodes whose results nobody reads cost time and memory.
    ("remove_dead_nodes", remove_dead_nodes),
    # Every output needs its own slot in the mutable region, written by some node.
    ("materialize_outputs", materialize_outputs),
]
