"""Which integer convolution kernels may write their output over their own input (OpDef.overlap).

The planner (ember/memory/planner.py) lets output 0 start at the offset returned here, relative to input 0,
when input 0 dies at the node: a plan no arena allocator can make, sound only because of the order in which
the kernel chosen for the node reads and writes. Each case below names the kernel variant and the order that
makes it safe; a variant not named (a new kernel, a channel-blocked layout, AVX-512's pixel-major depthwise)
gets None, so it keeps its input and output apart, as does a call divided among threads (`--threads`: its
parts run at once, in no order). tests/unit/test_overlap.py runs every declared variant
against a plan without overlap (host, and Cortex-M0/M4 under QEMU): an overlap bug is invisible to ASan.

- Depthwise (one output channel per input channel), qarm_dw3.c ember_qarm_dw3 / ember_qarm_dw3_mve (DSP, MVE)
  and qdwconv.c's planar ember_qdwconv (microcontrollers: the AVX-512 VNNI path is another order): channel
  c's input plane is read whole (widened into the int16 plane, or split into the phase planes, in scratch)
  before any byte of output channel c is written. Output channel c at offset 0 covers bytes
  [c * out_plane, (c + 1) * out_plane), inside input channels 0..c when out_plane <= in_plane: read already.
- Pointwise (1x1, stride 1, unpadded, one group, one image, int8/uint8 in and out), qarm_conv.c ember_qa_conv_t's
  direct path (two pixels' columns of every channel built before their M outputs are stored) and qconv.c
  ember_qconv on planar layouts (a block of EMBER_QPB pixels of every channel packed before the block's
  outputs are stored): output (m, p) at offset 0 is input byte (m, p) when m < C, read with its pixel,
  or lies past the input.
"""

from __future__ import annotations

import math

from ember.ir.graph import Node
from ember.ops.conv import conv_geometry
from ember.ops.matmul import present
from ember.ops.parallel import PARTS_ATTR
from ember.ops.shape import stored_nhwc, writes_nhwc

MCU = "_mcu"  # node attribute: compiled for a microcontroller (passes/scratch_budget.py sets it)
ARM_ISAS = ("dsp", "mve")  # ops/qarm.py DSP, MVE: qarm*.c's kernels


def qconv_overlap(node: Node) -> int | None:
    x, y = present(node.input(0)), present(node.outputs[0])
    if x.blocked or y.blocked or node.attrs.get(PARTS_ATTR, 1) > 1:  # divided among threads: parts run at once
        return None
    if stored_nhwc(x) or writes_nhwc(node):  # a channels-last side: the orders below do not hold
        return None
    g = conv_geometry(node, list(x.shape[2:]), list(node.attrs["kernel_shape"]), list(y.shape[2:]))
    if not g.planar:
        return None
    isa = node.attrs.get("_isa")
    if node.attrs["_q"].depthwise:
        if y.shape[1] != x.shape[1] or not (isa in ARM_ISAS or node.attrs.get(MCU)):
            return None
        in_plane = math.prod(x.shape[2:]) * x.dtype.itemsize
        out_plane = math.prod(y.shape[2:]) * y.dtype.itemsize
        return 0 if out_plane <= in_plane else None
    pointwise = g.direct and int(node.attrs.get("group", 1)) == 1
    if not pointwise or x.shape[0] != 1 or x.dtype.itemsize != 1 or y.dtype.itemsize != 1:
        return None
    return 0
