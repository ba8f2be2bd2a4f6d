"""The default optimization pipeline: an ordered list of named passes, each with its reason."""

from __future__ import annotations

from ember.passes.dce import remove_dead_nodes
from ember.passes.fold_batchnorm import fold_batchnorm
from ember.passes.fold_constants import fold_constants
from ember.passes.fold_qdq import fold_qdq
from ember.passes.fuse_activation import fuse_activation
from ember.passes.fuse_elementwise import fuse_elementwise
from ember.passes.manager import PassFn
from ember.passes.simplify import materialize_outputs, remove_identities

DEFAULT_PIPELINE: list[tuple[str, PassFn]] = [
    # Identity/Dropout are no-ops at inference; removing them lets producers write consumers' inputs.
    ("remove_identities", remove_identities),
    # Anything computable from weights alone is computed once, here, instead of on every inference.
    ("fold_constants", fold_constants),
    # Inference BatchNorm (and per-channel constant Mul/Add) after Conv/Gemm rescales weights and bias: fold it.
    # Runs before fuse_activation (a fused activation blocks the fold) and no folding may follow fusion
    # (the `_act` attribute does not survive conversion back to ONNX).
    ("fold_batchnorm", fold_batchnorm),
    # An activation on a Conv/Gemm/MatMul output is applied in the kernel epilogue: one pass, one buffer fewer.
    ("fuse_activation", fuse_activation),
    # QDQ models: DequantizeLinear -> Conv/Gemm/Add/... -> QuantizeLinear become integer kernels on int8 tensors.
    ("fold_qdq", fold_qdq),
    # Nodes whose results nobody reads cost time and memory.
    ("remove_dead_nodes", remove_dead_nodes),
    # Chains of elementwise ops become one loop: intermediates stay in registers instead of memory.
    ("fuse_elementwise", fuse_elementwise),
    # Every output needs its own slot in the mutable region, written by some node.
    ("materialize_outputs", materialize_outputs),
]
