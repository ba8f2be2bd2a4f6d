"""The recurrent layers LSTM, GRU and RNN (float32; float16 computed through float32), on kernels/recurrent.c.

Canonical form (ONNX's, opset 14+): inputs X, W, R, B, sequence_lens, initial_h (and for LSTM initial_c, P);
outputs Y, Y_h (and Y_c), each optional. Attributes: hidden_size, direction, layout, clip, activations,
activation_alpha, activation_beta, input_forget (LSTM), linear_before_reset (GRU).

The lowering runs the input projection of all time steps as one matmul (ember_matmul_f32) into scratch,
then the recurrence (one h . R^T per step and the gate math). Gate blocks are padded to `hp` columns, the
hidden size rounded up to the kernel's 16-column panels, so that every block starts on a panel. Constant
W, R and B are packed at load time (normalize): W^T padded, R^T in panels, the two biases summed;
run-time ones are packed into scratch by ember_rnn_pack_f32 into the same layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import typed
from ember.ops.matmul import float16_via_f32, require_f32
from ember.ops.opdef import OpDef
from ember.ops.registry import register

PANEL = 16  # EMBER_RNN_PW in kernels/recurrent.c
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEFAULT_ACTIVATIONS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
# Activation name -> kernel code (EMBER_RNN_* in kernels/recurrent.c).
ACT_KINDS = {"relu": 0, "tanh": 1, "sigmoid": 2, "affine": 3, "leakyrelu": 4, "thresholdedrelu": 5,
             "scaledtanh": 6, "hardsigmoid": 7, "elu": 8, "softsign": 9, "softplus": 10}
# The activations that take alpha / beta, with the defaults of the ONNX operators of the same names.
ALPHA_DEFAULTS = {"affine": 1.0, "leakyrelu": 0.01, "thresholdedrelu": 1.0, "scaledtanh": 1.0, "hardsigmoid": 0.2,
                  "elu": 1.0}
BETA_DEFAULTS = {"affine": 0.0, "scaledtanh": 1.0, "hardsigmoid": 0.5}
# Where the packed constants go (normalize): W^T, R panels and the summed bias replace inputs 1, 2, 3;
# the GRU's separate h-gate R bias (linear_before_reset) is this extra slot.
_RBH_SLOT = 8
_PACKED = "_packed"


@dataclass(frozen=True)
class Dims:
    seq: int
    batch: int
    input: int
    hidden: int
    dirs: int
    gates: int

    @property
    def hp(self) -> int:
        """The hidden size rounded up to whole panels: the width of each gate block."""
        return -(-self.hidden // PANEL) * PANEL

    @property
    def width(self) -> int:
        """Columns of the projection: every direction's gate blocks."""
        return self.dirs * self.gates * self.hp


def _err(node: Node, msg: str) -> ShapeError:
    return ShapeError(f"node '{node.name}' ({node.op}): {msg}")


