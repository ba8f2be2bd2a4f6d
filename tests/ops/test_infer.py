"""Every OpDef's `infer` against ONNX's own shape inference, node by node, on the ONNX backend node tests.

The loader types each node with its OpDef's `infer` (after the frontend rewrote it into the canonical
form); here every ONNX node it loads is also given to onnx's schema inference at the model's opset, with
the same input types and constants, and the output types must agree. A wrong `infer` fails at its op,
not only where an end-to-end node test happens to notice.
"""

from __future__ import annotations

import onnx
import pytest

from ember.errors import EmberError
from ember.frontends.onnx import loader
from ember.frontends.onnx.protos import infer_with_onnx
from tests.ops import node_suite

COUNTED = [n for n in node_suite.in_scope() if node_suite.exclusion_reason(n) is None]


def _onnx_infers_wrongly(np_node: onnx.NodeProto) -> bool:
    """Nodes whose onnx shape inference contradicts the operator's schema (checked with onnx 1.23)."""
    attrs = {a.name for a in np_node.attribute}
    # STFT: onnx infers two-sided bins when `onesided` is absent, though its default is 1 (the schema, the
    # reference implementation, onnxruntime and test_stft's expected output all give frame_length/2 + 1).
    return np_node.op_type == "STFT" and "onesided" not in attrs


def test_infer_matches_onnx_shape_inference(monkeypatch: pytest.MonkeyPatch) -> None:
    mismatches: list[str] = []
    make_node = loader._Builder._make_node

    def checked(self, np_node, label, inputs):
        outputs = make_node(self, np_node, label, inputs)
        if _onnx_infers_wrongly(np_node):
            return outputs
        domain = "" if np_node.domain in ("", "ai.onnx") else np_node.domain
        types = [v.type if v is not None else None for v in inputs]
        consts = [v.const if v is not None else None for v in inputs]
        try:
            expected = infer_with_onnx(np_node, self.domains.get(domain, 0), types, consts)
        except EmberError:
            return outputs  # onnx cannot infer this node (e.g. an input it needs is not constant)
        for i, (v, want) in enumerate(zip(outputs, expected, strict=False)):
            got = v.type if v is not None else None
            if want is not None and got is not None and (got.dtype, got.shape) != (want.dtype, want.shape):
                mismatches.append(f"{current}: {np_node.op_type} '{label}' output {i}: ember {got}, onnx {want}")
        return outputs

    monkeypatch.setattr(loader._Builder, "_make_node", checked)
    loaded = 0
    for current in COUNTED:
        model, _, _ = node_suite.bake_shape_inputs(current)
        try:
            loader.load_onnx(model)
        except EmberError:
            continue  # an op ember rejects (the node test itself reports that)
        loaded += 1
    assert loaded >= 700, f"only {loaded} node tests loaded"
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:40])
