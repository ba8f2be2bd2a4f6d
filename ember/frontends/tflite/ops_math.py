"""Elementwise arithmetic, activations, softmax and reductions. These keep TFLite's layout: elementwise ops
commute with the Transposes around convolutions, which passes/transposes.py moves through them."""

from __future__ import annotations

import numpy as np

from ember.frontends.tflite import exact, exact16, exact_roots
from ember.frontends.tflite.context import OpContext
from ember.ir.dtypes import DType
from ember.ops.q16 import INT16_MAX, INT16_MIN, Q16Softmax, Q16Spec
from ember.ops.qlinear import tflite_multiplier


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


def _lookup16(ctx: OpContext, make) -> bool:
    """An int16 operator as TFLite's LUTLookup of its LUTPopulate table (Q16Lookup); `make(output scale)` gives
    the table's float32 function."""
    if not exact16.int16_in_out(ctx):
        return False
    table = exact16.lut_table(ctx, make(exact16.out_scale(ctx)))
    ctx.output(0, ctx.emit("Q16Lookup", [ctx.raw(0)], {"_q16lut": table}))
    return True


def log(ctx: OpContext) -> None:
    if not _lookup16(ctx, exact16.log_f32):
        ctx.output(0, ctx.emit("Log", [ctx.input(0)]))


def rsqrt(ctx: OpContext) -> None:
    if exact16.int16_in_out(ctx) and ctx.b.rounding == "micro":
        # TFLite Micro's int16 RSQRT is its fixed-point int8 arithmetic widened, not LiteRT's table
        ctx.output(0, ctx.emit("Q16Rsqrt", [ctx.raw(0)], {"_q16rs": exact16.rsqrt_micro(ctx)}))
        return
    if _lookup16(ctx, exact16.rsqrt_f32):
        return
    if exact.int8_unary(ctx):  # LiteRT's fixed-point RSQRT, as a table
        ctx.output(0, exact.lut(ctx, exact_roots.rsqrt_table(ctx)))
        return
    ctx.output(0, ctx.emit("Reciprocal", [ctx.emit("Sqrt", [ctx.input(0)])]))


def sqrt(ctx: OpContext) -> None:
    if exact.int8_unary(ctx):  # LiteRT's int8 SQRT truncates its float result: a table
        ctx.output(0, exact.lut(ctx, exact_roots.sqrt_table(ctx)))
        return
    ctx.output(0, ctx.emit("Sqrt", [ctx.input(0)]))


def exp(ctx: OpContext) -> None:
    if exact16.int16_in_out(ctx):  # TFLite's int16 EXP: LUTLookup of a LUTPopulate table (Q16Lookup)
        ctx.output(0, ctx.emit("Q16Lookup", [ctx.raw(0)], {"_q16lut": exact16.lut_table(ctx, exact16.exp_f32)}))
        return
    ctx.output(0, ctx.emit("Exp", [ctx.input(0)]))


def _clip(lo: float, hi: float):
    def convert(ctx: OpContext) -> None:
        bounds = [ctx.const(lo, np.float32, "lo"), ctx.const(hi, np.float32, "hi")]
        ctx.output(0, ctx.emit("Clip", [ctx.input(0), *bounds]))

    return convert


def leaky_relu(ctx: OpContext) -> None:
    alpha = float(ctx.options.Alpha())
    t, out = ctx.info(0), ctx.out_info()
    if t.dtype is DType.INT16 and out.dtype is DType.INT16 and t.quant is not None and out.quant is not None:
        ctx.output(0, _leaky_relu16(ctx, alpha))
        return
    if exact.int8_unary(ctx):  # TFLite's integer arithmetic, as a table
        table = exact.leaky_relu_table(ctx, alpha)
        if table is not None:
            ctx.output(0, exact.lut(ctx, table))
            return
    ctx.output(0, ctx.emit("LeakyRelu", [ctx.input(0)], {"alpha": alpha}))


