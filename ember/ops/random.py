"""Seeded random operators: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial and training-mode
Dropout (kernels/random.c).

ember draws what the ONNX reference draws: a fresh np.random.RandomState(seed) per node call (MT19937),
rand() / randn() rounded to the output type and then scaled and shifted in that type, binomial(1, p), and
uniform(0, 1) >= ratio for Dropout's mask. Every node has an integer seed in [0, 2^32) by the time it gets
here (the frontend draws one at compile time where the model gives none), so a node is a pure function of
its inputs and attributes: two nodes alike in inputs and attributes (seed included) give the same values,
so merging them would be right, and unseeded nodes never look alike (each gets a seed of its own). These
ops still have no `evaluate`, so nothing folds them: a folded one would store its whole output as weights,
where the generator is a few hundred bytes of code and 2.5 KB of scratch.

Canonical forms (attributes):
- RandomUniform / RandomNormal: no inputs; `dtype` (DType, float32, float64 or float16), `shape`, `seed` (int),
  `low`/`high` or `mean`/`scale` (floats).
- RandomUniformLike / RandomNormalLike: input x (only its shape is read); the same attributes.
- Bernoulli: input p (float32 or float64, each in [0, 1]); `seed`; output bool (the frontend casts it to
  the model's `dtype`).
- Multinomial: input x [batch, classes] (float32 or float64 log-probabilities, unnormalized); `sample_size`,
  `seed`, `dtype` (int32 or int64). ONNX has no reference: ember draws by the inverse CDF (kernels/random.c).
- TrainingDropout: input x (float32 or float64); `ratio` (float, in (0, 1)), `scale` (1 / (1 - ratio) as
  the reference rounds it), `seed`; outputs y and an optional bool mask.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import inp, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register

# sizeof(ember_mt_state): 624 words of state, the position, the cached-normal flag and value.
STATE_BYTES = 624 * 4 + 4 + 4 + 8
_SUFFIX = {DType.FLOAT32: "f32", DType.FLOAT64: "f64"}


def _scratch(node: Node) -> int:
    return STATE_BYTES


def _float_type(node: Node, dtype: DType) -> str:
    if dtype not in _SUFFIX:
        raise UnsupportedOperatorError(node.op, node.name, f"{dtype.short} values (float32 or float64)")
    return _SUFFIX[dtype]


def _seed(node: Node, k: KernelEmitter) -> str:
    """The seed as a C literal; a comment above the call says when it was drawn at compile time."""
    seed = int(node.attrs["seed"])
    if node.attrs.get("seed_drawn"):
        k.line(f"/* {node.op}: the model gives no seed; {seed} was drawn at compile time */")
    return f"{seed}u"


def _out_dtype(node: Node) -> DType:
    dtype = node.attrs.get("dtype")
    if dtype is None:
        dtype = inp(node, 0).dtype if node.inputs else DType.FLOAT32
    return dtype


def _infer_generator(node: Node) -> list[TensorType | None]:
    shape = node.attrs["shape"] if not node.op.endswith("Like") else inp(node, 0).shape
    if any(d < 0 for d in shape):
        raise ShapeError(f"node '{node.name}' ({node.op}): shape {list(shape)} has a negative dimension")
    dtype = _out_dtype(node)
    if dtype is not DType.FLOAT16:
        _float_type(node, dtype)
    return [typed(dtype, shape)]


def _lower_generator(node: Node, k: KernelEmitter) -> None:
    out = node.outputs[0]
    assert out is not None
    normal = node.op.startswith("RandomNormal")
    a, b = ("scale", "mean") if normal else ("high", "low")
    hi, lo = np.float32(node.attrs.get(a, 1.0)), np.float32(node.attrs.get(b, 0.0))
    # The reference's attributes are float32 scalars: it multiplies by high - low (a float32 difference) and
    # adds low, each step in the wider of float32 and the output type, rounded to the output type.
    scale, shift = (hi, lo) if normal else (hi - lo, lo)
    if out.dtype is DType.FLOAT16:
        k.call("ember_random_f16", k.out(0), out.type.numel, _seed(node, k), int(normal), _lit(scale),
               _lit(shift), k.scratch("void"))
        return
    suffix = _float_type(node, out.dtype)
    scale, shift = out.dtype.np.type(scale), out.dtype.np.type(shift)
    kernel = "ember_random_normal" if normal else "ember_random_uniform"
    k.need(kernel)
    k.line(f"{kernel}_{suffix}({k.out(0)}, {out.type.numel}, {_seed(node, k)}, "
           f"{_lit(scale)}, {_lit(shift)}, {k.scratch('void')});")


def _lit(x: np.floating) -> str:
    if x.dtype == np.float32:
        return f"{float(x)!r}f"
    return f"{float(x)!r}"


for _name in ("RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike"):
    register(OpDef(_name, infer=_infer_generator, lower=_lower_generator, scratch=_scratch,
                   kernels=("ember_random_normal" if "Normal" in _name else "ember_random_uniform",
                            "ember_random_f16")))


def _infer_bernoulli(node: Node) -> list[TensorType | None]:
    p = inp(node, 0)
    _float_type(node, p.dtype)
    return [typed(DType.BOOL, p.shape)]


def _lower_bernoulli(node: Node, k: KernelEmitter) -> None:
    p = inp(node, 0)
    k.need("ember_bernoulli")
    k.line(f"ember_bernoulli_{_SUFFIX[p.dtype]}({k.out(0, 'uint8_t')}, {k.inp(0)}, {p.type.numel}, "
           f"{_seed(node, k)}, {k.scratch('void')});")


register(OpDef("Bernoulli", infer=_infer_bernoulli, lower=_lower_bernoulli, scratch=_scratch,
               kernels=("ember_bernoulli",)))


def _infer_dropout(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    _float_type(node, x.dtype)
    mask = node.outputs[1] if len(node.outputs) > 1 else None
    return [typed(x.dtype, x.shape), typed(DType.BOOL, x.shape) if mask is not None else None]


def _keep_from(ratio: float) -> int:
    """The smallest 53-bit draw k with k / 2^53 >= ratio: the mask's test in integers."""
    return math.ceil(Fraction(ratio) * 2**53)


