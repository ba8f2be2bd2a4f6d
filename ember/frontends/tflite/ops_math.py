"""Elementwise arithmetic, activations, softmax and reductions. These keep TFLite's layout: elementwise ops
commute with the Transposes around convolutions, which passes/transposes.py moves through them."""

from __future__ import annotations

import numpy as np

from ember.frontends.tflite.context import OpContext


def _fused(ctx: OpContext) -> int:
    o = ctx.options
    return o.FusedActivationFunction() if o is not None and hasattr(o, "FusedActivationFunction") else 0


def _binary(op: str):
    def convert(ctx: OpContext) -> None:
        y = ctx.emit(op, [ctx.input(0), ctx.input(1)])
        ctx.output(0, ctx.activation(y, _fused(ctx)))

    return convert


def squared_difference(ctx: OpContext) -> None:
    d = ctx.emit("Sub", [ctx.input(0), ctx.input(1)])
    ctx.output(0, ctx.emit("Mul", [d, d]))


def _unary(op: str):
    def convert(ctx: OpContext) -> None:
        ctx.output(0, ctx.emit(op, [ctx.input(0)]))

    return convert


def rsqrt(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("Reciprocal", [ctx.emit("Sqrt", [ctx.input(0)])]))


def _clip(lo: float, hi: float):
    def convert(ctx: OpContext) -> None:
        bounds = [ctx.const(lo, np.float32, "lo"), ctx.const(hi, np.float32, "hi")]
        ctx.output(0, ctx.emit("Clip", [ctx.input(0), *bounds]))

    return convert


def leaky_relu(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("LeakyRelu", [ctx.input(0)], {"alpha": float(ctx.options.Alpha())}))


def prelu(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("PRelu", [ctx.input(0), ctx.input(1)]))


def gelu(ctx: OpContext) -> None:
    approximate = ctx.options is not None and bool(ctx.options.Approximate())
    ctx.output(0, ctx.emit("Gelu", [ctx.input(0)], {"approximate": "tanh" if approximate else "none"}))


def softmax(ctx: OpContext) -> None:
    x = ctx.input(0)
    beta = float(ctx.options.Beta()) if ctx.options is not None else 1.0
    if beta != 1.0:
        x = ctx.emit("Mul", [x, ctx.const(beta, np.float32, "beta")])
    ctx.output(0, ctx.emit("Softmax", [x], {"axis": -1}))


def _reduce(op: str):
    def convert(ctx: OpContext) -> None:
        x = ctx.input(0)
        rank = x.type.rank
        axes = sorted({int(a) % rank for a in np.asarray(ctx.const_array(1, "axes")).reshape(-1)})
        keep = int(bool(ctx.options.KeepDims())) if ctx.options is not None else 0
        y = ctx.emit(op, [x, ctx.const(axes, what="axes")], {"keepdims": keep})
        ctx.output(0, y)

    return convert


def _arg(op: str):
    def convert(ctx: OpContext) -> None:
        x = ctx.input(0)
        axis = int(np.asarray(ctx.const_array(1, "axis")).reshape(-1)[0]) % x.type.rank
        ctx.output(0, ctx.emit(op, [x], {"axis": axis, "keepdims": 0}))  # output() casts int64 to the model's type

    return convert


CONVERTERS = {
    "ADD": _binary("Add"), "SUB": _binary("Sub"), "MUL": _binary("Mul"), "DIV": _binary("Div"),
    "MAXIMUM": _binary("Max"), "MINIMUM": _binary("Min"), "POW": _binary("Pow"),
    "SQUARED_DIFFERENCE": squared_difference,
    "EXP": _unary("Exp"), "LOG": _unary("Log"), "SQRT": _unary("Sqrt"), "RSQRT": rsqrt, "ABS": _unary("Abs"),
    "NEG": _unary("Neg"), "FLOOR": _unary("Floor"), "CEIL": _unary("Ceil"),
    "RELU": _unary("Relu"), "RELU6": _clip(0.0, 6.0), "RELU_N1_TO_1": _clip(-1.0, 1.0),
    "LEAKY_RELU": leaky_relu, "PRELU": prelu, "LOGISTIC": _unary("Sigmoid"), "TANH": _unary("Tanh"),
    "HARD_SWISH": _unary("HardSwish"), "GELU": gelu, "SOFTMAX": softmax,
    "MEAN": _reduce("ReduceMean"), "SUM": _reduce("ReduceSum"), "REDUCE_MAX": _reduce("ReduceMax"),
    "ARG_MAX": _arg("ArgMax"), "ARG_MIN": _arg("ArgMin"),
}
