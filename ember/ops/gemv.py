"""GemvPanels (internal): a Gemm of one row with constant weights packed in panels (kernels/gemv.c).

passes/gemv_panels.py rewrites a float32 Gemm y = x B + c of one row (a classifier head: [1, 1280] x [1280,
1000]) whose B is constant into this op, where the CPU family asks for it (toolchain/cpus.py `gemv_panels`).
Inputs: (X [1, K], Bp [ceil(N/P), K, P]: B's columns in panels of P = EMBER_MM_PANEL, the last one padded with
zeros, C (optional): N floats, one per column). Attribute `n`: N. The fused activation comes along as the
Gemm's epilogue.
"""

from __future__ import annotations

from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import TensorType
from ember.ir.graph import Node
from ember.ops.epilogue import epilogue_args
from ember.ops.infer import inp, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register


def _infer(node: Node) -> list[TensorType | None]:
    return [typed(inp(node, 0).dtype, (1, int(node.attrs["n"])))]


def _lower(node: Node, k: KernelEmitter) -> None:
    bias = k.inp(2) if node.input(2) is not None else "0"
    k.call("ember_gemv_panels_f32", k.out(0), k.inp(0), k.inp(1), bias, int(node.attrs["n"]), inp(node, 1).shape[1],
           *epilogue_args(node))


register(OpDef(
    "GemvPanels", infer=_infer, lower=_lower, kernels=("ember_gemv_panels_f32",), takes_epilogue=True,
    flops=lambda n: 2 * int(n.attrs["n"]) * inp(n, 1).shape[1],
))
