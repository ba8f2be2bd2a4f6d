"""Sequence operators: UNIDIRECTIONAL_SEQUENCE_LSTM (float onto ember's LSTM; full-integer onto LstmInteger,
TFLite's integer kernel, in lstm_integer.py) and SVDF (the keyword-spotting
layer: float onto Gemm, Concat and reductions; full-integer onto SvdfInteger, TFLite's integer kernel).

Both read a state tensor LiteRT keeps between invocations (a variable tensor) and write its next value
(`_write_state`). A bundle keeps no state of its own: by default the loader gives every variable tensor its
initial value (zeros), so a run equals LiteRT's first invocation after `reset_all_variables()`; with
`--state io` the state is an input and its next value an output, which a streaming caller carries over.
"""

from __future__ import annotations

import numpy as np

from ember.frontends.tflite.context import OpContext
from ember.frontends.tflite.lstm_integer import is_integer_lstm, lstm_integer
from ember.ir.dtypes import DType
from ember.ir.graph import Value
from ember.ops.svdf import quantize_multiplier

# TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM input slots (lstm_shared.h).
_W = {"i": 1, "f": 2, "c": 3, "o": 4}
_R = {"i": 5, "f": 6, "c": 7, "o": 8}
_PEEP = {"i": 9, "f": 10, "o": 11}
_BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
_PROJECTION, _OUT_STATE, _CELL_STATE, _LAYER_NORM = (16, 17), 18, 19, (20, 21, 22, 23)
_ACTIVATIONS = {1: "Relu", 4: "Tanh"}  # TFLite fused activation -> ONNX LSTM's g/h activation


def _dense(ctx: OpContext, i: int, what: str) -> np.ndarray | None:
    """A constant input as float32 (dequantized when stored as integers); None when the slot is empty."""
    if not ctx.has_input(i):
        return None
    data = ctx.const_array(i, what)
    q = ctx.info(i).quant
    if q is None or data.dtype.kind == "f":
        return data.astype(np.float32)
    shape = [1] * data.ndim
    if q.axis is not None:
        shape[q.axis] = -1
    return ((data.astype(np.float32) - q.zero_point.reshape(shape)) * q.scale.reshape(shape)).astype(np.float32)


def unidirectional_sequence_lstm(ctx: OpContext) -> None:
    if is_integer_lstm(ctx):
        lstm_integer(ctx)
        return
    o = ctx.options
    for i in (*_PROJECTION, *_LAYER_NORM):
        if ctx.has_input(i):
            raise ctx.unsupported("projection and layer-normalized LSTMs are not supported")
    if float(o.CellClip()) or float(o.ProjClip()):
        raise ctx.unsupported(f"cell_clip {o.CellClip()} / proj_clip {o.ProjClip()} (ember's LSTM clips the "
                              "gates' inputs, TFLite the cell state)")
    if hasattr(o, "DiagonalRecurrentTensors") and o.DiagonalRecurrentTensors():
        raise ctx.unsupported("diagonal recurrent weights (diagonal_recurrent_tensors) are not supported")
    act = _ACTIVATIONS.get(o.FusedActivationFunction())
    if act is None:
        raise ctx.unsupported(f"fused activation {o.FusedActivationFunction()} (TANH or RELU)")
    x = ctx.input(0)
    time_major = bool(o.TimeMajor())
    w = {g: _dense(ctx, i, f"input-to-{g} weights") for g, i in _W.items()}
    r = {g: _dense(ctx, i, f"recurrent-to-{g} weights") for g, i in _R.items()}
    b = {g: _dense(ctx, i, f"{g} gate bias") for g, i in _BIAS.items()}
    peep = {g: _dense(ctx, i, f"cell-to-{g} weights") for g, i in _PEEP.items()}
    hidden, n_in = w["f"].shape  # type: ignore[union-attr]
    cifg = w["i"] is None
    if cifg:
        # Coupled gates: TFLite computes f and takes i = 1 - f; ember's LSTM (ONNX input_forget) computes i and
        # takes f = 1 - i. sigmoid(-z) = 1 - sigmoid(z), so ember's input gate gets the negated forget terms.
        for d in (w, r, b, peep):
            d["i"] = -d["f"] if d["f"] is not None else None
    zeros = np.zeros(hidden, np.float32)
    order = "iofc"  # ONNX's gate order
    big_w = np.concatenate([w[g] for g in order])[None]  # type: ignore[misc]
    big_r = np.concatenate([r[g] for g in order])[None]  # type: ignore[misc]
    big_b = np.concatenate([b[g] if b[g] is not None else zeros for g in order] + [zeros] * 4)[None]
    inputs: list[Value | None] = [x, ctx.graph.constant(f"{ctx.label}_W", big_w),
                                  ctx.graph.constant(f"{ctx.label}_R", big_r),
                                  ctx.graph.constant(f"{ctx.label}_B", big_b.astype(np.float32)), None]
    batch = x.shape[1] if time_major else x.shape[0]
    state_shape = [1, batch, hidden] if time_major else [batch, 1, hidden]
    for i in (_OUT_STATE, _CELL_STATE):
        inputs.append(ctx.emit("Reshape", [ctx.input(i), ctx.const(state_shape, what="state")]))
    if any(p is not None for p in peep.values()):
        p = np.concatenate([peep[g] if peep[g] is not None else zeros for g in "iof"])[None]
        inputs.append(ctx.graph.constant(f"{ctx.label}_P", p.astype(np.float32)))
    attrs = {"hidden_size": int(hidden), "direction": "forward", "layout": 0 if time_major else 1,
             "activations": ["Sigmoid", act, act], "input_forget": int(cifg)}
    y, y_h, y_c = ctx.emit("LSTM", inputs, attrs, n_out=3)  # y: [T, 1, B, H] or [B, T, 1, H]
    ctx.output(0, ctx.emit("Reshape", [y, ctx.const(list(ctx.out_info().shape), what="shape")]))
    _write_state(ctx, _OUT_STATE, y_h)
    _write_state(ctx, _CELL_STATE, y_c)