def _lower_dropout(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    suffix = _float_type(node, x.dtype)
    mask = node.outputs[1] if len(node.outputs) > 1 else None
    k.need("ember_dropout_train")
    k.line(f"ember_dropout_train_{suffix}({k.out(0)}, {k.ptr(mask, 'uint8_t')}, {k.inp(0)}, {x.type.numel}, "
           f"{_seed(node, k)}, {_keep_from(float(node.attrs['ratio']))}ull, "
           f"{_lit(x.dtype.np.type(node.attrs['scale']))}, "
           f"{k.scratch('void')});")


register(OpDef("TrainingDropout", infer=_infer_dropout, lower=_lower_dropout, scratch=_scratch,
               kernels=("ember_dropout_train",)))


def _infer_multinomial(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    _float_type(node, x.dtype)
    if x.type.rank != 2 or x.shape[1] < 1:
        raise ShapeError(f"node '{node.name}' (Multinomial): input {list(x.shape)} must be [batch, classes] "
                         "with at least one class")
    dtype = node.attrs.get("dtype", DType.INT32)
    if dtype not in (DType.INT32, DType.INT64):
        raise UnsupportedOperatorError("Multinomial", node.name, f"dtype {dtype.short} (int32 or int64)")
    samples = int(node.attrs.get("sample_size", 1))
    if samples < 1:
        raise ShapeError(f"node '{node.name}' (Multinomial): sample_size {samples} must be positive")
    return [typed(dtype, (x.shape[0], samples))]


def _lower_multinomial(node: Node, k: KernelEmitter) -> None:
    x, out = inp(node, 0), node.outputs[0]
    assert out is not None
    rows, classes = x.shape
    k.need("ember_multinomial")
    fn = f"ember_multinomial_{_SUFFIX[x.dtype]}_{'i64' if out.dtype is DType.INT64 else 'i32'}"
    k.line(f"{fn}({k.out(0)}, {k.inp(0)}, {rows}, {classes}, {int(node.attrs.get('sample_size', 1))}, "
           f"{_seed(node, k)}, {k.scratch('void')});")


# Multinomial has no ONNX reference implementation; ember's draw is documented in kernels/random.c
# (inverse CDF of the softmax weights, numpy's searchsorted on one random_sample per draw).
register(OpDef("Multinomial", infer=_infer_multinomial, lower=_lower_multinomial,
               scratch=lambda n: STATE_BYTES + 8 * inp(n, 0).shape[-1], kernels=("ember_multinomial",)))
