"""The registry rule: every OpDef has a lowering and an `infer`, its kernels exist; every ONNX op of the
frontend's table maps to a registered OpDef and matches some ONNX node test."""

from __future__ import annotations

import re

from ember.codegen import library
from ember.frontends.onnx.ops import ONNX_OPS
from ember.ops import registry
from ember.ops.opdef import _NO_LOWERING
from tests.ops import node_suite


def test_every_op_is_lowered_and_its_kernels_exist() -> None:
    blocks = library.blocks()
    for op in registry.load_all().values():
        assert op.expr is not None or op.lower is not None or op.name in _NO_LOWERING, op.name
        for k in op.kernels:
            assert k in blocks, f"{op.name}: kernel block {k} missing from codegen/kernels"


def test_every_op_infers_its_output_types() -> None:
    for op in registry.load_all().values():
        assert op.infer is not None, f"{op.name} has no infer"


def test_every_onnx_op_matches_a_node_test() -> None:
    names = list(node_suite.all_node_tests())
    ops = registry.load_all()
    for (_, op_type), entry in ONNX_OPS.items():
        assert not entry.ir or entry.ir in ops, f"ONNX {op_type} maps to unregistered op {entry.ir}"
        patterns = node_suite.TESTS.get(op_type, ())
        assert patterns, f"ONNX {op_type} names no node tests in tests/ops/node_suite.py"
        assert any(re.match(p, n) for p in patterns for n in names), f"ONNX {op_type}: tests match nothing"


def test_kernel_blocks_resolve() -> None:
    src = library.assemble(set(library.blocks()))
    assert "ember_prelude" not in src or "#define EMBER_RESTRICT" in src
