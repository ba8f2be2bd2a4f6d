"""Full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8 input and weights, int16 cell state, int32 bias: what the
converter writes for a Keras LSTM with TFLITE_BUILTINS_INT8) onto one LstmInteger node (ember/ops/lstm_int.py),
its rescales and effective biases computed as TFLite's Prepare computes them: LiteRT's
(unidirectional_sequence_lstm.cc, PopulateQuantizedLstmParams8x8_16) by default, TFLite Micro's
(lstm_eval_common.cc) under `--tflite-rounding micro`; the two differ in their arithmetic, not only rounding.

CIFG and peephole LSTMs run LiteRT's arithmetic (TFLite Micro has neither); projection and layer
normalization are refused by name.
"""

from __future__ import annotations

import math

import numpy as np

from ember.frontends.tflite.context import OpContext, Quant
from ember.ir.dtypes import DType
from ember.ops.lstm_int import GATE_PARAMS, LSTM_PARAMS
from ember.ops.svdf import quantize_multiplier

_W = {"i": 1, "f": 2, "c": 3, "o": 4}
_R = {"i": 5, "f": 6, "c": 7, "o": 8}
_PEEP = {"i": 9, "f": 10, "o": 11}
_BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
_PROJECTION, _OUT_STATE, _CELL_STATE, _LAYER_NORM = (16, 17), 18, 19, (20, 21, 22, 23)
_Q312 = np.float32(2.0 ** -12)  # the gates' pre-activations: Q3.12
_Q015 = 2.0 ** -15  # their activations: Q0.15
_TANH = 4


def is_integer_lstm(ctx: OpContext) -> bool:
    """An int8 input with int8 weights: TFLite's integer kernel (a float input with int8 weights is hybrid)."""
    return ctx.info(0).dtype is DType.INT8 and ctx.info(0).quant is not None


def _scale(ctx: OpContext, i: int, what: str, dtype: DType) -> np.float32:
    """Input i's per-tensor scale; it must be stored as `dtype`."""
    t = ctx.info(i)
    if t.dtype is not dtype or t.quant is None or t.quant.scale.size != 1:
        kind = "not quantized" if t.quant is None else "per-channel" if t.quant.scale.size != 1 else t.dtype.short
        raise ctx.unsupported(f"integer LSTM: the {what} ('{t.name}') must be per-tensor quantized "
                              f"{dtype.short}, not {kind}")
    return np.float32(t.quant.scale.reshape(-1)[0])


def _zp(q: Quant | None) -> int:
    return 0 if q is None else int(q.zero_point.reshape(-1)[0])


def _check_form(ctx: OpContext, micro: bool) -> tuple[bool, bool]:
    """(CIFG, peephole), or a one-line refusal of what TFLite's integer kernel (or TFLite Micro's) lacks."""
    o = ctx.options
    if any(ctx.has_input(i) for i in _PROJECTION):
        raise ctx.unsupported("integer LSTM with a projection layer is not supported")
    if any(ctx.has_input(i) for i in _LAYER_NORM):
        raise ctx.unsupported("integer LSTM with layer normalization is not supported")
    if hasattr(o, "DiagonalRecurrentTensors") and o.DiagonalRecurrentTensors():
        raise ctx.unsupported("diagonal recurrent weights (diagonal_recurrent_tensors) are not supported")
    if o.FusedActivationFunction() != _TANH:
        raise ctx.unsupported(f"integer LSTM with fused activation {o.FusedActivationFunction()} (TFLite's "
                              "integer kernel has only TANH)")
    cifg, peephole = not ctx.has_input(_W["i"]), ctx.has_input(_PEEP["o"])
    if micro and (cifg or peephole):
        raise ctx.unsupported("integer LSTM under --tflite-rounding micro: TFLite Micro's LSTM has no "
                              f"{'CIFG' if cifg else 'peephole'} form")
    return cifg, peephole


