"""LstmInteger: TFLite's full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8 input, output and weights, int8
hidden state, int16 cell state, int32 bias), bit-exact with LiteRT's reference kernel (lstm_eval's 8x8_16
path) or with TFLite Micro's (`micro`), on kernels/lstm_int.c.

Inputs: x int8 [T, B, I] (time_major) or [B, T, I]; wx int8 [G, H, I] and wh int8 [G, H, H], the present
gates among i, f, c, o (G = 3 for CIFG, which has no input gate); bias int32 [2G, H], each gate's effective
input and recurrent biases (TFLite's Prepare folds the zero points in); peep int16 [3, H] (i, f, o peephole
weights) or None; h0 int8 and c0 int16, the states [B, H] (any shape of B x H elements). Outputs: y int8
(T and B as x's, H), the next hidden and cell states (h0's and c0's types).

Attributes: time_major, cifg, micro; out_scale, out_zp (y's quantization); `_lstm_params`, the int32 table
the frontend computes as TFLite's Prepare does (LSTM_PARAMS names its entries).
"""

from __future__ import annotations

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError
from ember.ir.dtypes import DType, QuantParams, TensorType
from ember.ir.graph import Node
from ember.ops.infer import inp
from ember.ops.opdef import OpDef
from ember.ops.q16 import sigmoid_table
from ember.ops.registry import register

# kernels/lstm_int.c's table: six entries per gate i, f, c, o ((multiplier, shift) of the input product, the
# recurrent product and the peephole term), then these.
LSTM_PARAMS = ("ig_shift", "clip", "hidden_m", "hidden_s", "hidden_zp", "tanh_bits", "fc_m", "fc_s", "ig_m",
               "ig_s", "tanh_mult", "tanh_shift")
GATE_PARAMS = 6


def _infer(node: Node) -> list[TensorType]:
    x, wx, wh, bias, h0, c0 = (inp(node, i) for i in (0, 1, 2, 3, 5, 6))
    gates, hidden, n_in = wx.shape
    steps, batch = x.shape[:2] if node.attrs["time_major"] else x.shape[1::-1]
    weights_fit = wh.shape == (gates, hidden, hidden) and gates == 4 - node.attrs["cifg"] \
        and bias.shape == (2 * gates, hidden)
    if x.type.rank != 3 or x.shape[2] != n_in or not weights_fit or h0.type.numel != batch * hidden \
            or c0.type.numel != batch * hidden:
        raise ShapeError(f"LstmInteger {node.name}: input {list(x.shape)}, weights {list(wx.shape)} and "
                         f"{list(wh.shape)}, states {list(h0.shape)} and {list(c0.shape)}")
    y_shape = (steps, batch, hidden) if node.attrs["time_major"] else (batch, steps, hidden)
    out_q = QuantParams((float(node.attrs["out_scale"]),), (int(node.attrs["out_zp"]),))
    return [TensorType(DType.INT8, y_shape, out_q), h0.type, c0.type]


def _lower(node: Node, k: KernelEmitter) -> None:
    x, wx = inp(node, 0), inp(node, 1)
    a = node.attrs
    time_major, micro = int(a["time_major"]), int(a["micro"])
    steps, batch = x.shape[:2] if time_major else x.shape[1::-1]
    tab = k.table(sigmoid_table(), DType.UINT16) if micro else "0"
    k.call("ember_lstm_int", k.inp(0, "int8_t"), k.inp(1, "int8_t"), k.inp(2, "int8_t"), k.inp(3, "int32_t"),
           k.inp(4, "int16_t"), k.inp(5, "int8_t"), k.inp(6, "int16_t"), k.out(0, "int8_t"), k.out(1, "int8_t"),
           k.out(2, "int16_t"), k.scratch("int16_t"), k.table(a["_lstm_params"], DType.INT32), tab, steps, batch,
           x.shape[2], wx.shape[1], time_major, int(a["cifg"]), micro)


def _scratch(node: Node) -> int:
    """The four gates of one batch row (int16) and the working cell (int16) and hidden (int8) states."""
    hidden, batch = inp(node, 1).shape[1], inp(node, 5).type.numel // inp(node, 1).shape[1]
    return (4 * hidden + batch * hidden) * 2 + batch * hidden


def _flops(node: Node) -> int:
    x, wx = inp(node, 0), inp(node, 1)
    gates, hidden, n_in = wx.shape
    return 2 * x.shape[0] * x.shape[1] * gates * hidden * (n_in + hidden)


register(OpDef("LstmInteger", infer=_infer, lower=_lower, scratch=_scratch, kernels=("ember_lstm_int",),
               flops=_flops))
