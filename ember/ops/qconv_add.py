"""QConvAdd: an integer convolution whose requantised outputs go straight into a residual QAdd (made on
microcontrollers by passes/fuse_conv_add.py from QConv -> QAdd).

Inputs [x, x zero point or None, packed weights, residual]; the QConv's attributes, and `_qadd`: the
QAddParams of the Add with the convolution's output as its input a (qpointwise.py). The kernels (qarm.c
ember_qarm_conv_add / ember_qarm_conv_mve_add, qconv.c ember_qconv_add) compute the convolution's bytes
exactly as QConv does into a small stage (a few pixels of every channel), then each output element as
qpointwise.c's ember_qadd of that byte and the residual's, reading the residual's element just before
writing the output's: so the output may take the residual's buffer when the residual dies here
(`inplace=(3,)`). That is what the fusion is for: a residual block's shortcut, its body's last input and
its body's output were three tensors alive at once, now two.
"""

from __future__ import annotations

from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops import qarm, registry
from ember.ops.matmul import present
from ember.ops.opdef import OpDef
from ember.ops.qlinear import infer_qconv, lower_qconv, qpb
from ember.ops.qpointwise import QAddParams
from ember.ops.registry import register

QADD_ATTR = "_qadd"
QA_STAGE = 16  # EMBER_QA_STAGE of qarm_conv.c: pixels staged by ember_qa_conv_t


def _conv_bytes(node: Node) -> int:
    """The convolution's own scratch (QConv's), rounded up to 64: the stage follows it."""
    fn = registry.get("QConv").scratch
    assert fn is not None
    return (fn(node) + 63) // 64 * 64


def stage_bytes(node: Node) -> int:
    """M rows of the pixels staged between the product and the add."""
    pixels = QA_STAGE if node.attrs.get("_isa") in (qarm.DSP, qarm.MVE) else qpb(node)
    return present(node.outputs[0]).shape[1] * pixels


def _scratch(node: Node) -> int:
    return _conv_bytes(node) + stage_bytes(node)


def _lower(node: Node, k: KernelEmitter) -> None:
    params: QAddParams = node.attrs[QADD_ATTR]
    stage = f"({k.scratch()} + {_conv_bytes(node)})"
    lower_qconv(node, k, (k.inp(3, "uint8_t"), k.table(params.table(), DType.INT32), stage))


def _infer(node: Node) -> list[TensorType | None]:
    return infer_qconv(node)


register(OpDef("QConvAdd", lower=_lower, scratch=_scratch, inplace=(3,), infer=_infer,
               kernels=("ember_qconv_add", "ember_qarm_conv_add", "ember_qarm_conv_mve_add",
                        "ember_qarm_conv_mve8_add")))