def _leaky_relu16(ctx: OpContext, alpha: float):
    """TFLite's int16 LEAKY_RELU (QuantizeLeakyRelu, zero points 0): x rescaled by input / output scale at and
    above zero, by input x alpha / output scale below (float32 products, as its Prepare), a Q16Binary."""
    sx, sy = np.float32(ctx.info(0).quant.scale.reshape(-1)[0]), np.float32(ctx.out_info().quant.scale.reshape(-1)[0])
    r = ctx.rounding()
    m_id, k_id = tflite_multiplier(float(np.float32(sx / sy)), r)
    m_al, k_al = tflite_multiplier(float(np.float32(sx * np.float32(alpha) / sy)), r)
    x = ctx.raw(0)
    params = (3, 0, m_id, k_id + 64 * r, m_al, k_al + 64 * r, 0, 1, INT16_MIN, INT16_MAX)
    spec = Q16Spec(None, (), (), INT16_MIN, INT16_MAX, binary=params, shape=tuple(x.shape))
    return ctx.emit("Q16Binary", [x, ctx.const(np.ones(1, np.int16), np.int16, "one")], {"_q16": spec})


def _sigmoid_like(fn: str, op: str):
    """LOGISTIC / TANH: on int8, a table of the interpreter's own results (exact.py); on int16, TFLite's int16
    kernel (Q16Sigmoid, exact16.py); else the float op."""
    def convert(ctx: OpContext) -> None:
        if exact16.int16_in_out(ctx):
            spec = exact16.sigmoid_spec(ctx, fn == "tanh")
            ctx.output(0, ctx.emit("Q16Sigmoid", [ctx.raw(0)], {"_q16s": spec}))
            return
        if exact.int8_unary(ctx):
            table = exact.micro_table(ctx, fn) if ctx.b.rounding == "micro" else exact.float_table(ctx, fn)
            if table is not None:
                ctx.output(0, exact.lut(ctx, table))
                return
        ctx.output(0, ctx.emit(op, [ctx.input(0)]))

    return convert


def hard_swish(ctx: OpContext) -> None:
    table = exact.hard_swish_table(ctx) if exact.int8_unary(ctx) else None
    ctx.output(0, exact.lut(ctx, table) if table is not None else ctx.emit("HardSwish", [ctx.input(0)]))


def prelu(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("PRelu", [ctx.input(0), ctx.input(1)]))


def gelu(ctx: OpContext) -> None:
    approximate = ctx.options is not None and bool(ctx.options.Approximate())
    if exact16.int16_in_out(ctx):  # TFLite's int16 GELU: LUTLookup of a LUTPopulate table (Q16Lookup)
        fn = exact16.gelu_tanh_f32 if approximate else exact16.gelu_f32
        ctx.output(0, ctx.emit("Q16Lookup", [ctx.raw(0)], {"_q16lut": exact16.lut_table(ctx, fn)}))
        return
    ctx.output(0, ctx.emit("Gelu", [ctx.input(0)], {"approximate": "tanh" if approximate else "none"}))


def softmax(ctx: OpContext) -> None:
    beta = float(ctx.options.Beta()) if ctx.options is not None else 1.0
    t, out = ctx.info(0), ctx.out_info()
    if t.dtype is DType.INT16 and out.dtype is DType.INT16 and t.quant is not None and t.quant.axis is None:
        # TFLite's int16 SOFTMAX (table lookups, ops/q16.py): its input multiplier maps [-65535, 0] to [-10, 0]
        real = float(np.float32(np.float32(t.quant.scale.reshape(-1)[0]) * np.float32(beta))) / (10.0 / 65535.0)
        mult, k = tflite_multiplier(real, ctx.rounding())
        spec = Q16Softmax(mult, k + 64 * ctx.rounding(), ctx.b.rounding == "micro")
        ctx.output(0, ctx.emit("Q16Softmax", [ctx.raw(0)], {"_q16sm": spec}))
        return
    x = ctx.input(0)
    if beta != 1.0:
        x = ctx.emit("Mul", [x, ctx.const(beta, np.float32, "beta")])
    ctx.output(0, ctx.emit("Softmax", [x], {"axis": -1}))


