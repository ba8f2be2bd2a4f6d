"""The ONNX operator table: (domain, op_type) -> IR op, oldest supported opset, and the adapter that
rewrites a node of any supported opset into the IR's one canonical form (ember/ops documents each form).

Canonical forms follow the newest ONNX opset: values that older opsets carry as attributes become
constant inputs (Clip's bounds, Split's sizes, Squeeze/Unsqueeze/Reduce* axes, Pad, Slice, Reshape,
Dropout's ratio), defaults that changed between versions are written out (Concat's axis, Resize v10's
coordinate mode, BatchNormalization's training_mode), ONNX enums become IR values (Cast's `to` is a DType),
and semantics that changed are rebuilt from canonical ops (Softmax < 13 coerces its input to 2-D: a
Softmax over the last axis between two zero-copy Reshapes).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx

from ember.errors import ModelFormatError, UnsupportedOperatorError
from ember.frontends.onnx.dtypes import dtype_from_onnx, dtype_from_onnx_name
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry


@dataclass
class AdaptContext:
    """What an adapter may use: the graph (for constants and new values) and the node's opset."""

    graph: Graph
    opset: int

    def const(self, node: Node, what: str, array: np.ndarray) -> Value:
        return self.graph.constant(f"{node.name}_{what}", array)

    def value(self, node: Node, what: str) -> Value:
        """A new intermediate value; its type is inferred when its producer is added."""
        return self.graph.value(f"{node.name}_{what}", TensorType(DType.FLOAT32, ()))


Adapter = Callable[[Node, AdaptContext], list[Node]]


@dataclass(frozen=True)
class OnnxOp:
    ir: str  # the IR op ("" for ops the loader handles itself: If)
    since: int = 1  # oldest opset supported; older ones are rejected loudly (no silent fallback)
    adapt: Adapter | None = None  # rewrites the node into the canonical form (may add nodes around it)
    refusal: str = ""  # for an operator ember refuses (ir ""): what the user can do instead


def _x(node: Node) -> Value:
    x = node.inputs[0]
    assert x is not None
    return x


def _set_input(node: Node, i: int, v: Value | None) -> None:
    while len(node.inputs) <= i:
        node.inputs.append(None)
    node.inputs[i] = v


def _attr_to_input(name: str, slot: int, dtype: np.dtype | None = None, until: int = 10**9) -> Adapter:
    """Before opset `until`, attribute `name` becomes the constant input `slot` (int64 unless `dtype`)."""

    def adapt(node: Node, ctx: AdaptContext) -> list[Node]:
        if ctx.opset < until and name in node.attrs:
            value = np.asarray(node.attrs.pop(name), dtype or np.int64)
            _set_input(node, slot, ctx.const(node, name, value))
        return [node]

    return adapt


# Binary ops before opset 7: `broadcast=1` with `axis` aligns B's dims at A's `axis` (not at the end).
def _legacy_broadcast(node: Node, ctx: AdaptContext) -> list[Node]:
    broadcast, axis = node.attrs.pop("broadcast", 0), node.attrs.pop("axis", None)
    node.attrs.pop("consumed_inputs", None)
    b = node.input(1)
    if ctx.opset >= 7 or not broadcast or axis is None or b is None:
        return [node]
    rank = _x(node).type.rank
    trailing = rank - (axis + rank if axis < 0 else axis) - b.type.rank
    if trailing <= 0:
        return [node]
    shape = np.array([*b.shape, *[1] * trailing], np.int64)
    if b.is_const:
        node.inputs[1] = ctx.const(node, "b", np.asarray(b.const).reshape(shape))
        return [node]
    view = ctx.value(node, "b_aligned")
    reshape = Node("Reshape", ctx.graph.unique_name(f"{node.name}_align"), [b, ctx.const(node, "b_shape", shape)],
                   [view])
    node.inputs[1] = view
    return [reshape, node]