def _write_state(ctx: OpContext, slot: int, v: Value) -> None:
    """The operator leaves `v` (float) in the variable tensor of input `slot`, reshaped and quantized to it."""
    t = ctx.info(slot)
    v = ctx.emit("Reshape", [v, ctx.const(list(t.shape), what="state_shape")])
    if t.quant is not None and t.dtype in (DType.INT8, DType.UINT8, DType.INT16):
        v = ctx.quantize(v, t)
    ctx.b.write_state(ctx.inputs[slot], v)


def svdf(ctx: OpContext) -> None:
    """TFLite's SVDF step: the state [B, F, M] shifts one step left, its last column takes this step's
    features x . W_feature^T; each filter's output is its row dotted with W_time; the `rank` filters of a
    unit are summed, the bias added, the fused activation applied."""
    o = ctx.options
    if ctx.info(0).dtype is DType.INT8 and ctx.info(0).quant is not None:
        _svdf_integer(ctx)
        return
    x = ctx.input(0)  # [B, I]
    wf, wt = ctx.input(1), ctx.input(2)  # [F, I], [F, M]
    filters, memory = ctx.shape(2)
    batch, rank = x.shape[0], int(o.Rank())
    feat = ctx.emit("Gemm", [x, wf], {"transB": 1})  # [B, F]
    feat = ctx.emit("Reshape", [feat, ctx.const([batch, filters, 1], what="col")])
    state = ctx.emit("Reshape", [ctx.input(4), ctx.const([batch, filters, memory], what="state")])
    if memory > 1:
        kept = ctx.emit("Slice", [state, ctx.const([1], what="starts"), ctx.const([memory], what="ends"),
                                  ctx.const([2], what="axes")])
        state = ctx.emit("Concat", [kept, feat], {"axis": 2})
    else:
        state = feat
    _write_state(ctx, 4, state)
    per_filter = ctx.emit("ReduceSum", [ctx.emit("Mul", [state, wt]), ctx.const([2], what="mem")], {"keepdims": 0})
    units = filters // rank
    y = ctx.emit("ReduceSum", [ctx.emit("Reshape", [per_filter, ctx.const([batch, units, rank], what="rank")]),
                               ctx.const([2], what="ranks")], {"keepdims": 0})
    if ctx.has_input(3):
        y = ctx.emit("Add", [y, ctx.input(3)])
    ctx.output(0, ctx.activation(y, o.FusedActivationFunction()))


def _svdf_integer(ctx: OpContext) -> None:
    """Full-integer SVDF (int8 input, int16 or int8 time weights and state): TFLite's integer kernel, one
    SvdfInteger node (ember/ops/svdf.py), its rescales computed as TFLite's Prepare computes them."""
    types = {"input": (0, DType.INT8), "feature weights": (1, DType.INT8), "time weights": (2, None),
             "state": (4, None)}
    q = {}
    for what, (i, dtype) in types.items():
        t = ctx.info(i)
        if t.quant is None or t.quant.scale.size != 1 or (dtype is not None and t.dtype is not dtype) \
                or t.dtype not in (DType.INT8, DType.INT16):
            raise ctx.unsupported(f"integer SVDF: the {what} ('{t.name}') must be per-tensor quantized int8 "
                                  f"(int16 for time weights and state), not {t.dtype.short}")
        q[what] = t.quant
    out = ctx.out_info()
    if out.dtype is not DType.INT8 or out.quant is None:
        raise ctx.unsupported(f"integer SVDF: the output ('{out.name}') must be quantized int8")
    if ctx.has_input(3) and ctx.info(3).dtype is not DType.INT32:
        raise ctx.unsupported(f"integer SVDF: the bias ('{ctx.info(3).name}') must be int32")

    def scale(what: str) -> np.float32:
        return np.float32(q[what].scale.reshape(-1)[0])

    # float32 arithmetic, as TFLite's Prepare multiplies the tensors' float scales before widening to double
    m1, s1 = quantize_multiplier(float(scale("input") * scale("feature weights") / scale("state")))
    m2, s2 = quantize_multiplier(float(scale("state") * scale("time weights") / np.float32(out.quant.scale[0])))
    zp = {k: int(v.zero_point.reshape(-1)[0]) for k, v in q.items()}
    attrs = {"rank": int(ctx.options.Rank()), "in_zp": zp["input"], "state_zp": zp["state"],
             "out_zp": int(out.quant.zero_point.reshape(-1)[0]), "out_scale": float(out.quant.scale[0]),
             "m1": m1, "s1": s1, "m2": m2, "s2": s2}
    bias = ctx.raw(3) if ctx.has_input(3) else None
    y, nxt = ctx.emit("SvdfInteger", [ctx.raw(0), ctx.raw(1), ctx.raw(2), bias, ctx.raw(4)], attrs, n_out=2)
    ctx.output(0, y)
    ctx.b.write_state(ctx.inputs[4], nxt)


CONVERTERS = {"UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm, "SVDF": svdf}
