"""Strict model validation before lowering: the ONNX checker plus ember's own structural checks.

`check_model` runs on the proto before anything is built from it; `check_types` compares what the model
declares with what ember inferred once it is loaded. Every problem is a one-line ModelFormatError naming
the node or tensor, instead of a traceback (or a wrong bundle) later.
"""

from __future__ import annotations

import onnx
from onnx import AttributeProto, TensorProto

from ember.errors import ModelFormatError
from ember.frontends.onnx.dtypes import dtype_from_onnx
from ember.ir.graph import Graph, Value

# Checker complaints about operators it does not know: the loader names those (UnsupportedOperatorError).
_LEFT_TO_LOADER = ("No Op registered", "No opset import for domain", "is not a registered function/op")
# The checker serializes the model; protobuf cannot past 2 GiB (such models keep weights external anyway).
_CHECKER_MAX_BYTES = (2 << 30) - 1


def file_passes_checker(path: str) -> bool:
    """The ONNX checker on the file itself (its C++ side reads it; no serialized copy of a large model in
    Python). False when it complains: check_model then runs it on the proto, which names the problem."""
    try:
        onnx.checker.check_model(path)
    except Exception:  # noqa: BLE001 - any complaint is reported by check_model's own run
        return False
    return True


def check_model(model: onnx.ModelProto, run_checker: bool = True) -> None:
    """Structure first (named errors), then the ONNX checker for everything else (`run_checker=False`
    when the model's file already passed it)."""
    _check_opsets(model)
    g = model.graph
    _check_attributes(g)
    _check_producers(g)
    _check_outputs(g)
    if run_checker and model.ByteSize() <= _CHECKER_MAX_BYTES:
        _run_checker(model)


def _run_checker(model: onnx.ModelProto) -> None:
    """onnx.checker.check_model, minus its complaints about outputs and value_info without a type or shape:
    exporters, quantization tools and hand-built models write those (onnxruntime runs such models; ember
    infers types and shapes). The model is left as it was."""
    g = model.graph
    saved = onnx.GraphProto()
    saved.output.extend(g.output)
    saved.value_info.extend(g.value_info)
    untyped = any(not _fully_typed(vi) for vi in (*g.output, *g.value_info))
    if untyped:
        for field in ("output", "value_info"):
            typed = [vi for vi in getattr(saved, field) if _fully_typed(vi)]
            del getattr(g, field)[:]
            getattr(g, field).extend(typed)
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as e:
        text = " ".join(str(e).split())
        if not any(s in text for s in _LEFT_TO_LOADER):
            raise ModelFormatError(f"invalid ONNX model: {text[:300]}") from None
    finally:
        if untyped:
            for field in ("output", "value_info"):
                del getattr(g, field)[:]
                getattr(g, field).extend(getattr(saved, field))


def _fully_typed(vi: onnx.ValueInfoProto) -> bool:
    if not vi.HasField("type"):
        return False
    if vi.type.HasField("tensor_type"):
        t = vi.type.tensor_type
        return t.HasField("elem_type") and t.HasField("shape")
    return True


def _check_opsets(model: onnx.ModelProto) -> None:
    newest = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and not 1 <= o.version <= newest:
            raise ModelFormatError(f"model imports ai.onnx opset {o.version}; onnx {onnx.__version__} "
                                   f"knows opsets 1 to {newest}")


# Attributes that index axes: ONNX's C++ inference reads them as 32-bit ints, so 2**40 would pass as axis 0.
_AXIS_ATTRIBUTES = {"axis", "axes", "perm"}


def _check_attributes(g: onnx.GraphProto) -> None:
    """A tensor attribute must say its element type (a fuzzed model reached numpy with UNDEFINED); an axis
    must be a plausible one."""
    for n in g.node:
        for a in n.attribute:
            if a.name in _AXIS_ATTRIBUTES and any(abs(v) > 1 << 16 for v in (a.i, *a.ints)):
                raise ModelFormatError(f"node '{n.name or n.op_type}' ({n.op_type}): attribute '{a.name}' "
                                       f"holds an impossible axis {max((a.i, *a.ints), key=abs)}")
            tensors = [a.t] if a.type == AttributeProto.TENSOR else list(a.tensors)
            for t in tensors:
                if t.data_type == TensorProto.UNDEFINED or t.data_type not in TensorProto.DataType.values():
                    raise ModelFormatError(f"node '{n.name or n.op_type}' ({n.op_type}): attribute '{a.name}' "
                                           f"holds a tensor of undefined element type {t.data_type}")
            for sub in ([a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)):
                _check_attributes(sub)


def _check_producers(g: onnx.GraphProto) -> None:
    """Single static assignment: each tensor comes from exactly one node, input or initializer."""
    producer: dict[str, str] = {}
    for i in g.input:
        producer[i.name] = "graph input"
    for init in g.initializer:
        if init.name in producer and producer[init.name] != "graph input":
            raise ModelFormatError(f"tensor '{init.name}' is defined by two initializers")
        producer.setdefault(init.name, "initializer")
    for n in g.node:
        label = f"node '{n.name or n.op_type}'"
        for o in n.output:
            if not o:
                continue
            if o in producer:
                raise ModelFormatError(f"tensor '{o}' is written by {producer[o]} and by {label} ({n.op_type})")
            producer[o] = label


def _check_outputs(g: onnx.GraphProto) -> None:
    if not g.output:
        raise ModelFormatError("the graph declares no outputs")
    made = {i.name for i in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
    seen: set[str] = set()
    for o in g.output:
        if o.name not in made:
            raise ModelFormatError(f"graph output '{o.name}' is produced by no node, input or initializer")
        if o.name in seen:
            raise ModelFormatError(f"graph output '{o.name}' is declared twice")
        seen.add(o.name)


def check_types(model: onnx.ModelProto, graph: Graph, inputs_overridden: bool = False) -> None:
    """Declared element types of outputs and value_info agree with what ember inferred.

    `inputs_overridden`: --input changed an input's dtype, so declared types downstream may differ."""
    if inputs_overridden:
        return
    values: dict[str, Value] = {}
    for n in graph.nodes:
        for v in n.outputs:
            if v is not None:
                values.setdefault(v.name, v)
    for name, v in zip(graph.output_names, graph.outputs, strict=True):
        values[name] = v
    declared = [(vi, "output") for vi in model.graph.output] + [(vi, "value_info") for vi in model.graph.value_info]
    for vi, kind in declared:
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        v = values.get(vi.name)
        if not elem or v is None:
            continue
        try:
            want = dtype_from_onnx(elem)
        except (KeyError, ValueError):
            raise ModelFormatError(f"{kind} '{vi.name}': element type {elem} is not one ember knows") from None
        if want != v.type.dtype:
            raise ModelFormatError(f"{kind} '{vi.name}' is declared {want.short}, but its producer gives "
                                   f"{v.type.dtype.short}")
