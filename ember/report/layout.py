"""A layered drawing of a dataflow graph (no graphviz): each box one row below its deepest input, boxes in a row
ordered by the mean column of their inputs (one barycentre sweep), so chains stay straight and branches sit
side by side."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Placed:
    x: float  # centre
    y: float  # top
    layer: int


def layered(preds: list[list[int]], box_w: float, box_h: float, gap_x: float, gap_y: float,
            first_layer: list[int] | None = None) -> tuple[list[Placed], float, float]:
    """`preds[i]`: indices (< i, topological order) of box i's inputs. Returns each box's place and the
    drawing's width and height. `first_layer`: boxes that must sit in the top row (graph inputs)."""
    n = len(preds)
    layer = [0] * n
    for i, ps in enumerate(preds):
        layer[i] = 1 + max((layer[p] for p in ps), default=-1)
    for i in first_layer or ():
        layer[i] = 0
    rows: dict[int, list[int]] = {}
    for i in range(n):
        rows.setdefault(layer[i], []).append(i)
    column: dict[int, float] = {}
    for d in sorted(rows):
        row = rows[d]
        order = {i: float(k) for k, i in enumerate(row)}

        def key(i: int, order: dict[int, float] = order) -> tuple[float, int]:
            cols = [column[p] for p in preds[i] if p in column]  # mean column of its inputs
            return (sum(cols) / len(cols) if cols else order[i], i)

        row.sort(key=key)
        for k, i in enumerate(row):
            column[i] = float(k)
    widest = max((len(r) for r in rows.values()), default=1)
    width = widest * (box_w + gap_x) + gap_x
    places = [Placed(0.0, 0.0, 0)] * n
    for d, row in rows.items():
        left = (width - len(row) * (box_w + gap_x) + gap_x) / 2  # each row centred
        for k, i in enumerate(row):
            places[i] = Placed(left + k * (box_w + gap_x) + box_w / 2, gap_y + d * (box_h + gap_y), d)
    height = (max(rows, default=0) + 1) * (box_h + gap_y) + gap_y
    return places, width, height
