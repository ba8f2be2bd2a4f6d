"""SPACE_TO_BATCH_ND -> CONV_2D / DEPTHWISE_CONV_2D -> BATCH_TO_SPACE_ND, TensorFlow 1's atrous convolution,
found before conversion and compiled as one dilated convolution instead of three operators and six layout
moves.

Why it is exact: with block b and paddings (p0, p1), the space-to-batch image of phase i holds rows
P[i::b] of the padded input P; a VALID, stride-1 convolution of one phase gives at row y
sum_t P[(y + t) * b + i] w[t], and batch-to-space puts it at row y * b + i, so row n of the result is
sum_t P[n + t * b] w[t]: a convolution of P with dilation b. The crops then trim its ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

_CONVS = ("CONV_2D", "DEPTHWISE_CONV_2D")


@dataclass
class Atrous:
    """A fold: the convolution operator `conv` reads the space-to-batch's input and writes the
    batch-to-space's output, with dilation `block`, explicit `pads` ([top, left, bottom, right]) and `crops`."""

    s2b: int
    conv: int
    b2s: int
    block: list[int]
    pads: list[int]
    crops: list[int]


def find_atrous(sg: Any, names: list[str], const: Any, graph_outputs: set[int]) -> dict[int, Atrous]:
    """conv operator index -> its fold, for each chain whose middle tensors nothing else reads. `const(t)`
    is tensor t's constant contents or None."""
    ops = [sg.Operators(i) for i in range(sg.OperatorsLength())]
    readers: dict[int, list[int]] = {}
    for i, op in enumerate(ops):
        for t in (op.InputsAsNumpy().tolist() if op.InputsLength() else []):
            readers.setdefault(t, []).append(i)
    folds = {}
    for i, op in enumerate(ops):
        if names[i] != "SPACE_TO_BATCH_ND" or op.InputsLength() < 3:
            continue
        mid = int(op.Outputs(0))
        users = readers.get(mid, [])
        if len(users) != 1 or mid in graph_outputs or names[users[0]] not in _CONVS:
            continue
        c = users[0]
        conv = ops[c]
        if int(conv.Inputs(0)) != mid or not _plain_valid(conv, names[c]):
            continue
        out = int(conv.Outputs(0))
        users = readers.get(out, [])
        if len(users) != 1 or out in graph_outputs or names[users[0]] != "BATCH_TO_SPACE_ND":
            continue
        b = users[0]
        block, pads = const(int(op.Inputs(1))), const(int(op.Inputs(2)))
        block2, crops = const(int(ops[b].Inputs(1))), const(int(ops[b].Inputs(2)))
        if any(a is None for a in (block, pads, block2, crops)) or np.size(block) != 2:
            continue
        if not np.array_equal(block, block2) or int(ops[b].Inputs(0)) != out:
            continue
        p, k = np.asarray(pads).reshape(2, 2), np.asarray(crops).reshape(2, 2)
        folds[c] = Atrous(i, c, b, [int(v) for v in np.asarray(block).reshape(-1)],
                          [int(p[0, 0]), int(p[1, 0]), int(p[0, 1]), int(p[1, 1])],
                          [int(k[0, 0]), int(k[1, 0]), int(k[0, 1]), int(k[1, 1])])
    return folds


def _plain_valid(op: Any, name: str) -> bool:
    """A VALID convolution of stride 1 and dilation 1 (what atrous convolution runs on each phase)."""
    import tflite

    table = op.BuiltinOptions()
    if table is None:
        return False
    o = tflite.Conv2DOptions() if name == "CONV_2D" else tflite.DepthwiseConv2DOptions()
    o.Init(table.Bytes, table.Pos)
    return (o.Padding() == tflite.Padding.VALID and o.StrideH() == o.StrideW() == 1
            and o.DilationHFactor() == o.DilationWFactor() == 1)
