"""A fixed-size histogram whose range grows as data arrives, re-binned exactly (Glow grows its range too).

One pass over the calibration data: images are decoded once and nothing is kept in memory. The range
starts as the first batch's [min, max]; when later data falls outside it, the bins widen by an integer
factor k and the origin moves by a whole number of old bins, so every old bin falls entirely inside
one new bin and merging loses no count (the price: data seen early is known at the final resolution
only, which two passes would avoid at twice the inference cost).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

BINS = 2048


class Histogram:
    def __init__(self, bins: int = BINS) -> None:
        self.bins = bins
        self.counts = np.zeros(bins, np.int64)
        self.lo = 0.0
        self.width = 0.0  # 0 until the first data
        self.min = math.inf
        self.max = -math.inf
        self.count = 0
        self.nonfinite = 0

    @property
    def hi(self) -> float:
        return self.lo + self.bins * self.width

    def edges(self) -> np.ndarray:
        return self.lo + self.width * np.arange(self.bins + 1, dtype=np.float64)

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float32).reshape(-1)
        finite = np.isfinite(x)
        if not finite.all():
            self.nonfinite += int(x.size - finite.sum())
            x = x[finite]
        if x.size == 0:
            return
        mn, mx = float(x.min()), float(x.max())
        self.min, self.max = min(self.min, mn), max(self.max, mx)
        self.count += int(x.size)
        if self.width == 0.0:
            self.lo = mn
            span = mx - mn
            # A constant first batch still needs a positive width: a tiny one, widened later as needed.
            self.width = span / self.bins if span > 0 else max(abs(mn), 1.0) * 2.0**-30
        if mn < self.lo or mx > self.hi:
            self._grow(mn, mx)
        idx = np.floor((x.astype(np.float64) - self.lo) / self.width).astype(np.int64)
        np.clip(idx, 0, self.bins - 1, out=idx)
        self.counts += np.bincount(idx, minlength=self.bins)

    def _grow(self, mn: float, mx: float) -> None:
        lo, w = self.lo, self.width
        new_min, new_max = min(mn, lo), max(mx, self.hi)
        shift = math.ceil((lo - new_min) / w) if new_min < lo else 0  # old bins the origin moves left
        k = max(1, math.ceil((new_max - new_min) / (self.bins * w)))
        while lo - shift * w + self.bins * k * w < new_max:
            k += 1
        # Old bin i lies inside new bin (i + shift) // k: merge by summing groups.
        target = (np.arange(self.bins) + shift) // k
        self.counts = np.bincount(target, weights=self.counts, minlength=self.bins)[: self.bins].astype(np.int64)
        self.lo = lo - shift * w
        self.width = w * k

    def to_yaml(self) -> dict[str, Any]:
        return {"lo": float(self.lo), "hi": float(self.hi), "counts": [int(c) for c in self.counts]}

    @staticmethod
    def from_yaml(entry: dict[str, Any], bins_field: dict[str, Any]) -> Histogram:
        counts = np.asarray(bins_field["counts"], np.int64)
        h = Histogram(len(counts))
        h.counts = counts
        h.lo = float(bins_field["lo"])
        h.width = (float(bins_field["hi"]) - h.lo) / len(counts)
        h.min, h.max, h.count = float(entry["min"]), float(entry["max"]), int(entry["count"])
        return h
