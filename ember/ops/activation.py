"""Activation functions (elementwise, fusable) and Softmax/LogSoftmax (kernels in softmax.c)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ember.codegen.emitter import ExprHandler, KernelEmitter
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.elementwise import FLOATS, INTEGERS, erf, require_dtypes
from ember.ops.epilogue import Epilogue
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import inp, same_as_input
from ember.ops.matmul import float16_via_f32
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register

Activation = Callable[[np.ndarray, Node], np.ndarray]


def _act(name: str, fn, np_fn: Activation, allowed: frozenset[DType] | None = None, **facts) -> OpDef:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fn(h, xs[0], n)

    def evaluate(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
        x = np.asarray(xs[0])
        with np.errstate(all="ignore"):
            return [np.asarray(np_fn(x, node)).astype(x.dtype)]

    infer = same_as_input if allowed is None else require_dtypes(same_as_input, allowed)
    return register(OpDef(name, expr=expr, inplace=True, infer=infer, evaluate=evaluate, **facts))


def _attr(n: Node, key: str, default: float) -> float:
    return float(n.attrs.get(key, default))


# numpy forms, computed in the input's type in the same order of operations as ONNX's reference.
def _np_leaky(x: np.ndarray, n: Node) -> np.ndarray:
    sign = (x > 0).astype(x.dtype)
    sign -= ((sign - 1) * _attr(n, "alpha", 0.01)).astype(x.dtype)
    return x * sign


def _np_sigmoid(x: np.ndarray, n: Node) -> np.ndarray:
    e = np.exp(x)
    return np.where(x > 0, 1.0 / (1.0 + np.exp(-x)), e / (1.0 + e))


def _np_hardsigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.maximum(0, np.minimum(1, x * alpha + beta)).astype(x.dtype)


def _np_gelu(x: np.ndarray, n: Node) -> np.ndarray:
    t = x.dtype.type
    if n.attrs.get("approximate", "none") == "tanh":
        inner = np.sqrt(t(0.63661975)) * (x + t(0.044715) * np.power(x, t(3)))
        return (t(0.5) * x) * (t(1) + np.tanh(inner))
    return (t(0.5) * x) * (t(1) + erf(x / np.sqrt(t(2))))


def _clamp01(h: ExprHandler, y: str) -> str:
    """min(max(y, 0), 1), evaluating y once."""
    t = h.let(y)
    zero, one = h.lit(0), h.lit(1)
    return f"({t} < {zero} ? {zero} : {t} > {one} ? {one} : {t})"


# `x < 0 ? 0 : x` rather than `x > 0 ? x : 0`: NaN must pass through like numpy.maximum(x, 0).
_SELU_ALPHA, _SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875

_act("Relu", lambda h, x, n: f"({x} < {h.lit(0)} ? {h.lit(0)} : {x})", lambda x, n: np.maximum(x, 0),
     epilogue=lambda n: Epilogue("Relu"), int8=Int8.ACTIVATION)
_act("LeakyRelu", lambda h, x, n: f"({x} < {h.lit(0)} ? {x} * {h.lit(_attr(n, 'alpha', 0.01))} : {x})", _np_leaky,
     epilogue=lambda n: Epilogue("LeakyRelu", _attr(n, "alpha", 0.01)), int8=Int8.ACTIVATION)
_act("Elu", lambda h, x, n: f"({x} < {h.lit(0)} ? {h.lit(_attr(n, 'alpha', 1.0))} * {h.fn('expm1', x)} : {x})",
     lambda x, n: np.where(x > 0, x, _attr(n, "alpha", 1.0) * np.expm1(x)),
     epilogue=lambda n: Epilogue("Elu", _attr(n, "alpha", 1.0)), int8=Int8.LUT)
_act("Selu", lambda h, x, n: (
    f"({x} > {h.lit(0)} ? {h.lit(_attr(n, 'gamma', _SELU_GAMMA))} * {x} : "
    f"{h.lit(_attr(n, 'gamma', _SELU_GAMMA) * _attr(n, 'alpha', _SELU_ALPHA))}"
    f" * {h.fn('expm1', x)})"),
     lambda x, n: np.where(x > 0, x, _attr(n, "alpha", _SELU_ALPHA) * np.expm1(x)) * _attr(n, "gamma", _SELU_GAMMA),
     int8=Int8.LUT)
_act("Sigmoid", lambda h, x, n: h.fn("sigmoid", x), _np_sigmoid,
     epilogue=lambda n: Epilogue("Sigmoid"), int8=Int8.ACTIVATION)
_act("Tanh", lambda h, x, n: h.fn("tanh", x), lambda x, n: np.tanh(x),
     epilogue=lambda n: Epilogue("Tanh"), int8=Int8.ACTIVATION)
_act("HardSigmoid", lambda h, x, n: _clamp01(
    h, f"({h.lit(_attr(n, 'alpha', 0.2))} * {x} + {h.lit(_attr(n, 'beta', 0.5))})"),
     lambda x, n: _np_hardsigmoid(x, _attr(n, "alpha", 0.2), _attr(n, "beta", 0.5)),
     epilogue=lambda n: Epilogue("HardSigmoid", _attr(n, "alpha", 0.2), _attr(n, "beta", 0.5)),
     int8=Int8.ACTIVATION)
# HardSwish = x * HardSigmoid(x) with alpha = 1/6, beta = 0.5 (fixed by the spec).
_act("HardSwish", lambda h, x, n: f"({x} * {_clamp01(h, f'({h.lit(1.0 / 6.0)} * {x} + {h.lit(0.5)})')})",
     lambda x, n: x * _np_hardsigmoid(x, float(np.float32(1.0 / 6.0)), 0.5),
     epilogue=lambda n: Epilogue("HardSwish"), int8=Int8.ACTIVATION)

def _softplus(h: ExprHandler, x: str, n: Node) -> str:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x, no lost digits for small e^x.
    t = h.let(x)
    zero = h.lit(0)
    ax = h.let(f"({t} < {zero} ? -{t} : {t})")
    return f"(({t} > {zero} ? {t} : {zero}) + {h.fn('log1p', h.fn('exp', f'-{ax}'))})"


_act("Softplus", _softplus, lambda x, n: np.logaddexp(0, x), int8=Int8.LUT)


def _mish(h: ExprHandler, x: str, n: Node) -> str:
    t = h.let(x)
    return f"({t} * {h.fn('tanh', _softplus(h, t, n))})"


# Mish = x * tanh(softplus(x)) (opset 18).
_act("Mish", _mish, lambda x, n: x * np.tanh(np.logaddexp(0, x)), int8=Int8.LUT)


def _gelu(h: ExprHandler, x: str, n: Node) -> str:
    approx = n.attrs.get("approximate", "none")
    if approx == "tanh":
        inner = f"{h.lit(math.sqrt(2.0 / math.pi))} * ({x} + {h.lit(0.044715)} * {x} * {x} * {x})"
        return f"({h.lit(0.5)} * {x} * ({h.lit(1)} + {h.fn('tanh', inner)}))"
    if approx != "none":
        raise UnsupportedOperatorError("Gelu", n.name, f"approximate='{approx}' is not defined by ONNX")
    # ember_geluf (math.c): GELU in one function, 3.5x faster than through ember_erff (2 ulp) at an
    # absolute error under 2e-7 * |x| + 1 ulp.
    return h.fn("gelu", x)


_act("Gelu", _gelu, _np_gelu, int8=Int8.LUT)


# ---- Celu, Swish, Softsign, ThresholdedRelu, Shrink -----------------------------------------------
def _celu(h: ExprHandler, x: str, n: Node) -> str:
    # max(0, x) + min(0, alpha (e^(x/alpha) - 1)): one of the two terms is 0 on each side of 0 (whatever
    # alpha's sign), and NaN takes the `x` branch.
    alpha = _attr(n, "alpha", 1.0)
    return f"({x} < {h.lit(0)} ? {h.lit(alpha)} * {h.fn('expm1', f'{x} / {h.lit(alpha)}')} : {x})"


def _np_celu(x: np.ndarray, n: Node) -> np.ndarray:
    alpha = _attr(n, "alpha", 1.0)
    return np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha))


def _softsign(h: ExprHandler, x: str, n: Node) -> str:
    return f"({x} / ({h.lit(1)} + ({x} < {h.lit(0)} ? -{x} : {x})))"


_act("Celu", _celu, _np_celu, FLOATS, epilogue=lambda n: Epilogue("Celu", _attr(n, "alpha", 1.0)), int8=Int8.LUT)
# Swish (opset 24) = x * sigmoid(alpha * x).
_act("Swish", lambda h, x, n: f"({x} * {h.fn('sigmoid', h.lit(_attr(n, 'alpha', 1.0)) + ' * ' + x)})",
     lambda x, n: x * _np_sigmoid(_attr(n, "alpha", 1.0) * x, n), FLOATS,
     epilogue=lambda n: Epilogue("Swish", _attr(n, "alpha", 1.0)), int8=Int8.LUT)
_act("Softsign", _softsign, lambda x, n: x / (1 + np.abs(x)), FLOATS, epilogue=lambda n: Epilogue("Softsign"),
     int8=Int8.LUT)
# NaN gives 0, like the spec's `x > alpha ? x : 0`.
_act("ThresholdedRelu", lambda h, x, n: f"({x} > {h.lit(_attr(n, 'alpha', 1.0))} ? {x} : {h.lit(0)})",
     lambda x, n: np.where(x > _attr(n, "alpha", 1.0), x, 0),
     FLOATS, epilogue=lambda n: Epilogue("ThresholdedRelu", _attr(n, "alpha", 1.0)), int8=Int8.LUT)


def _shrink(h: ExprHandler, x: str, n: Node) -> str:
    bias, lambd = _attr(n, "bias", 0.0), _attr(n, "lambd", 0.5)
    if h.dtype.is_float:
        return (f"({x} < {h.lit(-lambd)} ? {x} + {h.lit(bias)} : {x} > {h.lit(lambd)} ? {x} - {h.lit(bias)} : "
                f"{h.lit(0)})")
    below, above = _int_thresholds(n, h.dtype)
    below_c = str(int(below)) if isinstance(below, bool) else f"{x} < {h.lit(below)}"
    above_c = str(int(above)) if isinstance(above, bool) else f"{x} > {h.lit(above)}"
    return f"(({below_c}) ? {_int_shift(x, bias, h.dtype)} : ({above_c}) ? {_int_shift(x, -bias, h.dtype)} : 0)"


def _int_thresholds(n: Node, dt: DType) -> tuple[bool | int, bool | int]:
    """An integer Shrink's tests x < -lambd and x > lambd as x < L and x > U (integers in T's range), or
    True/False where the test is the same for every value of T (a comparison C would warn about)."""
    bias, lambd = _attr(n, "bias", 0.0), _attr(n, "lambd", 0.5)
    if not math.isfinite(bias):
        raise UnsupportedOperatorError("Shrink", n.name, f"bias {bias} on {dt.short} input (no integer result)")
    if math.isnan(lambd):
        return False, False
    info = np.iinfo(dt.np)
    below = True if -lambd > info.max else False if -lambd <= info.min else math.ceil(-lambd)
    above = True if lambd < info.min else False if lambd >= info.max else math.floor(lambd)
    return below, above


def _shift_const(c: float) -> int:
    return max(-(2**62), min(2**62, math.floor(c)))


def _int_shift(x: str, c: float, dt: DType) -> str:
    """trunc(x + c) (what the spec's float result cast to T gives) in int64 arithmetic, wrapping to T like
    that cast where the result is out of T's range."""
    k = f"INT64_C({_shift_const(c)})"
    s = f"(int64_t)((uint64_t){x} + (uint64_t){k})" if dt.itemsize == 8 else f"((int64_t){x} + {k})"
    # trunc(x + c) = floor(x + c) + 1 where x + c < 0 and c is not an integer.
    return f"({s} + ({s} < 0))" if c != math.floor(c) and dt.is_signed else s


def _np_shrink(x: np.ndarray, n: Node) -> np.ndarray:
    bias, lambd = _attr(n, "bias", 0.0), _attr(n, "lambd", 0.5)
    if x.dtype.kind == "f":
        t = x.dtype.type
        return np.where(x < t(-lambd), x + t(bias), np.where(x > t(lambd), x - t(bias), t(0)))
    # The C expression's integer semantics, in wrapping int64 numpy arithmetic.
    below, above = _int_thresholds(n, DType.from_numpy(x.dtype))
    xi = x.astype(np.int64)

    def shifted(c: float) -> np.ndarray:
        with np.errstate(all="ignore"):
            s = xi + np.int64(_shift_const(c))
        return s + (s < 0) if c != math.floor(c) and x.dtype.kind == "i" else s

    lo = np.full(x.shape, below) if isinstance(below, bool) else x < below
    hi = np.full(x.shape, above) if isinstance(above, bool) else x > above
    return np.where(lo, shifted(bias), np.where(hi, shifted(-bias), 0)).astype(x.dtype)


# Attributes bias (0), lambd (0.5): x + bias below -lambd, x - bias above lambd, 0 between.
_act("Shrink", _shrink, _np_shrink, FLOATS | INTEGERS,
     epilogue=lambda n: Epilogue("Shrink", _attr(n, "bias", 0.0), _attr(n, "lambd", 0.5)), int8=Int8.LUT)


def _prelu(h: ExprHandler, xs: list[str], n: Node) -> str:
    return f"({xs[0]} < {h.lit(0)} ? {xs[0]} * {xs[1]} : {xs[0]})"


# The slope broadcasts to X (unidirectional numpy broadcasting): the fused loop's broadcasting.
register(OpDef("PRelu", expr=_prelu, inplace=True, infer=same_as_input,
               evaluate=lambda n, xs: [np.where(xs[0] > 0, xs[0], xs[0] * xs[1]).astype(xs[0].dtype)]))


# ---- Softmax / LogSoftmax -----------------------------------------------------------------------
def softmax_dims(node: Node) -> tuple[int, int, int]:
    """(outer, n, inner): the softmax runs along the single `axis` (default -1): over `n` elements at
    stride `inner`, outer*inner times."""
    x = node.inputs[0]
    assert x is not None
    shape = x.shape
    rank = len(shape)
    axis = int(node.attrs.get("axis", -1))
    if axis < 0:
        axis += rank
    if rank == 0:
        return 1, 1, 1
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _lower_softmax(log: bool):
    def lower(node: Node, k: KernelEmitter) -> None:
        x = inp(node, 0)
        outer, n, inner = softmax_dims(node)
        if x.dtype is not DType.FLOAT64:  # float32, or float16 through float copies (float16_via_f32)
            k.call("ember_softmax_f32", k.out(0), k.inp(0), outer, n, inner, 1 if log else 0)
            return
        # float64 in float precision, like ember's double math: converted into scratch, computed there in
        # place (the kernel reads each row before writing it), converted back.
        tmp, count = k.scratch("float"), x.type.numel
        k.line(f"for (size_t i = 0; i < {count}; ++i) {tmp}[i] = (float){k.inp(0)}[i];")
        k.call("ember_softmax_f32", tmp, tmp, outer, n, inner, 1 if log else 0)
        k.line(f"for (size_t i = 0; i < {count}; ++i) {k.out(0)}[i] = (double){tmp}[i];")

    return lower


def _softmax_scratch(node: Node) -> int:
    x = inp(node, 0)
    return x.type.numel * 4 if x.dtype is DType.FLOAT64 else 0


def _eval_softmax(log: bool):
    def evaluate(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
        x = np.asarray(xs[0])
        if x.size == 0:
            return [x.copy()]
        axis = int(node.attrs.get("axis", -1))
        y = np.exp(x - x.max(axis=axis, keepdims=True))
        y /= y.sum(axis=axis, keepdims=True)
        return [(np.log(y) if log else y).astype(x.dtype)]

    return evaluate


# The kernel reads each row before writing it, so the output may overwrite the input.
def _infer_softmax(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    if x.dtype not in FLOATS:
        raise UnsupportedOperatorError(node.op, node.name, f"{x.dtype.short} input (float types only)")
    norm_axis(node, int(node.attrs.get("axis", -1)), x.type.rank)  # one-line error when out of range
    return same_as_input(node)


# float16 and float64 run the float32 kernel on converted copies in scratch.
register(float16_via_f32(OpDef("Softmax", lower=_lower_softmax(False), kernels=("ember_softmax_f32",),
                               scratch=_softmax_scratch, inplace=True, infer=_infer_softmax,
                               evaluate=_eval_softmax(False), int8=Int8.FLOAT)))
register(float16_via_f32(OpDef("LogSoftmax", lower=_lower_softmax(True), kernels=("ember_softmax_f32",),
                               scratch=_softmax_scratch, inplace=True, infer=_infer_softmax,
                               evaluate=_eval_softmax(True))))
