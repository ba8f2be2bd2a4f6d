"""Conversions between ember IR nodes and ONNX protos, used for type inference and constant folding."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ember.errors import ModelFormatError, ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node


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


def _attr_to_proto_value(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return numpy_helper.from_array(v)
    return v


def node_to_proto(node: Node) -> onnx.NodeProto:
    """An ONNX NodeProto for `node`, inputs named by position (in0, in1, ...; '' when absent)."""
    ins = [f"in{i}" if v is not None else "" for i, v in enumerate(node.inputs)]
    outs = [f"out{i}" if v is not None else "" for i, v in enumerate(node.outputs)]
    attrs = {k: _attr_to_proto_value(v) for k, v in node.attrs.items() if not k.startswith("_")}
    # An empty list has no element type to infer: the operator's schema gives it.
    empty = {k for k, v in attrs.items() if isinstance(v, list) and not v}
    proto = helper.make_node(node.op, ins, outs, domain=node.domain or None,
                             **{k: v for k, v in attrs.items() if k not in empty})
    proto.attribute.extend(helper.make_attribute(k, [], attr_type=_schema_attr_type(node, k)) for k in sorted(empty))
    return proto


def _schema_attr_type(node: Node, attr: str) -> onnx.AttributeProto.AttributeType:
    try:
        schema = onnx.defs.get_schema(node.op, max_inclusive_version=node.version, domain=node.domain or "")
        kind = schema.attributes[attr].type
    except (onnx.defs.SchemaError, KeyError):
        raise UnsupportedOperatorError(node.op, node.name, node.domain, f"attribute '{attr}' is empty") from None
    if kind not in _LIST_TYPES:
        raise ModelFormatError(f"node '{node.name}' ({node.op}): attribute '{attr}' is an empty list, the operator "
                               f"takes {onnx.AttributeProto.AttributeType.Name(kind)}")
    return kind


_LIST_TYPES = {onnx.AttributeProto.INTS, onnx.AttributeProto.FLOATS, onnx.AttributeProto.STRINGS,
               onnx.AttributeProto.TENSORS, onnx.AttributeProto.GRAPHS}


def _opset(node: Node) -> dict[str, int]:
    return {node.domain or "": node.version}


def infer_with_onnx(node: Node) -> list[TensorType | None]:
    """Output types from ONNX's schema inference, constant inputs passed as data."""
    proto = node_to_proto(node)
    try:
        schema = onnx.defs.get_schema(node.op, max_inclusive_version=node.version, domain=node.domain or "")
    except onnx.defs.SchemaError:
        detail = f"not defined at opset {node.version}"
        raise UnsupportedOperatorError(node.op, node.name, node.domain, detail) from None
    types, data = {}, {}
    for i, v in enumerate(node.inputs):
        if v is None:
            continue
        types[f"in{i}"] = helper.make_tensor_type_proto(v.dtype.onnx, list(v.shape))
        if v.const is not None and v.const.size <= 1 << 16:
            data[f"in{i}"] = numpy_helper.from_array(v.const, f"in{i}")
    opsets = [helper.make_opsetid(d, ver) for d, ver in _opset(node).items()]
    try:
        res = onnx.shape_inference.infer_node_outputs(schema, proto, types, data, opset_imports=opsets)
    except Exception as e:  # onnx raises several exception types for inference errors
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ShapeError(f"node '{node.name}' ({node.op}): {first}") from None
    out: list[TensorType | None] = []
    for i, v in enumerate(node.outputs):
        if v is None:
            out.append(None)
            continue
        tp = res.get(f"out{i}")
        if tp is None or not tp.tensor_type.HasField("shape"):
            raise ShapeError(f"node '{node.name}' ({node.op}): output {i} has no static shape")
        dims = []
        for d in tp.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                raise ShapeError(
                    f"node '{node.name}' ({node.op}): output '{v.name}' has a data-dependent dimension;"
                    " ember needs static shapes"
                )
            dims.append(d.dim_value)
        out.append(TensorType(DType.from_onnx(tp.tensor_type.elem_type), tuple(dims)))
    return out


def evaluate_with_onnx(node: Node, arrays: list[np.ndarray | None]) -> list[np.ndarray]:
    """Run one node on constant inputs with the ONNX reference implementation."""
    from onnx.reference import ReferenceEvaluator

    proto = node_to_proto(node)
    feeds = {f"in{i}": a for i, a in enumerate(arrays) if a is not None}
    # Wrapped in a model: a bare NodeProto would be evaluated at the newest opset, not the node's.
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype), np.shape(a))
              for k, a in feeds.items()]
    outputs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in proto.output if o]
    graph = helper.make_graph([proto], "fold", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in _opset(node).items()])
    res = ReferenceEvaluator(model).run(None, feeds)
    return [np.asarray(r) for r in res]