def _clip(node: Node, ctx: AdaptContext) -> list[Node]:
    if ctx.opset < 11:
        dt = _x(node).dtype.np
        lo, hi = node.attrs.pop("min", None), node.attrs.pop("max", None)
        node.inputs = [node.inputs[0], None if lo is None else ctx.const(node, "min", np.asarray(lo, dt)),
                       None if hi is None else ctx.const(node, "max", np.asarray(hi, dt))]
    return [node]


def _cast(node: Node, ctx: AdaptContext) -> list[Node]:
    to = node.attrs["to"]
    try:
        node.attrs["to"] = dtype_from_onnx_name(to) if isinstance(to, str) else dtype_from_onnx(int(to))
    except KeyError as e:
        raise UnsupportedOperatorError(node.op, node.name, str(e).strip("'\"")) from None
    return [node]


def _castlike(node: Node, ctx: AdaptContext) -> list[Node]:
    # Only the element type of `target_type` matters: a Cast to it (frees the target's buffer).
    target = node.inputs[1]
    assert target is not None
    node.inputs = node.inputs[:1]
    node.attrs = {"to": target.dtype, **{k: v for k, v in node.attrs.items() if k in ("saturate", "round_mode")}}
    return [node]


def _dtype_attr(*names: str) -> Adapter:
    def adapt(node: Node, ctx: AdaptContext) -> list[Node]:
        for name in names:
            if name in node.attrs:
                try:
                    node.attrs[name] = dtype_from_onnx(int(node.attrs[name]))
                except KeyError as e:  # bfloat16, strings, ...: a one-line refusal naming the node
                    reason = str(e).strip("'\"")
                    raise UnsupportedOperatorError(node.op, node.name, f"{name}: {reason}") from None
        return [node]

    return adapt


def _attention(node: Node, ctx: AdaptContext) -> list[Node]:
    """softmax_precision becomes a DType; bfloat16 (no ember type) becomes float32, which ember's softmax
    computes in anyway (it only ever widens the precision asked for)."""
    precision = node.attrs.get("softmax_precision")
    if precision is not None:
        if precision == onnx.TensorProto.BFLOAT16:
            node.attrs["softmax_precision"] = DType.FLOAT32
        elif precision in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE):
            node.attrs["softmax_precision"] = dtype_from_onnx(int(precision))
        else:
            raise UnsupportedOperatorError(node.op, node.name, f"softmax_precision {precision} (float, float16, "
                                           "double or bfloat16)")
    return [node]


def _dequantize(node: Node, ctx: AdaptContext) -> list[Node]:
    _dtype_attr("output_dtype")(node, ctx)
    scale, y = node.inputs[1], node.outputs[0]
    assert scale is not None
    if node.attrs.get("output_dtype", scale.dtype) is not DType.FLOAT16 or y is None:
        return [node]
    # A float16 result: the float32 kernel between Casts, as the reference computes (x - zp) * scale in
    # float32 and rounds the product to float16 once.
    scale32, y32 = ctx.value(node, "scale_f32"), ctx.value(node, "y_f32")
    widen = Node("Cast", ctx.graph.unique_name(f"{node.name}_scale_f32"), [scale], [scale32], {"to": DType.FLOAT32})
    node.inputs, node.outputs = [node.inputs[0], scale32, *node.inputs[2:]], [y32]
    node.attrs.pop("output_dtype", None)
    narrow = Node("Cast", ctx.graph.unique_name(f"{node.name}_f16"), [y32], [y], {"to": DType.FLOAT16})
    return [widen, node, narrow]


def _concat(node: Node, ctx: AdaptContext) -> list[Node]:
    node.attrs.setdefault("axis", 1)  # Concat-1's default; required from opset 4
    return [node]


