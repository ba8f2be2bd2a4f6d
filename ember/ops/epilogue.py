"""Activation epilogues: an activation applied by the kernel of the op that produces its input.

An activation OpDef says, through `OpDef.epilogue`, what it is as an epilogue (an `Epilogue`: kind and
two constants); an OpDef with `takes_epilogue` (Conv, ConvTranspose, Gemm, MatMul and their algorithm
variants) applies one to each output tile while it is in cache. passes/fuse_activation.py moves the
activation into its producer's `attrs["_act"]`; the kernels read (kind, alpha, beta), the kinds being
kernels/activation.c's EMBER_ACT_* values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ember.codegen.emitter import literal
from ember.ir.dtypes import DType
from ember.ir.graph import Node

# kernels/activation.c: EMBER_ACT_<NAME>
KIND_CODES = {
    "Relu": 1, "LeakyRelu": 2, "Clip": 3, "Sigmoid": 4, "Tanh": 5, "HardSigmoid": 6, "HardSwish": 7, "Elu": 8,
    "Celu": 9, "Swish": 10, "Softsign": 11, "ThresholdedRelu": 12, "Shrink": 13,
}
EPILOGUE_ATTR = "_act"


@dataclass(frozen=True)
class Epilogue:
    kind: str  # a key of KIND_CODES
    alpha: float = 0.0  # LeakyRelu/Elu/HardSigmoid/Celu/Swish/ThresholdedRelu alpha; Clip's lower bound; Shrink bias
    beta: float = 0.0  # HardSigmoid beta; Clip's upper bound; Shrink lambd

    def __post_init__(self) -> None:
        if self.kind not in KIND_CODES:
            raise ValueError(f"no kernel epilogue applies {self.kind}")

    @property
    def clamp(self) -> tuple[float, float] | None:
        """The real-valued interval this epilogue clamps to, if that is all it does (Relu, Clip)."""
        if self.kind == "Relu":
            return 0.0, math.inf
        if self.kind == "Clip":
            return self.alpha, self.beta
        return None


def epilogue_of(node: Node) -> Epilogue | None:
    """The activation a node applies in its kernel (set by fuse_activation), if any."""
    return node.attrs.get(EPILOGUE_ATTR)


def epilogue_args(node: Node) -> tuple[int, str, str]:
    """C arguments (kind, alpha, beta) of the node's fused activation; kind 0 = none."""
    e = epilogue_of(node)
    if e is None:
        return 0, "0.0f", "0.0f"
    return KIND_CODES[e.kind], literal(e.alpha, DType.FLOAT32), literal(e.beta, DType.FLOAT32)
