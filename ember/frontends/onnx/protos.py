"""ONNX protos <-> Python values, and onnx's own reference evaluation and shape inference of one NodeProto
(the loader folds constant nodes with the reference; the tests compare ember's inference with onnx's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ember.errors import ModelFormatError, ShapeError
from ember.frontends.onnx.dtypes import dtype_from_onnx, dtype_to_onnx
from ember.ir.dtypes import TensorType


def attr_to_python(a: onnx.AttributeProto) -> Any:
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, onnx.TensorProto):
        try:
            return numpy_helper.to_array(v)
        except (TypeError, ValueError, KeyError) as e:
            raise ModelFormatError(f"attribute '{a.name}': unreadable tensor ({type(e).__name__}: {e})") from None
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [x.decode("utf-8", errors="replace") for x in v]
    return v


def _positional(proto: onnx.NodeProto) -> onnx.NodeProto:
    """A copy of `proto` with inputs named in0, in1, ... and outputs out0, ... ('' where absent)."""
    node = onnx.NodeProto()
    node.CopyFrom(proto)
    node.ClearField("input")
    node.ClearField("output")
    node.input.extend(f"in{i}" if n else "" for i, n in enumerate(proto.input))
    node.output.extend(f"out{i}" if n else "" for i, n in enumerate(proto.output))
    return node


def evaluate_with_onnx(proto: onnx.NodeProto, opsets: dict[str, int],
                       arrays: list[np.ndarray | None]) -> list[np.ndarray]:
    """Run one node on constant inputs with the ONNX reference implementation, at the model's opsets."""
    from onnx.reference import ReferenceEvaluator

    node = _positional(proto)
    feeds = {f"in{i}": a for i, a in enumerate(arrays) if a is not None}
    # Wrapped in a model: a bare NodeProto would be evaluated at the newest opset, not the model's.
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype), np.shape(a))
              for k, a in feeds.items()]
    outputs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output if o]
    graph = helper.make_graph([node], "fold", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    res = ReferenceEvaluator(model).run(None, feeds)
    return [np.asarray(r) for r in res]


def infer_with_onnx(proto: onnx.NodeProto, opset: int, types: list[TensorType | None],
                    consts: list[np.ndarray | None]) -> list[TensorType | None]:
    """Output types from ONNX's schema inference of one node (constant inputs passed as data)."""
    node = _positional(proto)
    domain = "" if proto.domain in ("", "ai.onnx") else proto.domain
    schema = onnx.defs.get_schema(proto.op_type, max_inclusive_version=opset, domain=domain)
    tps, data = {}, {}
    for i, (t, c) in enumerate(zip(types, consts, strict=True)):
        if t is None:
            continue
        tps[f"in{i}"] = helper.make_tensor_type_proto(dtype_to_onnx(t.dtype), list(t.shape))
        if c is not None and c.size <= 1 << 16:
            data[f"in{i}"] = numpy_helper.from_array(np.asarray(c), f"in{i}")
    try:
        res = onnx.shape_inference.infer_node_outputs(schema, node, tps, data,
                                                      opset_imports=[helper.make_opsetid(domain, opset)])
    except Exception as e:  # onnx raises several exception types for inference errors
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ShapeError(f"node '{proto.name}' ({proto.op_type}): {first}") from None
    out: list[TensorType | None] = []
    for name in node.output:
        tp = res.get(name) if name else None
        if tp is None or not tp.tensor_type.HasField("shape") or any(
                not d.HasField("dim_value") for d in tp.tensor_type.shape.dim):
            out.append(None)
            continue
        out.append(TensorType(dtype_from_onnx(tp.tensor_type.elem_type),
                              tuple(d.dim_value for d in tp.tensor_type.shape.dim)))
    return out


def text(s: str | bytes) -> str:
    """A name from the file as text: protobuf returns proto2 strings that are not UTF-8 as bytes."""
    return s.decode("utf-8", errors="replace") if isinstance(s, bytes) else s