def _split(node: Node, ctx: AdaptContext) -> list[Node]:
    """Sizes always as input 1: from the `split` attribute (< 13), `num_outputs` (>= 18) or equal parts."""
    x = _x(node)
    axis = int(node.attrs.get("axis", 0))
    n = x.shape[axis + x.type.rank if axis < 0 else axis] if -x.type.rank <= axis < x.type.rank else 0
    sizes = node.attrs.pop("split", None)
    parts = int(node.attrs.pop("num_outputs", len(node.outputs)))
    if node.input(1) is not None:
        return [node]
    if sizes is None:
        if parts == len(node.outputs) and n % parts == 0:
            sizes = [n // parts] * parts
        else:  # num_outputs: ceil-sized chunks, the last smaller
            chunk = -(-n // parts)
            sizes = [min(chunk, n - i * chunk) for i in range(parts)]
    _set_input(node, 1, ctx.const(node, "split", np.asarray(sizes, np.int64)))
    return [node]


def _pad(node: Node, ctx: AdaptContext) -> list[Node]:
    if ctx.opset < 11:
        pads = node.attrs.pop("pads", node.attrs.pop("paddings", None))
        value = node.attrs.pop("value", 0.0)
        node.inputs = [node.inputs[0], None if pads is None else ctx.const(node, "pads", np.asarray(pads, np.int64)),
                       ctx.const(node, "value", np.asarray(value, _x(node).dtype.np))]
    return [node]


def _slice(node: Node, ctx: AdaptContext) -> list[Node]:
    if ctx.opset < 10:
        starts, ends = node.attrs.pop("starts"), node.attrs.pop("ends")
        axes = node.attrs.pop("axes", None)
        node.inputs = [node.inputs[0], ctx.const(node, "starts", np.asarray(starts, np.int64)),
                       ctx.const(node, "ends", np.asarray(ends, np.int64)),
                       None if axes is None else ctx.const(node, "axes", np.asarray(axes, np.int64))]
    return [node]


def _resize(node: Node, ctx: AdaptContext) -> list[Node]:
    if ctx.opset < 11:  # Resize-10: (X, scales), asymmetric coordinates, nearest rounds down
        node.inputs = [node.inputs[0], None, node.input(1), None]
        node.attrs.setdefault("coordinate_transformation_mode", "asymmetric")
        node.attrs.setdefault("nearest_mode", "floor")
    return [node]


def _softmax(node: Node, ctx: AdaptContext) -> list[Node]:
    """Before opset 13, (Log)Softmax and Hardmax coerce X to 2-D [prod(dims before axis), prod(the rest)]: the
    same as a last-axis softmax (hardmax) of that 2-D view, between two reshapes (zero-copy views)."""
    if ctx.opset >= 13:
        return [node]
    x, y = _x(node), node.outputs[0]
    assert y is not None
    rank = x.type.rank
    axis = int(node.attrs.get("axis", 1))
    axis = axis + rank if axis < 0 else axis
    node.attrs["axis"] = -1
    if axis == rank - 1 or rank == 0:
        return [node]
    flat = np.array([int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))], np.int64)
    x2, y2 = ctx.value(node, "2d"), ctx.value(node, "2d_out")
    before = Node("Reshape", ctx.graph.unique_name(f"{node.name}_to2d"), [x, ctx.const(node, "shape2d", flat)], [x2])
    shape = ctx.const(node, "shape", np.array(x.shape, np.int64))
    after = Node("Reshape", ctx.graph.unique_name(f"{node.name}_from2d"), [y2, shape], [y])
    node.inputs, node.outputs = [x2], [y2]
    return [before, node, after]


def _onehot(node: Node, ctx: AdaptContext) -> list[Node]:
    if ctx.opset < 11:  # OneHot-9: indices outside [0, depth), negative ones included, are off
        node.attrs["_wrap_negative"] = 0
    return [node]


def _dropout(node: Node, ctx: AdaptContext) -> list[Node]:
    """Inputs (X, ratio, training_mode) whatever the opset: `ratio` was an attribute before 12, and before 7
    `is_test=0` asked for training mode."""
    if ctx.opset < 12:
        ratio = float(node.attrs.pop("ratio", 0.5))
        training = ctx.opset < 7 and not node.attrs.pop("is_test", 0)
        node.inputs = [node.inputs[0], ctx.const(node, "ratio", np.asarray(ratio, np.float32)),
                       ctx.const(node, "training_mode", np.asarray(training))]
    return _training_dropout(node, ctx)