def _cell_scale(ctx: OpContext, c_scale: np.float32) -> int:
    """TFLite's CheckedLog2 of the cell state's scale: a power of two, 2^-15 .. 2^-9 (LiteRT's tanh of it
    has 0 to 6 integer bits)."""
    log2 = float(np.float32(math.log(float(c_scale))) * np.float32(1 / math.log(2.0)))
    cell_scale = round(log2)
    if abs(log2 - cell_scale) >= 1e-3 or not 0 <= 15 + cell_scale <= 6:
        raise ctx.unsupported(f"integer LSTM: the cell state's scale {float(c_scale)} is not a power of two "
                              "between 2^-15 and 2^-9")
    return cell_scale


def _gate(ctx: OpContext, g: str, x_scale: np.float32, h_scale: np.float32, zps: tuple[int, int],
          cell_scale: int, micro: bool) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[int]]:
    """Gate g's input and recurrent weights, its effective biases (PrecomputeZeroPointTimesWeightWithBias:
    the bias minus the zero points times the row sums, int32 wrapping later) and its GATE_PARAMS rescales."""
    w, r = ctx.const_array(_W[g], f"input-to-{g} weights"), ctx.const_array(_R[g], f"recurrent-to-{g} weights")
    ws = _scale(ctx, _W[g], f"input-to-{g} weights", DType.INT8)
    rs = _scale(ctx, _R[g], f"recurrent-to-{g} weights", DType.INT8)
    for i in (_W[g], _R[g]):
        if _zp(ctx.info(i).quant):
            raise ctx.unsupported(f"integer LSTM: weights '{ctx.info(i).name}' have a nonzero zero point")
    b = np.zeros(w.shape[0], np.int64)
    if ctx.has_input(_BIAS[g]):
        if ctx.info(_BIAS[g]).dtype is not DType.INT32:
            raise ctx.unsupported(f"integer LSTM: the {g} gate bias ('{ctx.info(_BIAS[g]).name}') must be int32")
        b = ctx.const_array(_BIAS[g], f"{g} gate bias").astype(np.int64)
    biases = [b - zps[0] * w.astype(np.int64).sum(1), -zps[1] * r.astype(np.int64).sum(1)]
    if micro:  # GetQuantizedConvolutionMultipler: the scales' float32 product, then in double
        eff_x = float(np.float32(x_scale * ws)) / float(_Q312)
        eff_h = float(np.float32(h_scale * rs)) / float(_Q312)
    else:  # PopulateQuantizedLstmParams8x8_16: all in float32
        eff_x, eff_h = float(np.float32(ws * x_scale) / _Q312), float(np.float32(rs * h_scale) / _Q312)
    params = [*quantize_multiplier(eff_x), *quantize_multiplier(eff_h), 0, 0]
    if g != "c" and ctx.has_input(_PEEP[g]):  # 2^cell_scale x weight scale / 2^-12 in double, kept as float
        ps = _scale(ctx, _PEEP[g], f"cell-to-{g} weights", DType.INT16)
        params[4:] = quantize_multiplier(float(np.float32(2.0 ** cell_scale * float(ps) / float(_Q312))))
    return w, r, biases, params


