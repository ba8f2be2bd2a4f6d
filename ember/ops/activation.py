"""Activation functions (elementwise, fusable) and Softmax/LogSoftmax (kernels in softmax.c)."""

from __future__ import annotations

import math

from ember.codegen.emitter import ExprHandler, KernelEmitter
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType
from ember.ir.graph import Node
from ember.ops.epilogue import Epilogue
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register


def _act(name: str, fn, tests: tuple[str, ...] = (), **facts) -> OpDef:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fn(h, xs[0], n)

    pattern = name.lower()
    return register(OpDef(name, onnx=(name,), expr=expr, inplace=True,
                          tests=tests or (rf"test_{pattern}(_.*)?$",), **facts))


def _attr(n: Node, key: str, default: float) -> float:
    return float(n.attrs.get(key, default))


def _clamp01(h: ExprHandler, y: str) -> str:
    """min(max(y, 0), 1), evaluating y once."""
    t = h.let(y)
    zero, one = h.lit(0), h.lit(1)
    return f"({t} < {zero} ? {zero} : {t} > {one} ? {one} : {t})"


# `x < 0 ? 0 : x` rather than `x > 0 ? x : 0`: NaN must pass through like numpy.maximum(x, 0).
_act("Relu", lambda h, x, n: f"({x} < {h.lit(0)} ? {h.lit(0)} : {x})",
     epilogue=lambda n: Epilogue("Relu"), int8=Int8.ACTIVATION)
_act("LeakyRelu", lambda h, x, n: f"({x} < {h.lit(0)} ? {x} * {h.lit(_attr(n, 'alpha', 0.01))} : {x})",
     epilogue=lambda n: Epilogue("LeakyRelu", _attr(n, "alpha", 0.01)), int8=Int8.ACTIVATION)
_act("Elu", lambda h, x, n: f"({x} < {h.lit(0)} ? {h.lit(_attr(n, 'alpha', 1.0))} * {h.fn('expm1', x)} : {x})",
     tests=(r"test_elu(_.*)?$",), epilogue=lambda n: Epilogue("Elu", _attr(n, "alpha", 1.0)), int8=Int8.LUT)
_act("Selu", lambda h, x, n: (
    f"({x} > {h.lit(0)} ? {h.lit(_attr(n, 'gamma', 1.05070102214813232421875))} * {x} : "
    f"{h.lit(_attr(n, 'gamma', 1.05070102214813232421875) * _attr(n, 'alpha', 1.67326319217681884765625))}"
    f" * {h.fn('expm1', x)})"), int8=Int8.LUT)
_act("Sigmoid", lambda h, x, n: h.fn("sigmoid", x), epilogue=lambda n: Epilogue("Sigmoid"), int8=Int8.ACTIVATION)
_act("Tanh", lambda h, x, n: h.fn("tanh", x), epilogue=lambda n: Epilogue("Tanh"), int8=Int8.ACTIVATION)
_act("HardSigmoid", lambda h, x, n: _clamp01(
    h, f"({h.lit(_attr(n, 'alpha', 0.2))} * {x} + {h.lit(_attr(n, 'beta', 0.5))})"),
    epilogue=lambda n: Epilogue("HardSigmoid", _attr(n, "alpha", 0.2), _attr(n, "beta", 0.5)), int8=Int8.ACTIVATION)
# HardSwish = x * HardSigmoid(x) with alpha = 1/6, beta = 0.5 (fixed by the spec).
_act("HardSwish", lambda h, x, n: f"({x} * {_clamp01(h, f'({h.lit(1.0 / 6.0)} * {x} + {h.lit(0.5)})')})",
     epilogue=lambda n: Epilogue("HardSwish"), int8=Int8.ACTIVATION)


def _softplus(h: ExprHandler, x: str, n: Node) -> str:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x, no lost digits for small e^x.
    t = h.let(x)
    zero = h.lit(0)
    ax = h.let(f"({t} < {zero} ? -{t} : {t})")
    return f"(({t} > {zero} ? {t} : {zero}) + {h.fn('log1p', h.fn('exp', f'-{ax}'))})"


_act("Softplus", _softplus, int8=Int8.LUT)


def _gelu(h: ExprHandler, x: str, n: Node) -> str:
    approx = n.attrs.get("approximate", "none")
    if approx == "tanh":
        inner = f"{h.lit(math.sqrt(2.0 / math.pi))} * ({x} + {h.lit(0.044715)} * {x} * {x} * {x})"
        return f"({h.lit(0.5)} * {x} * ({h.lit(1)} + {h.fn('tanh', inner)}))"
    if approx != "none":
        raise UnsupportedOperatorError("Gelu", n.name, "", f"approximate='{approx}' is not defined by ONNX")
    return f"({h.lit(0.5)} * {x} * ({h.lit(1)} + {h.fn('erf', f'{x} * {h.lit(1.0 / math.sqrt(2.0))}')}))"


_act("Gelu", _gelu, int8=Int8.LUT)


def _prelu(h: ExprHandler, xs: list[str], n: Node) -> str:
    return f"({xs[0]} < {h.lit(0)} ? {xs[0]} * {xs[1]} : {xs[0]})"


# The slope broadcasts to X (unidirectional numpy broadcasting): the fused loop's broadcasting.
register(OpDef("PRelu", onnx=("PRelu",), expr=_prelu, inplace=True, tests=(r"test_prelu_.*",)))


# ---- Softmax / LogSoftmax -----------------------------------------------------------------------
def softmax_dims(node: Node) -> tuple[int, int, int]:
    """(outer, n, inner): the softmax runs over `n` elements at stride `inner`, outer*inner times.

    Before opset 13 the input is coerced to 2-D at `axis` (default 1) and the softmax covers all of
    the trailing dims; from 13 on it runs along the single `axis` (default -1).
    """
    x = node.inputs[0]
    assert x is not None
    shape = x.shape
    rank = len(shape)
    axis = int(node.attrs.get("axis", 1 if node.version < 13 else -1))
    if axis < 0:
        axis += rank
    if rank == 0:
        return 1, 1, 1
    outer = math.prod(shape[:axis])
    if node.version < 13:
        return outer, math.prod(shape[axis:]), 1
    return outer, shape[axis], math.prod(shape[axis + 1:])


def _lower_softmax(log: bool):
    def lower(node: Node, k: KernelEmitter) -> None:
        x = node.inputs[0]
        assert x is not None
        if x.dtype is not DType.FLOAT32:
            raise UnsupportedOperatorError(node.op, node.name, "", f"{x.dtype.short} input (float32 only)")
        outer, n, inner = softmax_dims(node)
        k.call("ember_softmax_f32", k.out(0), k.inp(0), outer, n, inner, 1 if log else 0)

    return lower


# The kernel reads each row before writing it, so the output may overwrite the input.
register(OpDef("Softmax", onnx=("Softmax",), lower=_lower_softmax(False), kernels=("ember_softmax_f32",),
               inplace=True, tests=(r"test_softmax_.*",), int8=Int8.FLOAT))
register(OpDef("LogSoftmax", onnx=("LogSoftmax",), lower=_lower_softmax(True), kernels=("ember_softmax_f32",),
               inplace=True, tests=(r"test_logsoftmax_.*",)))