def _seed(node: Node) -> None:
    """The reference seeds np.random.RandomState(int(seed)): a float attribute truncated, in [0, 2^32).
    Without a seed, one is drawn now, at compile time: every call of the bundle then draws the same values
    (it keeps no state between calls), and a recompile draws new ones."""
    seed = node.attrs.get("seed")
    if seed is None or seed != seed:  # the reference takes a NaN seed for none
        node.attrs["seed"] = secrets.randbelow(2**32)
        node.attrs["seed_drawn"] = True
        return
    if not np.isfinite(seed) or not 0 <= int(seed) < 2**32:
        raise ModelFormatError(f"node '{node.name}' ({node.op}): seed {seed} is outside [0, 2^32), which "
                               "numpy's generator (the ONNX reference) refuses")
    node.attrs["seed"] = int(seed)


def _random(node: Node, ctx: AdaptContext) -> list[Node]:
    _seed(node)
    _dtype_attr("dtype")(node, ctx)
    if "shape" in node.attrs:
        node.attrs["shape"] = tuple(int(d) for d in node.attrs["shape"])
    return [node]


def _bernoulli(node: Node, ctx: AdaptContext) -> list[Node]:
    """Bernoulli draws a bool (ember/ops/random.py); a Cast after it gives the `dtype` asked for."""
    _seed(node)
    _dtype_attr("dtype")(node, ctx)
    target = node.attrs.pop("dtype", _x(node).dtype)
    before: list[Node] = []
    if _x(node).dtype in (DType.FLOAT16, DType.BFLOAT16):  # widened exactly, as numpy widens p to double
        wide = ctx.value(node, "p32")
        before = [Node("Cast", ctx.graph.unique_name(f"{node.name}_widen"), [_x(node)], [wide],
                       {"to": DType.FLOAT32})]
        node.inputs = [wide]
    if target is DType.BOOL:
        return [*before, node]
    y = node.outputs[0]
    drawn = ctx.value(node, "drawn")
    node.outputs = [drawn]
    cast = Node("Cast", ctx.graph.unique_name(f"{node.name}_cast"), [drawn], [y], {"to": target})
    return [*before, node, cast]


def _training_dropout(node: Node, ctx: AdaptContext) -> list[Node]:
    """Dropout with a constant training_mode of true and a ratio other than 0 draws its mask: the
    TrainingDropout op. Any other Dropout stays the identity (ember/ops/misc.py)."""
    ratio_v, training_v = node.input(1), node.input(2)
    if training_v is None or training_v.const is None or not bool(np.asarray(training_v.const).reshape(-1)[0]):
        return [node]
    if ratio_v is not None and ratio_v.const is None:
        return [node]  # misc.py names the input that must be a compile-time constant
    ratio = np.asarray(0.5 if ratio_v is None else ratio_v.const).reshape(())
    if float(ratio) == 0.0:
        return [node]
    if not 0.0 < float(ratio) < 1.0:
        raise ModelFormatError(f"node '{node.name}' (Dropout): ratio {float(ratio)} is outside [0, 1)")
    _seed(node)
    # As the reference rounds it: 1.0 / (1.0 - ratio) in the ratio's own type (a Python float: double).
    scale = float(np.float64(1.0) / (np.float64(1.0) - ratio)) if ratio_v is None else float(1.0 / (1.0 - ratio))
    node.op = "TrainingDropout"
    node.inputs = node.inputs[:1]
    node.attrs = {**{k: v for k, v in node.attrs.items() if k.startswith("seed")}, "ratio": float(ratio),
                  "scale": scale}
    return [node]


def _batchnorm(node: Node, ctx: AdaptContext) -> list[Node]:
    if ctx.opset < 14:  # the running-statistics outputs are what asked for training mode
        node.attrs["training_mode"] = int(sum(o is not None for o in node.outputs) > 1)
    for legacy in ("spatial", "is_test", "consumed_inputs"):
        node.attrs.pop(legacy, None)
    return [node]


