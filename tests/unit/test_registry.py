"""The registry rule: every OpDef has a lowering and an `infer`, its kernels exist; every ONNX op of the
frontend's table maps to a registered OpDef and matches some ONNX node test."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess

import pytest

from ember.codegen import library
from ember.frontends.onnx.ops import lookup, supported_ops
from ember.ops import registry
from ember.ops.opdef import _NO_LOWERING
from ember.toolchain.cc import BASE_FLAGS
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
    for op_type in sorted(supported_ops()):
        entry = lookup(op_type, "")
        assert entry is not None and entry.ir in ops, f"ONNX {op_type} maps to no registered op"
        if op_type in node_suite.NO_NODE_TESTS:
            continue
        patterns = node_suite.test_patterns(op_type)
        assert any(re.match(p, n) for p in patterns for n in names), f"ONNX {op_type}: tests match nothing"


def _syntax_errors(src: str, cpu: str) -> str:
    """The host compiler's complaints about `src` as one translation unit (empty: none), with the bundle's
    flags as errors, plus -Wundef: a feature macro tested where ember_prelude was not assembled first."""
    cmd = ["cc", *BASE_FLAGS, "-O2", f"-march={cpu}", "-Werror", "-Wundef", "-fsyntax-only", "-x", "c", "-"]
    res = subprocess.run(cmd, input="#include <stdint.h>\n#include <stddef.h>\n" + src, capture_output=True,
                         text=True, timeout=120)
    return res.stderr if res.returncode else ""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs the host C compiler")
@pytest.mark.parametrize("cpu", ["native", "x86-64"] if platform.machine() in ("x86_64", "AMD64") else ["native"])
def test_kernel_blocks_compile_alone(cpu: str) -> None:
    """Every block, assembled with only what it requires, is C that compiles warning-free: its `requires`
    name blocks, and every function, type and macro it uses is defined in it or in them."""
    lib = library.blocks()
    failed = {}
    for name, block in lib.items():
        assert all(d in lib for d in block.requires), f"{name} requires an unknown block: {block.requires}"
        errors = _syntax_errors(library.assemble({name}), cpu)
        if errors:
            failed[name] = errors.strip().splitlines()[:3]
    assert not failed, failed
