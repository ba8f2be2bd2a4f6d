"""The pass lists of quantized compiles and of profiling runs.

Both run the float pipeline without elementwise fusion: the profile then names every tensor the
quantizer may want (an Add before a Relu included), and the quantizer sees single ONNX ops it can wrap
in QuantizeLinear/DequantizeLinear. After the rewrite, fold_qdq (ember/passes/fold_qdq.py, where the
default pipeline has it) turns QDQ patterns into integer kernels; only then are the remaining
elementwise chains fused. Without fold_qdq the QDQ graph runs as simulated quantization.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ember.passes.manager import PassFn
from ember.passes.pipeline import DEFAULT_PIPELINE

if TYPE_CHECKING:
    from ember.config import CompileOptions

# Passes that must see the quantized graph: fold_qdq (QDQ patterns -> integer kernels), the dead-node
# sweep after it, elementwise fusion and output materialisation. Everything before them is the float part.
_AFTER_REWRITE = ("fold_qdq", "remove_dead_nodes", "fuse_elementwise", "materialize_outputs")


def float_passes() -> list[tuple[str, PassFn]]:
    return [(n, fn) for n, fn in DEFAULT_PIPELINE if n not in ("fold_qdq", "fuse_elementwise", "materialize_outputs")]


def _tail() -> list[tuple[str, PassFn]]:
    return [(n, fn) for n, fn in DEFAULT_PIPELINE if n in _AFTER_REWRITE]


def profiling_pipeline() -> list[tuple[str, PassFn]]:
    """The float graph as the quantizer will see it (no fusion of elementwise chains)."""
    return float_passes() + [(n, fn) for n, fn in _tail() if n == "materialize_outputs"]


def compile_pipeline(options: CompileOptions, model_sha: str) -> list[tuple[str, PassFn]]:
    """float passes -> QDQ rewrite -> fold_qdq -> [weight compression] -> elementwise fusion -> outputs."""
    passes = float_passes()
    if options.quantize:
        from ember.quant.quantize import QuantConfig, quantize_graph, read_profile

        profile = read_profile(options.profile, model_sha) if options.profile else None
        if profile is None:
            from ember.errors import OptionError

            raise OptionError("--quantize int8 needs --profile FILE (make one with `ember profile MODEL DATA...`)")
        config = QuantConfig.from_options(options)
        passes.append(("quantize", lambda g: quantize_graph(g, profile, config)))
    tail = _tail()
    if options.weights:
        from ember.quant.weights import compress_weights

        # After fold_qdq, which would turn the widening DequantizeLinear nodes back into float constants.
        kind = options.weights
        at = next((i for i, (n, _) in enumerate(tail) if n == "fuse_elementwise"), len(tail))
        tail.insert(at, ("compress_weights", lambda g: compress_weights(g, kind)))
    return passes + tail


def warn(message: str) -> None:
    print(f"ember: warning: {message}", file=sys.stderr)