def _upsample(node: Node, ctx: AdaptContext) -> list[Node]:
    """Upsample (7-9) is Resize-10: scales (an attribute in 7, an input from 9), asymmetric, floor."""
    scales = node.attrs.pop("scales", None)
    if scales is not None:
        _set_input(node, 1, ctx.const(node, "scales", np.asarray(scales, np.float32)))
    mode = node.attrs.get("mode", "nearest")
    node.attrs["mode"] = "linear" if mode == "bilinear" else mode
    node.inputs = [node.inputs[0], None, node.input(1), None]
    node.attrs["coordinate_transformation_mode"] = "asymmetric"
    node.attrs["nearest_mode"] = "floor"
    return [node]


def _dft(node: Node, ctx: AdaptContext) -> list[Node]:
    """DFT-17 carries `axis` as an attribute (default 1); from opset 20 it is input 2 (default -2)."""
    if ctx.opset < 20:
        axis = int(node.attrs.pop("axis", 1))
        _set_input(node, 2, ctx.const(node, "axis", np.asarray(axis, np.int64)))
    return [node]


def _roialign(node: Node, ctx: AdaptContext) -> list[Node]:
    """RoiAlign before opset 16 had no coordinate_transformation_mode: it behaved as output_half_pixel."""
    if ctx.opset < 16:
        node.attrs.setdefault("coordinate_transformation_mode", "output_half_pixel")
    return [node]


def _no_legacy(*names: str) -> Adapter:
    def adapt(node: Node, ctx: AdaptContext) -> list[Node]:
        for name in names:
            node.attrs.pop(name, None)
        return [node]

    return adapt


def _with_count(outputs: int) -> Adapter:
    """Ops whose output size depends on values (ember/ops/dynamic.py) get their count output after their
    `outputs` ONNX outputs."""

    def adapt(node: Node, ctx: AdaptContext) -> list[Node]:
        node.outputs = [*node.outputs, *[None] * (outputs - len(node.outputs)), ctx.value(node, "count")]
        return [node]

    return adapt


def _topk(node: Node, ctx: AdaptContext) -> list[Node]:
    """K an attribute before opset 10; a K not known at compile time adds a count output (ops/reorder.py)."""
    node = _attr_to_input("k", 1, until=10)(node, ctx)[0]
    k = node.input(1)
    return _with_count(2)(node, ctx) if k is not None and not k.is_const else [node]


_BINARY = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Equal", "Less", "Greater")

ONNX_OPS: dict[tuple[str, str], OnnxOp] = {}


def _add(op_type: str, ir: str | None = None, since: int = 1, adapt: Adapter | None = None) -> None:
    ONNX_OPS[("", op_type)] = OnnxOp(op_type if ir is None else ir, since, adapt)


for _name in _BINARY:
    _add(_name, adapt=_legacy_broadcast)
_add("LayerNormalization", adapt=_dtype_attr("stash_type"))
_add("RMSNormalization", adapt=_dtype_attr("stash_type"))
_add("Attention", adapt=_attention)
_add("Gemm", adapt=_no_legacy("broadcast"))
_add("Clip", adapt=_clip)
_add("Cast", adapt=_cast)
_add("BitCast", adapt=_cast)
_add("CastLike", ir="Cast", adapt=_castlike)
_add("Softmax", adapt=_softmax)
_add("LogSoftmax", adapt=_softmax)
_add("Hardmax", adapt=_softmax)
# Scatter (opsets 9 and 11, deprecated since 11) is ScatterElements without reduction.
_add("Scatter", ir="ScatterElements", since=9)
_add("TopK", adapt=_topk)
_add("OneHot", since=9, adapt=_onehot)
_add("EyeLike", since=9, adapt=_dtype_attr("dtype"))
_add("BatchNormalization", since=7, adapt=_batchnorm)
_add("Dropout", adapt=_dropout)
for _name in ("RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike"):
    _add(_name, adapt=_random)
