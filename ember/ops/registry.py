"""The operator registry: a dict filled by @register in each ember/ops/<family>.py module."""

from __future__ import annotations

import importlib

from ember.ops.opdef import OpDef

OPS: dict[str, OpDef] = {}

# Each family module registers its ops on import. Adding a family = one line here.
FAMILIES = (
    "elementwise", "activation", "matmul", "conv", "pool", "norm", "reduce", "shape", "movement",
    "resize", "misc", "quantize", "qlinear", "qshifted", "qpointwise",
)


def register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"op {op.name} registered twice")
    OPS[op.name] = op
    return op


def load_all() -> dict[str, OpDef]:
    for fam in FAMILIES:
        try:
            importlib.import_module(f"ember.ops.{fam}")
        except ModuleNotFoundError as e:
            if e.name != f"ember.ops.{fam}":
                raise
    return OPS


def get(name: str) -> OpDef:
    load_all()
    return OPS[name]