def _cell_params(ctx: OpContext, c_scale: np.float32, cell_scale: int, h_scale: np.float32, h_zp: int,
                 micro: bool) -> dict[str, int]:
    """LSTM_PARAMS: the cell clip, the hidden state's rescale and zero point, and each interpreter's cell
    update and tanh constants."""
    clip = float(ctx.options.CellClip())
    hidden = ctx.intermediate(4)  # LiteRT's hidden scale and zero point; TFLite Micro's: the output state's
    hq = hidden.quant if hidden is not None and hidden.quant is not None and not micro else None
    hid_scale = float(hq.scale.reshape(-1)[0]) if hq is not None else float(h_scale)
    named = {"ig_shift": 30 + cell_scale, "tanh_bits": 15 + cell_scale,
             "hidden_zp": _zp(hq) if hq is not None else h_zp}
    if micro:  # lstm_eval_common.cc: CreateLstmCellStateInfo, CreateInterGateMulParams (double), Tanh
        q_clip = int(min(max(float(np.float32(clip)) / float(c_scale), -32768.0), 32767.0))
        hid = quantize_multiplier(_Q015 * _Q015 / hid_scale)
        fc = quantize_multiplier(_Q015 * float(c_scale) / float(c_scale))
        ig = quantize_multiplier(_Q015 * _Q015 / float(c_scale))
        left = 15 + cell_scale - 3
        named.update(clip=q_clip if clip > 0 else -1, tanh_mult=3 if left < 0 else 3 << left,
                     tanh_shift=-left if left < 0 else 0, fc_m=fc[0], fc_s=fc[1], ig_m=ig[0], ig_s=ig[1])
    else:  # float32 clip, truncated; the hidden scale in double, kept as float
        q_clip = int(np.float32(min(max(np.float32(clip) / c_scale, np.float32(-32768)), np.float32(32767))))
        hid = quantize_multiplier(float(np.float32(_Q015 / hid_scale * _Q015)))
        named.update(clip=q_clip if clip > 0 and q_clip > 0 else -1, tanh_mult=0, tanh_shift=0, fc_m=0, fc_s=0,
                     ig_m=0, ig_s=0)
    named.update(hidden_m=hid[0], hidden_s=hid[1])
    return named


def _wrap32(a: np.ndarray) -> np.ndarray:
    return ((a + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def lstm_integer(ctx: OpContext) -> None:
    micro = ctx.b.rounding == "micro"
    cifg, peephole = _check_form(ctx, micro)
    x_scale = _scale(ctx, 0, "input", DType.INT8)
    h_scale = _scale(ctx, _OUT_STATE, "output state", DType.INT8)
    c_scale = _scale(ctx, _CELL_STATE, "cell state", DType.INT16)
    out = ctx.out_info()
    if out.dtype is not DType.INT8 or out.quant is None:
        raise ctx.unsupported(f"integer LSTM: the output ('{out.name}') must be quantized int8")
    h_zp = _zp(ctx.info(_OUT_STATE).quant)
    cell_scale = _cell_scale(ctx, c_scale)
    wx, wh, bias = [], [], []
    params = np.zeros(4 * GATE_PARAMS + len(LSTM_PARAMS), np.int64)
    for g in "fco" if cifg else "ifco":
        w, r, biases, gate_params = _gate(ctx, g, x_scale, h_scale, (_zp(ctx.info(0).quant), h_zp), cell_scale,
                                          micro)
        wx.append(w)
        wh.append(r)
        bias += biases
        k = "ifco".index(g) * GATE_PARAMS
        params[k:k + GATE_PARAMS] = gate_params
    named = _cell_params(ctx, c_scale, cell_scale, h_scale, h_zp, micro)
    params[4 * GATE_PARAMS:] = [named[n] for n in LSTM_PARAMS]
    peep = None
    if peephole:
        rows = [ctx.const_array(_PEEP[g], f"cell-to-{g} weights") if ctx.has_input(_PEEP[g])
                else np.zeros(wx[0].shape[0], np.int16) for g in "ifo"]
        peep = ctx.graph.constant(f"{ctx.label}_peep", np.stack(rows).astype(np.int16))
    attrs = {"time_major": int(bool(ctx.options.TimeMajor())), "cifg": int(cifg), "micro": int(micro),
             "out_scale": float(out.quant.scale.reshape(-1)[0]), "out_zp": _zp(out.quant),
             "_lstm_params": tuple(int(v) for v in params)}
    y, h, c = ctx.emit("LstmInteger", [
        ctx.raw(0), ctx.graph.constant(f"{ctx.label}_wx", np.stack(wx).astype(np.int8)),
        ctx.graph.constant(f"{ctx.label}_wh", np.stack(wh).astype(np.int8)),
        ctx.graph.constant(f"{ctx.label}_bias", _wrap32(np.stack(bias))), peep, ctx.raw(_OUT_STATE),
        ctx.raw(_CELL_STATE)], attrs, n_out=3)
    ctx.output(0, y)
    ctx.b.write_state(ctx.inputs[_OUT_STATE], h)
    ctx.b.write_state(ctx.inputs[_CELL_STATE], c)