def _reduce(op: str):
    def convert(ctx: OpContext) -> None:
        x = ctx.input(0)
        rank = x.type.rank
        axes = sorted({int(a) % rank for a in np.asarray(ctx.const_array(1, "axes")).reshape(-1)})
        keep = int(bool(ctx.options.KeepDims())) if ctx.options is not None else 0
        t, out = ctx.info(0), ctx.out_info()
        int16 = (t.dtype is DType.INT16 and out.dtype is DType.INT16 and t.quant is not None
                 and out.quant is not None and t.quant.axis is None)
        if op == "ReduceProd" and exact16.int16_in_out(ctx):  # TFLite's int16 running product (Q16Reduce)
            ctx.output(0, ctx.emit("Q16Reduce", [ctx.raw(0)], {"_q16r": exact16.prod_spec(ctx, axes)}))
            return
        if op == "ReduceMean" and rank == 4 and axes == [1, 2] and (exact.int8_unary(ctx) or int16):
            # a global average of int8 / int16: the integer kernel with TFLite's arithmetic
            # (passes/fold_qdq_ops.py, passes/fold_qdq16.py)
            y = ctx.emit("GlobalAveragePool", [ctx.input(0, nchw=True)])
            if keep:
                ctx.output(0, y, nchw=True)
            else:  # [N, C, 1, 1] -> [N, C] as int8 / int16
                y = ctx.quantize(y, ctx.out_info())
                ctx.output(0, ctx.emit("Reshape", [y, ctx.const(list(ctx.out_info().shape), what="shape")]))
            return
        y = ctx.emit(op, [x, ctx.const(axes, what="axes")], {"keepdims": keep})
        ctx.output(0, y)

    return convert


def _arg(op: str):
    def convert(ctx: OpContext) -> None:
        x = ctx.input(0)
        axis = int(np.asarray(ctx.const_array(1, "axis")).reshape(-1)[0]) % x.type.rank
        ctx.output(0, ctx.emit(op, [x], {"axis": axis, "keepdims": 0}))  # output() casts int64 to the model's type

    return convert


def elu(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("Elu", [ctx.input(0)], {"alpha": 1.0}))


def log_softmax(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("LogSoftmax", [ctx.input(0)], {"axis": -1}))


def floor_div(ctx: OpContext) -> None:
    a, b = ctx.input(0), ctx.input(1)
    if a.dtype.is_float:
        ctx.output(0, ctx.emit("Floor", [ctx.emit("Div", [a, b])]))
        return
    # Integers: a - floor_mod(a, b) is an exact multiple of b, so C's truncating division is the floored one.
    r = ctx.emit("Mod", [a, b], {"fmod": 0})
    ctx.output(0, ctx.emit("Div", [ctx.emit("Sub", [a, r]), b]))


def floor_mod(ctx: OpContext) -> None:  # the remainder with the divisor's sign, as TFLite's FloorMod
    ctx.output(0, ctx.emit("Mod", [ctx.input(0), ctx.input(1)], {"fmod": 0}))


def _compare(op: str, negate: bool = False):
    def convert(ctx: OpContext) -> None:
        y = ctx.emit(op, [ctx.input(0), ctx.input(1)])
        ctx.output(0, ctx.emit("Not", [y]) if negate else y)

    return convert


def logical_not(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("Not", [ctx.input(0)]))


def select(ctx: OpContext) -> None:
    """SELECT_V2 broadcasts; SELECT (v1) also takes a rank-1 condition that picks whole rows of x."""
    cond, a, b = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.opname == "SELECT" and cond.type.rank == 1 and a.type.rank > 1:
        cond = ctx.emit("Reshape", [cond, ctx.const([cond.shape[0]] + [1] * (a.type.rank - 1), what="rows")])
    ctx.output(0, ctx.emit("Where", [cond, a, b]))


def cumsum(ctx: OpContext) -> None:
    o = ctx.options
    x = ctx.input(0)
    axis = int(np.asarray(ctx.const_array(1, "axis")).reshape(-1)[0]) % x.type.rank
    attrs = {"exclusive": int(bool(o.Exclusive())), "reverse": int(bool(o.Reverse()))} if o is not None else {}
    ctx.output(0, ctx.emit("CumSum", [x, ctx.const(axis, what="axis")], attrs))


