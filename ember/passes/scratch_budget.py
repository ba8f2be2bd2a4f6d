"""Kernel scratch sized for RAM, not for caches: microcontroller targets.

Some kernels work through their operands in blocks whose scratch is sized to fill a share of a desktop
CPU's L2 (float im2col: 1 MiB of columns). A microcontroller has no cache to fill, and the scratch is RAM
that the plan must hold: LeNet's first convolution alone took 78,400 B of im2col columns on the Cortex-M
targets, twice the host's whole activation region. This pass gives every node that has scratch a byte
budget (`SCRATCH_BUDGET`); kernels whose block is tunable (ember/ops/conv.py) size it to fit, and the
plan counts what they ask for as usual. The integer products (qgemm.c) pack blocks of MCU_QPB pixels
there instead of 64 (`QPB_ATTR` on each node, and NAME.c's EMBER_QPB, driver.py): IC ResNet-8's 64-channel
3x3 layers packed 36,864 B of columns per block. It also marks the nodes whose output may overlap their
input (OpDef.overlap) as compiled for a microcontroller, where some kernels have no other variant.
"""

from __future__ import annotations

from ember.ir.graph import Graph
from ember.ops import registry
from ember.ops.conv import SCRATCH_BUDGET
from ember.ops.overlap import MCU
from ember.ops.qlinear import MCU_QPB, QPB_ATTR

# Large enough that a block spans some output pixels (the matmul's column tile), small next to the
# activations of the models that fit a microcontroller.
MCU_SCRATCH_BUDGET = 4096


def budget_scratch(graph: Graph, budget: int = MCU_SCRATCH_BUDGET) -> None:
    for node in graph.nodes:
        if node.op not in registry.load_all():
            continue
        op = registry.get(node.op)
        if op.scratch is not None:
            node.attrs[SCRATCH_BUDGET] = budget
            node.attrs[QPB_ATTR] = MCU_QPB  # the integer products' packed block (NAME.c's EMBER_QPB)
        if op.overlap is not None:  # the kernels a microcontroller build has (ember/ops/overlap.py)
            node.attrs[MCU] = True