def _dirs(node: Node) -> int:
    direction = node.attrs.get("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise UnsupportedOperatorError(node.op, node.name, f"direction '{direction}' (forward, reverse or "
                                       "bidirectional)")
    return 2 if direction == "bidirectional" else 1


def _layout(node: Node) -> int:
    layout = int(node.attrs.get("layout", 0))
    if layout not in (0, 1):
        raise UnsupportedOperatorError(node.op, node.name, f"layout {layout} (0 or 1)")
    return layout


def dims(node: Node) -> Dims:
    """The node's sizes, from X and R (R's last dim is the hidden size; after packing, from attrs)."""
    x = node.inputs[0]
    assert x is not None
    if x.type.rank != 3:
        raise _err(node, f"X must be 3-D, not {list(x.shape)}")
    seq, batch = (x.shape[1], x.shape[0]) if _layout(node) else (x.shape[0], x.shape[1])
    if _PACKED in node.attrs:
        hidden = node.attrs[_PACKED]
    else:
        r = node.input(2)
        if r is None or r.type.rank != 3:
            raise _err(node, "R must be 3-D [num_directions, gates * hidden_size, hidden_size]")
        hidden = r.shape[2]
    return Dims(seq, batch, x.shape[2], hidden, _dirs(node), GATES[node.op])


def _check_shape(node: Node, slot: int, what: str, expected: tuple[int, ...]) -> None:
    v = node.input(slot)
    if v is not None and tuple(v.shape) != expected:
        raise _err(node, f"{what} has shape {list(v.shape)}, expected {list(expected)}")


def _infer(node: Node) -> list[TensorType | None]:
    x = node.inputs[0]
    assert x is not None
    for slot in (1, 2):
        if node.input(slot) is None:
            raise _err(node, f"input {'W' if slot == 1 else 'R'} is required")
    d = dims(node)
    h = int(node.attrs.get("hidden_size", d.hidden))
    if h != d.hidden or h <= 0:
        raise _err(node, f"hidden_size {h} does not match R {list(node.inputs[2].shape)}")  # type: ignore[union-attr]
    g, dirs, layout = d.gates, d.dirs, _layout(node)
    state = (d.batch, dirs, h) if layout else (dirs, d.batch, h)
    _check_shape(node, 1, "W", (dirs, g * h, d.input))
    _check_shape(node, 2, "R", (dirs, g * h, h))
    _check_shape(node, 3, "B", (dirs, 2 * g * h))
    _check_shape(node, 4, "sequence_lens", (d.batch,))
    _check_shape(node, 5, "initial_h", state)
    if node.op == "LSTM":
        _check_shape(node, 6, "initial_c", state)
        _check_shape(node, 7, "P", (dirs, 3 * h))
    elif len(node.inputs) > 6 and any(v is not None for v in node.inputs[6:]):
        raise _err(node, f"{node.op} takes at most 6 inputs")
    lens = node.input(4)
    if lens is not None and lens.dtype is not DType.INT32:
        raise UnsupportedOperatorError(node.op, node.name, f"sequence_lens of type {lens.dtype.short} (int32)")
    y = (d.batch, d.seq, dirs, h) if layout else (d.seq, dirs, d.batch, h)
    n_out = 3 if node.op == "LSTM" else 2
    if len(node.outputs) > n_out:
        raise _err(node, f"{node.op} has at most {n_out} outputs")
    return [typed(x.dtype, y), typed(x.dtype, state), typed(x.dtype, state)][:len(node.outputs)]


def activations(node: Node) -> list[tuple[int, float, float]]:
    """(kind, alpha, beta) of each activation, per direction in order (f, g, h): 1, 2 or 3 per direction.

    alpha / beta values are consumed in order by the activations that take them; defaults after that.
    """
    per_dir = len(DEFAULT_ACTIVATIONS[node.op])
    dirs = _dirs(node)
    names = [str(n) for n in node.attrs.get("activations", [])] or list(DEFAULT_ACTIVATIONS[node.op]) * dirs
    if len(names) == per_dir and dirs == 2:
        names = names * 2  # one set given for both directions
    if len(names) != per_dir * dirs:
        raise UnsupportedOperatorError(node.op, node.name, f"{len(names)} activations; {node.op} takes {per_dir} "
                                       "per direction")
    alphas = [float(a) for a in node.attrs.get("activation_alpha", [])]
    betas = [float(b) for b in node.attrs.get("activation_beta", [])]
    out = []
    for name in names:
        key = name.lower()
        if key not in ACT_KINDS:
            raise UnsupportedOperatorError(node.op, node.name, f"activation '{name}' (one of Relu, Tanh, Sigmoid, "
                                           "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                                           "Softsign, Softplus)")
        alpha = alphas.pop(0) if key in ALPHA_DEFAULTS and alphas else ALPHA_DEFAULTS.get(key, 0.0)
        beta = betas.pop(0) if key in BETA_DEFAULTS and betas else BETA_DEFAULTS.get(key, 0.0)
        out.append((ACT_KINDS[key], alpha, beta))
    return out


# Packing (the layouts of ember_rnn_pack_f32 in kernels/recurrent.c) ---------------------------------

def _pad_blocks(a: np.ndarray, d: Dims) -> np.ndarray:
    """[dirs, gates * hidden, ...] -> [dirs, gates, hp, ...], padding rows zero."""
    a = a.reshape(d.dirs, d.gates, d.hidden, *a.shape[2:])
    pad = [(0, 0)] * a.ndim
    pad[2] = (0, d.hp - d.hidden)
    return np.pad(a, pad)


def pack_wt(w: np.ndarray, d: Dims) -> np.ndarray:
    """W [dirs, G*H, I] -> W^T [I, dirs * G * hp]."""
    return np.ascontiguousarray(_pad_blocks(w, d).reshape(d.width, d.input).T, dtype=np.float32)


def pack_r(r: np.ndarray, d: Dims) -> np.ndarray:
    """R [dirs, G*H, H] -> panels [dirs, G, hp / 16, H, 16] (R^T, 16 columns at a time), flat."""
    p = _pad_blocks(r, d).reshape(d.dirs, d.gates, d.hp // PANEL, PANEL, d.hidden)
    return np.ascontiguousarray(p.transpose(0, 1, 2, 4, 3).reshape(-1), dtype=np.float32)


def pack_bias(b: np.ndarray, d: Dims, lbr: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """B [dirs, 2*G*H] -> (Wb + Rb per gate block [dirs * G * hp], the GRU h gate's Rb [dirs * hp] or None)."""
    b = b.reshape(d.dirs, 2, d.gates, d.hidden)
    summed = b[:, 0] + b[:, 1]
    rbh = None
    if lbr:  # the h gate's Rb is multiplied by r: kept apart
        summed[:, 2] = b[:, 0, 2]
        rbh = np.pad(b[:, 1, 2], [(0, 0), (0, d.hp - d.hidden)]).reshape(-1).astype(np.float32)
    summed = np.pad(summed, [(0, 0), (0, 0), (0, d.hp - d.hidden)]).reshape(-1).astype(np.float32)
    return summed, rbh


def _lbr(node: Node) -> bool:
    return node.op == "GRU" and bool(node.attrs.get("linear_before_reset", 0))


def _normalize(node: Node, graph: Graph) -> None:
    require_f32(node, *(node.input(i) for i in (0, 1, 2, 3, 5, 6, 7)), *node.outputs)
    d = dims(node)
    activations(node)  # refuses unknown names at load time
    if _PACKED in node.attrs:
        return
    w, r, b = node.input(1), node.input(2), node.input(3)
    if not (w is not None and w.is_const and r is not None and r.is_const and (b is None or b.is_const)):
        return  # packed at run time, into scratch
    node.inputs[1] = graph.constant(f"{w.name}_packed", pack_wt(np.asarray(w.const, np.float32), d))
    node.inputs[2] = graph.constant(f"{r.name}_packed", pack_r(np.asarray(r.const, np.float32), d))
    if b is not None:
        bias, rbh = pack_bias(np.asarray(b.const, np.float32), d, _lbr(node))
        node.inputs[3] = graph.constant(f"{b.name}_packed", bias)
        if rbh is not None:
            while len(node.inputs) <= _RBH_SLOT:
                node.inputs.append(None)
            node.inputs[_RBH_SLOT] = graph.constant(f"{b.name}_rbh", rbh)
    node.attrs[_PACKED] = d.hidden


# Lowering ---------------------------------------------------------------------------------------

def _align(n_floats: int) -> int:
    return -(-n_floats // 16) * 16  # 64-byte pieces


def _scratch_parts(node: Node) -> list[tuple[str, int]]:
    """(name, floats) of each scratch piece, in order."""
    d = dims(node)
    parts = [("xw", d.seq * d.batch * d.width), ("state", 2 * d.hp * d.batch)]
    if _PACKED not in node.attrs:
        parts += [("wt", d.input * d.width), ("rp", d.width * d.hidden)]
        if node.input(3) is not None:
            parts += [("bias", d.width), ("rbh", d.dirs * d.hp if _lbr(node) else 0)]
    return parts


def _scratch(node: Node) -> int:
    return 4 * sum(_align(n) for _, n in _scratch_parts(node))


def _lower(node: Node, k: KernelEmitter) -> None:
    d = dims(node)
    f32 = DType.FLOAT32
    base, off, at = k.scratch("float"), 0, {}
    for name, n in _scratch_parts(node):
        at[name] = f"({base} + {off})" if n else "0"
        off += _align(n)
    if _PACKED in node.attrs:
        wt, rp = k.inp(1), k.inp(2)
        bias = k.inp(3) if node.input(3) is not None else "0"
        rbh = k.inp(_RBH_SLOT) if node.input(_RBH_SLOT) is not None else "0"
    else:
        wt, rp = at["wt"], at["rp"]
        bias, rbh = at.get("bias", "0"), at.get("rbh", "0")
        k.call("ember_rnn_pack_f32", wt, rp, bias, rbh, k.inp(1), k.inp(2), k.inp(3), d.dirs, d.gates, d.hidden,
               d.input, d.hp, int(_lbr(node)))
    xw, rows = at["xw"], d.seq * d.batch
    # The bias is added by each step (the matmul's per-column bias would cost it a pass over its output).
    if rows and d.input:
        k.call("ember_matmul_f32", xw, d.width, k.inp(0), d.input, 1, wt, d.width, rows, d.width, d.input, "1.0f",
               "0", 0, 0, "1.0f", 0, "0.0f", "0.0f")
    elif rows:  # no input features: a zero projection
        k.line(f"{{ ptrdiff_t ember_i; for (ember_i = 0; ember_i < {rows * d.width}; ++ember_i) "
               f"{xw}[ember_i] = 0.0f; }}")
    acts = activations(node)
    per_dir = len(acts) // d.dirs
    clip = node.attrs.get("clip")
    outs = [node.outputs[i] if i < len(node.outputs) else None for i in range(3)]
    fields = {
        "seq": d.seq, "batch": d.batch, "hidden": d.hidden, "hp": d.hp, "dirs": d.dirs, "layout": _layout(node),
        "reverse": int(node.attrs.get("direction", "forward") == "reverse"),
        "xw": xw, "rp": rp, "bias": bias, "rbh": rbh, "p": k.inp(7) if node.op == "LSTM" else "0",
        "h0": k.inp(5), "c0": k.inp(6) if node.op == "LSTM" else "0", "lens": k.inp(4, "int32_t"),
        "y": k.ptr(outs[0]), "yh": k.ptr(outs[1]), "yc": k.ptr(outs[2]), "state": at["state"],
        "clip": literal(float(clip), f32) if clip is not None else "__builtin_inff()",
        "input_forget": int(bool(node.attrs.get("input_forget", 0))) if node.op == "LSTM" else 0,
        "linear_before_reset": int(_lbr(node)),
    }
    for di in range(2):
        for j in range(3):
            kind, alpha, beta = acts[min(di, d.dirs - 1) * per_dir + j] if j < per_dir else (0, 0.0, 0.0)
            fields[f"act[{di}][{j}]"] = kind
            fields[f"alpha[{di}][{j}]"] = literal(alpha, f32)
            fields[f"beta[{di}][{j}]"] = literal(beta, f32)
    k.need(f"ember_{node.op.lower()}_f32")
    with k.w.block():
        k.line("ember_rnn_args ember_ra;")
        for name, value in fields.items():
            k.line(f"ember_ra.{name} = {value};")
        k.line(f"ember_{node.op.lower()}_f32(&ember_ra);")


def _flops(node: Node) -> int:
    d = dims(node)
    cols = d.dirs * d.gates * d.hidden
    return 2 * d.seq * d.batch * cols * (d.input + d.hidden)


for _op in GATES:
    register(float16_via_f32(OpDef(
        _op, infer=_infer, normalize=_normalize, lower=_lower, scratch=_scratch, flops=_flops,
        kernels=("ember_rnn_pack_f32", "ember_matmul_f32", f"ember_{_op.lower()}_f32"),
    )))
