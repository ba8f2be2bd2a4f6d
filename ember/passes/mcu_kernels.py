"""Pick the Cortex-M integer kernels per layer from the target table, and store their weights as they read them.

On a target with the DSP extension (Target.dsp: Cortex-M4/M7/M33/M55, SMLAD), a requantising QConv (2-D,
one group, or depthwise 3x3) or a QMatMul of constant weights becomes kernels/qarm*.c's variant when its
int8 weights need no per-row offset (qlinear.pack_weights' wofs). Its weights are replaced by the DSP
lane order (qarm.dsp_weights; a convolution's widened to int16, qarm.dsp_weights16); the other layers keep
the portable kernels of qconv.c. Every path requantises exactly as quant.c does, so the bundle stays
bit-exact with the host build. On Helium (Cortex-M55) a layer whose input zero point is a constant takes
kernels/qarm_mve.c's int8 kernels (`_mve8`: qarm.mve8_weights, qarm.dw8_weights; the zero point's share in
the bias); a depthwise layer only where its requantisation is the fast form. Cores without DSP (Cortex-M0/M3,
int8_isa "mul") take the layers the DSP variants would, marked `_mul8`, for kernels/qarm_mul.c: convolutions
and matrix products of int8 weights in its product loops' order (qarm.mul_weights: the flash of int8
weights, where the DSP cores' int16 copy would double it), depthwise 3x3 on a byte plane of each channel.
"""

from __future__ import annotations

from ember.ir.graph import Graph, Node
from ember.ops import qarm
from ember.ops.matmul import present
from ember.ops.qlinear import QSpec, qconv_geometry

MVE = qarm.MVE


def _admits(node: Node, isa: str) -> bool:
    q = node.attrs.get("_q")
    if not isinstance(q, QSpec) or q.requant is None or q.wofs is not None:
        return False
    w = node.input(2)
    if w is None or not w.is_const:
        return False
    if node.op == "QMatMul":
        # On Helium cores the portable matrix-vector product, which the compiler vectorizes for MVE, is
        # faster than SMLAD pairs (MLPerf Tiny's autoencoder: 0.19 M instructions against 0.43 M).
        return isa != MVE
    x, y = present(node.input(0)), present(node.outputs[0])
    if node.op != "QConv" or x.type.rank != 4:
        return False
    g = qconv_geometry(node)
    if q.depthwise:
        return x.shape[1] == y.shape[1] and qarm.dw3_admits(g)
    return int(node.attrs.get("group", 1)) == 1 and g.planar


def choose_mcu_kernels(graph: Graph, isa: str) -> None:
    """`isa`: Target.int8_isa: "dsp" (qarm*.c's SMLAD kernels), "mve" (its Helium ones) or "mul" (qarm_mul.c's,
    for cores without the DSP extension)."""
    mul = isa == qarm.MUL
    if mul:
        isa = qarm.DSP
    if isa not in (qarm.DSP, MVE):
        return
    for node in graph.nodes:
        if not _admits(node, isa):
            continue
        q: QSpec = node.attrs["_q"]
        w = present(node.input(2))
        node.attrs["_isa"] = MVE if isa == MVE else qarm.DSP
        node.attrs["_rows"] = present(node.outputs[0]).shape[1 if node.op == "QConv" else -1]
        if node.op == "QConv" and q.depthwise:
            g = qconv_geometry(node)
            if node.attrs["_isa"] == MVE and node.input(1) is None and qarm.dw8_admits(node, g, w.const):
                # int8 planes and byte gathers (qarm_mve.c); the zero point, folded into the bias, a constant
                y = present(node.outputs[0]).shape
                node.attrs[qarm.MVE8] = True
                packed = qarm.dw8_weights(w.const, g.strides[2], g.strides[1:] == (1, 1) and y[2] > y[3])
                node.inputs[2] = graph.constant(f"{node.name}_w{qarm.MVE8}", packed)
            elif mul:  # qarm_mul.c's ember_qarm_dw3_mul: the nine products per output without SMLAD's pairs
                node.attrs[qarm.MUL8] = True
            continue  # otherwise ember_qarm_dw3 reads qconv_inputs' int16 C x 9 weights as they are
        if node.op == "QConv":
            g = qconv_geometry(node)
            rows = qarm.conv_rows(w.const, g.channels * g.taps, q.channels_last, g.taps)
        else:
            rows = w.const[:, :present(node.input(0)).shape[-1]]
        if node.attrs["_isa"] == MVE and node.input(1) is None and qarm.mve8_fits(node, rows):
            # int8 columns (VMLADAVA.S8, qarm_mve.c): the zero point, folded into the bias, must be a constant
            node.attrs[qarm.MVE8] = True
            packed = qarm.mve8_weights(rows)
        elif node.attrs["_isa"] == MVE:
            packed = qarm.mve_weights(rows)
        elif mul:  # int8 in the order of qarm_mul.c's product loops (its convolution and fully connected)
            node.attrs[qarm.MUL8] = True
            packed = qarm.mul_weights(rows)
        elif node.op == "QConv":  # int16: the product loop without SXTB16 (qarm_gemm4.c ember_qa_gemm2h)
            packed = qarm.dsp_weights16(rows)
        else:
            packed = qarm.dsp_weights(rows)
        tag = qarm.MUL8 if node.attrs.get(qarm.MUL8) else node.attrs["_isa"]
        node.inputs[2] = graph.constant(f"{node.name}_w{tag}", packed)
