"""The registry rule: every OpDef has a lowering, its kernels exist, its tests match node tests."""

from __future__ import annotations

import re

from ember.codegen import library
from ember.ops import registry
from ember.ops.opdef import _NO_LOWERING
from tests.ops import node_suite


def test_every_op_is_lowered_and_its_kernels_exist() -> None:
    blocks = library.blocks()
    for op in registry.load_all().values():
        assert op.expr is not None or op.lower is not None or op.name in _NO_LOWERING, op.name
        for k in op.kernels:
            assert k in blocks, f"{op.name}: kernel block {k} missing from codegen/kernels"


def test_every_onnx_op_matches_a_node_test() -> None:
    names = list(node_suite.all_node_tests())
    for op in registry.load_all().values():
        if not op.onnx:
            continue
        assert op.tests, f"{op.name} names no ONNX node tests"
        assert any(re.match(p, n) for p in op.tests for n in names), f"{op.name}: tests match nothing"


def test_kernel_blocks_resolve() -> None:
    src = library.assemble(set(library.blocks()))
    assert "ember_prelude" not in src or "#define EMBER_RESTRICT" in src
