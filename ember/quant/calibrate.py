"""Calibration: the clipping range [lo, hi] to quantize a tensor over, from its profile histogram.

- minmax: the observed range (Glow's choice): nothing clips, but one outlier stretches every step.
- percentile: the range that keeps all but (100 - p)% of the values (p = 99.99 by default).
- kl: TensorRT's entropy calibration: the threshold whose quantized distribution is closest (KL
  divergence) to the clipped original.
- mse: the threshold minimising the expected squared error, rounding (step^2 / 12 per value inside)
  plus clipping ((|x| - T)^2 per value outside).

percentile, kl and mse work on the histogram of magnitudes |x| and return a threshold T; the range is
then [max(min, -T), min(max, T)]. `levels` is the number of quantization steps that cover [0, T]
(127 for int8 around zero, 255 for a non-negative tensor in uint8 or asymmetric int8).
"""

from __future__ import annotations

import numpy as np

from ember.errors import OptionError
from ember.quant.histogram import Histogram

METHODS = ("minmax", "percentile", "kl", "mse")
MAX_CLIPPED = 0.01  # kl: the largest fraction of values a threshold may clip


def magnitudes(h: Histogram) -> tuple[np.ndarray, float]:
    """(counts, bin width) of |x| over [0, max |x|] with as many bins as `h` (bin centres re-binned)."""
    top = max(abs(h.min), abs(h.max))
    if top == 0.0 or h.count == 0:
        return np.zeros(h.bins, np.int64), 0.0
    width = top / h.bins
    centres = np.abs(h.lo + (np.arange(h.bins) + 0.5) * h.width)
    idx = np.minimum((centres / width).astype(np.int64), h.bins - 1)
    return np.bincount(idx, weights=h.counts, minlength=h.bins), width


def percentile_threshold(counts: np.ndarray, width: float, p: float) -> float:
    total = counts.sum()
    if total == 0:
        return 0.0
    cum = np.cumsum(counts)
    i = int(np.searchsorted(cum, total * p / 100.0))
    return (min(i, len(counts) - 1) + 1) * width


def kl_threshold(counts: np.ndarray, width: float, levels: int, candidates: int = 256) -> float:
    """The entropy-calibration threshold (TensorRT): min KL(P || Q) over thresholds of >= `levels` bins."""
    nbins = len(counts)
    counts = counts.astype(np.float64)
    # The spike of exact zeros after a ReLU would dominate both distributions and favour tiny thresholds.
    counts[0] = counts[1]
    if counts.sum() == 0 or levels >= nbins:
        return nbins * width
    best, best_i = np.inf, nbins
    clipped = _above(counts)  # clipped[i - 1]: the mass above a threshold of i bins
    for i in np.unique(np.linspace(levels, nbins, candidates).astype(np.int64)):
        if clipped[i - 1] > MAX_CLIPPED * counts.sum():
            # Folded into one bin, a large clipped mass makes P and Q alike (KL near 0) however much it
            # loses: data far from zero would get a threshold at their minimum.
            continue
        src = counts[:i]
        ref = src.copy()
        ref[-1] += counts[i:].sum()  # the clipped values pile up in the last bin
        group = (np.arange(i) * levels) // i  # which of the `levels` quantized bins each source bin joins
        used = src > 0
        total = np.bincount(group, weights=src, minlength=levels)
        nonempty = np.bincount(group, weights=used, minlength=levels)
        # Each quantized bin's mass, spread back evenly over the source bins that held values.
        q = np.where(used, total[group] / np.maximum(nonempty[group], 1), 0.0)
        p = ref / ref.sum()
        q = q / q.sum()
        mask = p > 0
        kl = float(np.sum(p[mask] * np.log(p[mask] / np.maximum(q[mask], 1e-12))))
        if kl < best:
            best, best_i = kl, int(i)
    return (best_i + 0.5) * width if best_i < nbins else nbins * width


def mse_threshold(counts: np.ndarray, width: float, levels: int) -> float:
    """Threshold T at a bin edge minimising sum(count * error^2): step^2/12 inside, (c - T)^2 outside."""
    nbins = len(counts)
    c = counts.astype(np.float64)
    if c.sum() == 0:
        return nbins * width
    centres = (np.arange(nbins) + 0.5) * width
    t = (np.arange(nbins) + 1) * width  # candidate T: the upper edge of bin i
    inside = np.cumsum(c)
    # Sums over the bins above each candidate, for sum(n (x - T)^2) = S2 - 2 T S1 + T^2 S0.
    s0, s1, s2 = _above(c), _above(c * centres), _above(c * centres**2)
    clip_err = s2 - 2 * t * s1 + t**2 * s0
    step = t / levels
    err = inside * step**2 / 12.0 + clip_err
    return float(t[int(np.argmin(err))])


def _above(a: np.ndarray) -> np.ndarray:
    """out[i] = sum(a[i + 1:])."""
    return np.append(a[::-1].cumsum()[::-1], 0.0)[1:]


def clip_range(h: Histogram, method: str, levels: int, percentile: float = 99.99) -> tuple[float, float]:
    """The range to quantize over, by `method`; always within the observed [min, max]."""
    if method not in METHODS:
        raise OptionError(f"--calibration must be one of {', '.join(METHODS)}, not '{method}'")
    if h.count == 0:
        return 0.0, 0.0
    if method == "minmax":
        return h.min, h.max
    counts, width = magnitudes(h)
    if width == 0.0:
        return h.min, h.max
    if method == "percentile":
        t = percentile_threshold(counts, width, percentile)
    elif method == "kl":
        t = kl_threshold(counts, width, levels)
    else:
        t = mse_threshold(counts, width, levels)
    return max(h.min, -t), min(h.max, t)
