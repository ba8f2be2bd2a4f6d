"""The operator registry: a dict filled by @register in each ember/ops/<family>.py module."""

from __future__ import annotations

import importlib

from ember.ir.graph import Node
from ember.ops.epilogue import Epilogue
from ember.ops.opdef import OpDef

OPS: dict[str, OpDef] = {}

# Each family module registers its ops on import. Adding a family = one line here.
FAMILIES = (
    "elementwise", "activation", "matmul", "conv", "pool", "norm", "reduce", "shape", "movement",
    "resize", "misc", "quantize", "qlinear", "qshifted", "qwino", "qpointwise", "qconv_add", "ml", "dynamic", "bitwise",
    "loss",
    "signal", "einsum", "normalize", "spatial", "linalg", "indexing", "reorder", "control", "attention",
    "linear_attention", "recurrent", "random", "svdf", "lstm_int", "q16", "irblock", "nhwc",
    "split",  # last: how the other families' kernel calls divide among threads (--threads)
)


def register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"op {op.name} registered twice")
    OPS[op.name] = op
    return op


_loaded = False


def load_all() -> dict[str, OpDef]:
    global _loaded
    if not _loaded:  # get() runs this for every lookup: import the families once
        for fam in FAMILIES:
            try:
                importlib.import_module(f"ember.ops.{fam}")
            except ModuleNotFoundError as e:
                if e.name != f"ember.ops.{fam}":
                    raise
        _loaded = True
    return OPS


def get(name: str) -> OpDef:
    load_all()
    return OPS[name]


def as_epilogue(node: Node) -> Epilogue | None:
    """What an activation node is as a kernel epilogue (None: not an activation a kernel can apply)."""
    fn = get(node.op).epilogue
    return fn(node) if fn is not None else None


def activation_clamp(node: Node) -> tuple[float, float] | None:
    """The real interval an activation node clamps to, if clamping is all it does (Relu, Clip)."""
    spec = as_epilogue(node)
    return spec.clamp if spec is not None else None