def top_k(ctx: OpContext) -> None:
    x = ctx.input(0)
    k = int(np.asarray(ctx.const_array(1, "k")).reshape(-1)[0])
    values, indices = ctx.emit("TopK", [x, ctx.const([k], what="k")], {"axis": -1, "largest": 1, "sorted": 1},
                               n_out=2)
    ctx.output(0, values)
    ctx.output(1, indices)  # int64 -> the model's int32


def l2_normalization(ctx: OpContext) -> None:
    """TFLite's L2Normalization: x / max(sqrt(sum x^2 over the last axis), 1e-6)."""
    x = ctx.input(0)
    ss = ctx.emit("ReduceSum", [ctx.emit("Mul", [x, x]), ctx.const([x.type.rank - 1], what="axes")],
                  {"keepdims": 1})
    norm = ctx.emit("Max", [ctx.emit("Sqrt", [ss]), ctx.const(1e-6, np.float32, "eps")])
    ctx.output(0, ctx.activation(ctx.emit("Div", [x, norm]), _fused(ctx)))


def local_response_normalization(ctx: OpContext) -> None:
    """x / (bias + alpha * sum of x^2 over channels c-r..c+r)^beta: ONNX LRN with size 2r+1, whose alpha is
    divided by the size."""
    o = ctx.options
    size = 2 * int(o.Radius()) + 1
    attrs = {"size": size, "alpha": float(o.Alpha()) * size, "beta": float(o.Beta()), "bias": float(o.Bias())}
    ctx.output(0, ctx.emit("LRN", [ctx.input(0, nchw=True)], attrs), nchw=True)


CONVERTERS = {
    "ADD": _binary("Add"), "SUB": _binary("Sub"), "MUL": _binary("Mul"), "DIV": _binary("Div"),
    "MAXIMUM": _binary("Max"), "MINIMUM": _binary("Min"), "POW": _binary("Pow"),
    "SQUARED_DIFFERENCE": squared_difference,
    "EXP": exp, "LOG": log, "SQRT": sqrt, "RSQRT": rsqrt, "ABS": _unary("Abs"),
    "NEG": _unary("Neg"), "FLOOR": _unary("Floor"), "CEIL": _unary("Ceil"),
    "RELU": _unary("Relu"), "RELU6": _clip(0.0, 6.0), "RELU_N1_TO_1": _clip(-1.0, 1.0),
    "LEAKY_RELU": leaky_relu, "PRELU": prelu, "LOGISTIC": _sigmoid_like("logistic", "Sigmoid"),
    "TANH": _sigmoid_like("tanh", "Tanh"),
    "HARD_SWISH": hard_swish, "GELU": gelu, "SOFTMAX": softmax,
    "MEAN": _reduce("ReduceMean"), "SUM": _reduce("ReduceSum"), "REDUCE_MAX": _reduce("ReduceMax"),
    "ARG_MAX": _arg("ArgMax"), "ARG_MIN": _arg("ArgMin"),
    "REDUCE_MIN": _reduce("ReduceMin"), "REDUCE_PROD": _reduce("ReduceProd"),
    "ELU": elu, "LOG_SOFTMAX": log_softmax, "ROUND": _unary("Round"), "FLOOR_DIV": floor_div,
    "FLOOR_MOD": floor_mod, "CUMSUM": cumsum, "TOPK_V2": top_k, "L2_NORMALIZATION": l2_normalization,
    "LOCAL_RESPONSE_NORMALIZATION": local_response_normalization,
    "LESS": _compare("Less"), "LESS_EQUAL": _compare("LessOrEqual"), "GREATER": _compare("Greater"),
    "GREATER_EQUAL": _compare("GreaterOrEqual"), "EQUAL": _compare("Equal"),
    "NOT_EQUAL": _compare("Equal", negate=True), "LOGICAL_AND": _binary("And"), "LOGICAL_OR": _binary("Or"),
    "LOGICAL_NOT": logical_not, "SELECT": select, "SELECT_V2": select,
}
