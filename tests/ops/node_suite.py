"""The official ONNX backend node tests, selected for the operators ember registers.

A test is *in scope* when every node in it is an operator ember implements. In-scope tests are
*excluded* (not counted) only for a stated reason listed in `EXCLUDED` or an OpDef's `excluded`
(an element type ember does not support, a dynamic shape, ...). Every other in-scope test counts;
the ones that fail are listed in `KNOWN_FAILURES` with a reason and must stay under 3%.
"""

from __future__ import annotations

import re
import warnings
from functools import cache

import numpy as np
import onnx
from onnx import numpy_helper

from ember.ops import registry

# Element types ember does not compile; tests using them are out of scope (reason in the value).
UNSUPPORTED_ELEM_TYPES = {
    onnx.TensorProto.BFLOAT16: "bfloat16 is not a supported element type",
    onnx.TensorProto.FLOAT8E4M3FN: "float8 types are not supported",
    onnx.TensorProto.FLOAT8E4M3FNUZ: "float8 types are not supported",
    onnx.TensorProto.FLOAT8E5M2: "float8 types are not supported",
    onnx.TensorProto.FLOAT8E5M2FNUZ: "float8 types are not supported",
    onnx.TensorProto.UINT4: "4-bit integer types are not supported",
    onnx.TensorProto.INT4: "4-bit integer types are not supported",
    onnx.TensorProto.STRING: "string tensors are not supported",
    onnx.TensorProto.COMPLEX64: "complex types are not supported",
    onnx.TensorProto.COMPLEX128: "complex types are not supported",
}
for _name in ("FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"):
    if hasattr(onnx.TensorProto, _name):
        UNSUPPORTED_ELEM_TYPES[getattr(onnx.TensorProto, _name)] = f"{_name.lower()} is not supported"

# Tests excluded for reasons that are not about one operator: name -> reason.
EXCLUDED: dict[str, str] = {}

# In-scope tests that fail today: name -> reason. Counted against the 97% bar.
KNOWN_FAILURES: dict[str, str] = {
    "test_flexattention_double_expanded_ver26": "MatMul has no float64 kernel yet (float32 only)",
}


def as_array(a: object) -> np.ndarray:
    """Test data comes as numpy arrays or, for some dtypes, as TensorProtos."""
    return numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else np.asarray(a)


@cache
def all_node_tests() -> dict[str, object]:
    from onnx.backend.test import loader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {t.name: t for t in loader.load_model_tests(kind="node")}


def _elem_types(model: onnx.ModelProto) -> set[int]:
    types = set()
    g = model.graph
    for vi in [*g.input, *g.output, *g.value_info]:
        if vi.type.HasField("tensor_type"):
            types.add(vi.type.tensor_type.elem_type)
    for init in g.initializer:
        types.add(init.data_type)
    for n in g.node:
        for a in n.attribute:
            if a.name == "to":
                types.add(a.i)
            if a.HasField("t"):
                types.add(a.t.data_type)
    return types


def _ops(model: onnx.ModelProto) -> set[str]:
    ops = set()

    def walk(graph: onnx.GraphProto) -> None:
        for n in graph.node:
            ops.add(n.op_type)
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)

    walk(model.graph)
    return ops


def exclusion_reason(name: str) -> str | None:
    t = all_node_tests()[name]
    if name in EXCLUDED:
        return EXCLUDED[name]
    for op in registry.load_all().values():
        for pattern, reason in op.excluded.items():
            if re.fullmatch(pattern, name):
                return reason
    for et in _elem_types(t.model):
        if et in UNSUPPORTED_ELEM_TYPES:
            return UNSUPPORTED_ELEM_TYPES[et]
    return None


def in_scope() -> list[str]:
    known = {t for op in registry.load_all().values() for t in op.onnx} | {"If"}
    return sorted(n for n, t in all_node_tests().items() if _ops(t.model) <= known)


def bake_shape_inputs(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray], list[str]]:
    """Model with every input that feeds a compile-time-constant slot turned into an initializer.

    Returns the model, the remaining run-time inputs, and the output names.
    """
    t = all_node_tests()[name]
    model = onnx.ModelProto()
    model.CopyFrom(t.model)
    inputs, outputs = t.data_sets[0]
    g = model.graph
    feeds = {vi.name: as_array(a) for vi, a in zip(g.input, inputs, strict=False)}
    const_slots: set[str] = set()
    for n in g.node:
        op = registry.lookup_onnx(n.op_type, n.domain)
        if op is None:
            continue
        for i in op.shape_inputs:
            if i < len(n.input) and n.input[i]:
                const_slots.add(n.input[i])
    for vi in list(g.input):
        if vi.name in const_slots and vi.name in feeds:
            g.initializer.append(numpy_helper.from_array(feeds.pop(vi.name), vi.name))
            g.input.remove(vi)
    return model, feeds, [o.name for o in g.output]