_add("Bernoulli", since=15, adapt=_bernoulli)
_add("Multinomial", since=7, adapt=_random)
_add("Concat", adapt=_concat)
_add("Split", adapt=_split)
_add("Slice", adapt=_slice)
_add("Pad", adapt=_pad)
_add("Reshape", adapt=_attr_to_input("shape", 1, until=5))
_add("Squeeze", adapt=_attr_to_input("axes", 1, until=13))
_add("Unsqueeze", adapt=_attr_to_input("axes", 1, until=13))
_add("Tile", since=6)
_add("RoiAlign", since=10, adapt=_roialign)
_add("Resize", since=10, adapt=_resize)
_add("Upsample", ir="Resize", since=7, adapt=_upsample)
for _name in ("ReduceSum", "ReduceMean", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"):
    _add(_name, adapt=_attr_to_input("axes", 1, until=13 if _name == "ReduceSum" else 18))
_add("QuantizeLinear", since=10, adapt=_dtype_attr("output_dtype"))
_add("DequantizeLinear", since=10, adapt=_dequantize)
_add("DynamicQuantizeLinear", since=11)
for _name in ("ConvInteger", "QLinearConv", "MatMulInteger", "QLinearMatMul"):
    _add(_name, since=10)
_add("NonZero", since=9, adapt=_with_count(1))
_add("Compress", since=9, adapt=_with_count(1))
_add("Unique", since=11, adapt=_with_count(4))
_add("NonMaxSuppression", since=10, adapt=_with_count(1))
_add("DFT", since=17, adapt=_dft)
for _name in ("HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"):
    _add(_name, since=17, adapt=_dtype_attr("output_datatype"))
# Control flow: the loader builds these itself (subgraphs); an If whose condition folds to a constant is
# inlined (the taken branch's nodes), Scan becomes a Loop (ember/ops/control.py).
_add("If")
_add("Loop")
_add("Scan", ir="Loop")


# Every other ai.onnx operator maps onto the registered OpDef of the same name (ember's operators keep
# ONNX's canonical names), so a new operator needs no line here unless an older opset's form differs.
# Only names ONNX defines: the IR's own operators (QConv, FusedElementwise, ...) never come from a file.
# Releases before opset 6 may carry the legacy `consumed_inputs` attribute, which meant nothing at inference.
_BY_NAME_ADAPTER = _no_legacy("consumed_inputs")


def lookup(op_type: str, domain: str) -> OnnxOp | None:
    domain = "" if domain in ("", "ai.onnx") else domain
    entry = ONNX_OPS.get((domain, op_type))
    if entry is None and not domain and op_type in registry.load_all() and onnx.defs.has(op_type):
        entry = OnnxOp(op_type, 1, _BY_NAME_ADAPTER)
    return entry


def supported_ops() -> set[str]:
    """The ai.onnx operator types the frontend maps (the table's and the registry's by name)."""
    by_name = {name for name in registry.load_all() if onnx.defs.has(name)}
    return by_name | {op_type for domain, op_type in ONNX_OPS
                      if not domain and ONNX_OPS[(domain, op_type)].ir and onnx.defs.has(op_type)}



def operator_table() -> dict[str, dict[str, int]]:
    """domain -> {operator: oldest supported opset of that domain}: every operator the frontend compiles
    (`ember operators`). ai.onnx operators mapped by name date from the opset that introduced them."""
    first: dict[str, int] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain == "":
            first[schema.name] = min(first.get(schema.name, schema.since_version), schema.since_version)
    table: dict[str, dict[str, int]] = {}
    for (domain, op_type), entry in ONNX_OPS.items():
        if entry.ir:
            since = max(entry.since, first.get(op_type, 1)) if not domain else entry.since
            table.setdefault(domain or "ai.onnx", {})[op_type] = since
    for name in supported_ops() - set(table.get("ai.onnx", {})):
        table.setdefault("ai.onnx", {})[name] = first[name]
    from ember.frontends.onnx.sequence import SEQUENCE_OPS  # resolved by the loader, not mapped to IR ops

    for name in SEQUENCE_OPS:
        table.setdefault("ai.onnx", {})[name] = first[name]
    return table


# onnxruntime's com.microsoft operators and the ai.onnx.ml domain register themselves in the table above.
from ember.frontends.onnx import contrib, ml  # noqa: E402, F401
