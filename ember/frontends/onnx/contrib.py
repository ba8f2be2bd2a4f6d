"""onnxruntime's com.microsoft operators, as the graphs of canonical IR ops they compute.

onnxruntime's transformer optimizer and quantization tools write these into models users ship: fused
activations (Gelu, FastGelu, BiasGelu, QuickGelu), fused normalizations (SkipLayerNormalization,
EmbedLayerNormalization, SimplifiedLayerNormalization), FusedMatMul, quantized operators (QGemm, QLinear*,
DynamicQuantizeMatMul, MatMulIntegerToFloat) and block-quantized weights (MatMulNBits). Each adapter
rewrites one node into ember's canonical operators, with the semantics of onnxruntime's CPU kernels; the
passes then fuse and quantize them like any other graph (a QLinearAdd becomes DequantizeLinear, Add,
QuantizeLinear, which fold_qdq turns back into one integer kernel).
"""

from __future__ import annotations

import numpy as np

from ember.errors import ShapeError
from ember.frontends.onnx.rewrite import Build, Rewrite, register
from ember.ir.dtypes import DType
from ember.ir.graph import Value

MS = "com.microsoft"


# ---- activations ---------------------------------------------------------------------------------

def _gelu(r: Rewrite, attrs: dict) -> None:
    r.op("Gelu", [r.need(0, "X")], "gelu", out=r.output(0))


def _bias_gelu(r: Rewrite, attrs: dict) -> None:
    s = r.op("Add", [r.need(0, "A"), r.need(1, "B")], "sum")
    r.op("Gelu", [s], "gelu", out=r.output(0))


def _fast_gelu(r: Rewrite, attrs: dict) -> None:
    x = r.need(0, "X")
    if r.input(1) is not None:
        x = r.op("Add", [x, r.input(1)], "biased")
    r.op("Gelu", [x], "gelu", {"approximate": "tanh"}, out=r.output(0))


def _quick_gelu(r: Rewrite, attrs: dict) -> None:
    # x * sigmoid(alpha * x)
    x = r.need(0, "X")
    alpha = float(attrs.get("alpha", 1.702))
    scaled = r.op("Mul", [x, r.const("alpha", np.asarray(alpha, x.dtype.np))], "scaled")
    gate = r.op("Sigmoid", [scaled], "gate")
    r.op("Mul", [x, gate], "quick_gelu", out=r.output(0))


# ---- matmuls -------------------------------------------------------------------------------------

def _last_two_swapped(r: Rewrite, x: Value, what: str) -> Value:
    rank = x.type.rank
    if rank < 2:
        raise r.refuse(f"transposing the rank-{rank} input '{x.name}'")
    perm = [*range(rank - 2), rank - 1, rank - 2]
    return r.op("Transpose", [x], what, {"perm": perm})


def _fused_matmul(r: Rewrite, attrs: dict) -> None:
    if attrs.get("transBatchA", 0) or attrs.get("transBatchB", 0):
        raise r.refuse("transBatchA/transBatchB")
    a, b = r.need(0, "A"), r.need(1, "B")
    if attrs.get("transA", 0):
        a = _last_two_swapped(r, a, "a_t")
    if attrs.get("transB", 0):
        b = _last_two_swapped(r, b, "b_t")
    alpha = float(attrs.get("alpha", 1.0))
    if alpha == 1.0:
        r.op("MatMul", [a, b], "matmul", out=r.output(0))
        return
    y = r.op("MatMul", [a, b], "matmul")
    r.op("Mul", [y, r.const("alpha", np.asarray(alpha, np.float32))], "scaled", out=r.output(0))


def _matmul_nbits_weight(r: Rewrite, attrs: dict) -> np.ndarray:
    """MatMulNBits' B as a float [K, N] matrix: unpacked, zero points subtracted, scaled per block."""
    b, scales, zeros = r.need(1, "B"), r.need(2, "scales"), r.input(3)
    k, n = int(attrs["K"]), int(attrs["N"])
    bits, block = int(attrs.get("bits", 4)), int(attrs["block_size"])
    if bits not in (2, 4, 8):
        raise r.refuse(f"bits={bits}")
    if not (b.is_const and scales.is_const and (zeros is None or zeros.is_const)):
        raise r.refuse("run-time weights (B, scales and zero_points must be initializers)")
    if r.input(4) is not None and r.input(4).is_const and np.any(  # type: ignore[union-attr]
            np.asarray(r.input(4).const).reshape(-1)  # type: ignore[union-attr]
            != np.arange(k) // block):
        raise r.refuse("an act-order g_idx (a permuted block assignment)")
    blocks = -(-k // block)
    per_byte = 8 // bits
    packed = np.asarray(b.const, np.uint8).reshape(n, -1)
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    q = ((packed[:, :, None] >> shifts) & ((1 << bits) - 1)).reshape(n, -1)[:, :blocks * block].astype(np.float32)
    scale = np.asarray(scales.const, np.float32).reshape(n, blocks)
    if zeros is None:
        zero = np.full((n, blocks), float(1 << (bits - 1)), np.float32)
    elif zeros.dtype.is_float:  # unpacked, one per block, on the same grid as q
        zero = np.asarray(zeros.const, np.float32).reshape(n, blocks)
    else:
        zpacked = np.asarray(zeros.const, np.uint8).reshape(n, -1)
        zero = ((zpacked[:, :, None] >> shifts) & ((1 << bits) - 1)).reshape(n, -1)[:, :blocks].astype(np.float32)
    w = (q.reshape(n, blocks, block) - zero[:, :, None]) * scale[:, :, None]
    return np.ascontiguousarray(w.reshape(n, blocks * block)[:, :k].T)


def _matmul_nbits_int4(r: Rewrite, attrs: dict) -> None:
    """bits=4 on float32 A: MatMulInt4 reads B packed, as the file stores it (the same nibble layout)."""
    k, n, block = int(attrs["K"]), int(attrs["N"]), int(attrs["block_size"])
    b, scales, zeros, g_idx = r.need(1, "B"), r.need(2, "scales"), r.input(3), r.input(4)
    if not (b.is_const and scales.is_const and (zeros is None or zeros.is_const)):
        raise r.refuse("run-time weights (B, scales and zero_points must be initializers)")
    if g_idx is not None and not (g_idx.is_const and np.array_equal(
            np.asarray(g_idx.const).reshape(-1), np.arange(k) // block)):
        raise r.refuse("g_idx other than the trivial order k // block_size (an act-order permutation)")
    nblk = -(-k // block)
    if block < 2 or block % 2 or b.type.numel != n * nblk * block // 2 or scales.type.numel != n * nblk:
        raise ShapeError(f"node '{r.node.name}' (MatMulNBits): B {list(b.shape)} / scales {list(scales.shape)} "
                         f"do not match K={k}, N={n}, block_size={block}")
    inputs: list[Value | None] = [
        r.need(0, "A"), r.const("packed", np.asarray(b.const, np.uint8).reshape(n, -1)),
        r.const("scales", np.asarray(scales.const, np.float32).reshape(n, nblk)), None, r.input(5)]
    zero = 8.0  # onnxruntime's default: the middle of 0..15
    if zeros is not None:
        zc = np.asarray(zeros.const)
        if zeros.dtype.is_float:
            inputs[3] = r.const("zeros", zc.astype(np.float32).reshape(n, nblk))
        else:  # packed 4-bit codes, ceil(nblk / 2) bytes per row
            inputs[3] = r.const("zeros", zc.astype(np.uint8).reshape(n, -1))
    r.op("MatMulInt4", inputs, "matmul", {"K": k, "N": n, "block_size": block, "zero": zero}, out=r.output(0))


def _matmul_nbits(r: Rewrite, attrs: dict) -> None:
    if int(attrs.get("bits", 4)) == 4 and r.need(0, "A").dtype is DType.FLOAT32:
        _matmul_nbits_int4(r, attrs)
        return
    # 2- and 8-bit weights (and float16 A) are dequantized at compile time: ember runs them as float32 weights.
    w = r.const("weight", _matmul_nbits_weight(r, attrs))
    a = r.need(0, "A")
    if r.input(5) is None:
        r.op("MatMul", [a, w], "matmul", out=r.output(0))
        return
    y = r.op("MatMul", [a, w], "matmul")
    r.op("Add", [y, r.input(5)], "biased", out=r.output(0))


def _integer_matmul_to_float(r: Rewrite, a: Value, b: Value, a_zero: Value | None, b_zero: Value | None,
                             scale: Value, bias: Value | None) -> None:
    acc = r.op("MatMulInteger", [a, b, a_zero, b_zero], "acc")
    real = r.op("Cast", [acc], "acc_f32", {"to": scale.dtype})
    if bias is None:
        r.op("Mul", [real, scale], "scaled", out=r.output(0))
        return
    scaled = r.op("Mul", [real, scale], "scaled")
    r.op("Add", [scaled, bias], "biased", out=r.output(0))


def _dynamic_quantize_matmul(r: Rewrite, attrs: dict) -> None:
    # A is quantized to uint8 at run time (DynamicQuantizeLinear), multiplied in integers, rescaled.
    a = r.need(0, "A")
    a_q = r.ctx.value(r.node, "a_q")
    a_scale, a_zero = r.ctx.value(r.node, "a_scale"), r.ctx.value(r.node, "a_zero")
    r.op("DynamicQuantizeLinear", [a], "a_q", out=a_q, extra_outputs=[a_scale, a_zero])
    scale = r.op("Mul", [a_scale, r.need(2, "b_scale")], "scale")
    _integer_matmul_to_float(r, a_q, r.need(1, "B"), a_zero, r.input(3), scale, r.input(4))


def _matmul_integer_to_float(r: Rewrite, attrs: dict) -> None:
    # (A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias)
    scale = r.op("Mul", [r.need(2, "a_scale"), r.need(3, "b_scale")], "scale")
    _integer_matmul_to_float(r, r.need(0, "A"), r.need(1, "B"), r.input(4), r.input(5), scale, r.input(6))


def _qgemm(r: Rewrite, attrs: dict) -> None:
    # (A, a_scale, a_zp, B, b_scale, b_zp, C: int32 bias at scale a_scale*b_scale, y_scale, y_zp)
    a = r.dequantize(r.need(0, "A"), r.input(1), r.input(2), "a")
    b_axis = 0 if attrs.get("transB", 0) else 1
    b_scale = r.need(4, "b_scale")
    b = r.op("DequantizeLinear", [r.need(3, "B"), b_scale, r.input(5)], "b_dq",
             {"axis": b_axis if b_scale.type.numel > 1 else 1})
    c = r.input(6)
    if c is not None:
        c_real = r.op("Cast", [c], "c_f32", {"to": a.dtype})
        c_scale = r.op("Mul", [r.need(1, "a_scale"), b_scale], "c_scale")
        c = r.op("Mul", [c_real, c_scale], "c_dq")
    gemm_attrs = {"alpha": float(attrs.get("alpha", 1.0)), "beta": 1.0,
                  "transA": int(attrs.get("transA", 0)), "transB": int(attrs.get("transB", 0))}
    if r.input(7) is None:  # no output scale: a float output
        r.op("Gemm", [a, b, c], "gemm", gemm_attrs, out=r.output(0))
        return
    y = r.op("Gemm", [a, b, c], "gemm", gemm_attrs)
    r.quantize(y, r.input(7), r.input(8), r.output(0), "y")


# ---- QLinear pointwise ops: dequantize, compute in float, quantize (fold_qdq makes them integer) ----------

def _qlinear_binary(op: str) -> Build:
    def build(r: Rewrite, attrs: dict) -> None:
        # (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
        a = r.dequantize(r.need(0, "A"), r.input(1), r.input(2), "a")
        b = r.dequantize(r.need(3, "B"), r.input(4), r.input(5), "b")
        y = r.op(op, [a, b], op.lower())
        r.quantize(y, r.input(6), r.input(7), r.output(0), "y")

    return build


def _qlinear_unary(op: str, **fixed: object) -> Build:
    def build(r: Rewrite, attrs: dict) -> None:
        # (X, X_scale, X_zp, Y_scale, Y_zp)
        x = r.dequantize(r.need(0, "X"), r.input(1), r.input(2), "x")
        kept = {k: v for k, v in attrs.items() if k in fixed}
        y = r.op(op, [x], op.lower(), {**fixed, **kept})
        r.quantize(y, r.input(3), r.input(4), r.output(0), "y")

    return build


def _qlinear_global_average_pool(r: Rewrite, attrs: dict) -> None:
    x = r.dequantize(r.need(0, "X"), r.input(1), r.input(2), "x")
    if attrs.get("channels_last", 0):  # NHWC: a mean over the spatial axes, kept as size-1 dims
        rank = x.type.rank
        axes = r.const("axes", np.arange(1, rank - 1, dtype=np.int64))
        y = r.op("ReduceMean", [x, axes], "mean", {"keepdims": 1})
    else:
        y = r.op("GlobalAveragePool", [x], "gap")
    r.quantize(y, r.input(3), r.input(4), r.output(0), "y")


def _qlinear_concat(r: Rewrite, attrs: dict) -> None:
    # (Y_scale, Y_zp, then (X, X_scale, X_zp) per input)
    parts = []
    for i in range(2, len(r.node.inputs), 3):
        parts.append(r.dequantize(r.need(i, "X"), r.input(i + 1), r.input(i + 2), f"x{len(parts)}"))
    if not parts:
        raise ShapeError(f"node '{r.node.name}' (QLinearConcat): no inputs to concatenate")
    y = r.op("Concat", parts, "concat", {"axis": int(attrs["axis"])})
    r.quantize(y, r.input(0), r.input(1), r.output(0), "y")


def _qlinear_average_pool(r: Rewrite, attrs: dict) -> None:
    if attrs.get("channels_last", 0):
        raise r.refuse("channels_last=1")
    x = r.dequantize(r.need(0, "X"), r.input(1), r.input(2), "x")
    pool_attrs = {k: v for k, v in attrs.items() if k != "channels_last"}
    y = r.op("AveragePool", [x], "pool", pool_attrs)
    r.quantize(y, r.input(3), r.input(4), r.output(0), "y")


# ---- normalizations ------------------------------------------------------------------------------

def _rms_normalize(r: Rewrite, x: Value, gamma: Value, eps: float, out: Value | None) -> None:
    """x / sqrt(mean(x^2 over the last axis) + eps) * gamma, from canonical ops."""
    sq = r.op("Mul", [x, x], "sq")
    mean = r.op("ReduceMean", [sq, r.const("axes", np.asarray([-1], np.int64))], "mean_sq", {"keepdims": 1})
    var = r.op("Add", [mean, r.const("eps", np.asarray(eps, x.dtype.np))], "var")
    rms = r.op("Sqrt", [var], "rms")
    normed = r.op("Div", [x, rms], "normed")
    r.op("Mul", [normed, gamma], "scaled", out=out)


def _skip_sum(r: Rewrite, bias_input: int) -> Value:
    """input + skip (+ the bias, which the two skip normalizations take at different input slots)."""
    s = r.op("Add", [r.need(0, "input"), r.need(1, "skip")], "skip_sum")
    bias = r.input(bias_input)
    return s if bias is None else r.op("Add", [s, bias], "skip_bias_sum")


def _skip_layer_norm(r: Rewrite, attrs: dict) -> None:
    # (input, skip, gamma, beta, bias) -> (output, mean, inv_std_var, input_skip_bias_sum)
    s = _skip_sum(r, bias_input=4)
    eps = float(attrs.get("epsilon", 1e-12))
    r.op("LayerNormalization", [s, r.need(2, "gamma"), r.input(3)], "ln", {"axis": -1, "epsilon": eps},
         out=r.output(0) or r.ctx.value(r.node, "ln_out"), extra_outputs=[r.output(1), r.output(2)])
    r.copy_to(s, 3)


def _skip_simplified_layer_norm(r: Rewrite, attrs: dict) -> None:
    # (input, skip, gamma, bias) -> (output, mean, inv_std_var, input_skip_bias_sum)
    if r.output(1) is not None or r.output(2) is not None:
        raise r.refuse("the mean/inv_std_var outputs")
    s = _skip_sum(r, bias_input=3)
    _rms_normalize(r, s, r.need(2, "gamma"), float(attrs.get("epsilon", 1e-12)), r.output(0))
    r.copy_to(s, 3)


def _simplified_layer_norm(r: Rewrite, attrs: dict) -> None:
    # (X, scale) -> (Y, inv_std_var): RMS normalization over the axes from `axis` (the last, in practice)
    x = r.need(0, "X")
    axis = int(attrs.get("axis", -1))
    if axis not in (-1, x.type.rank - 1):
        raise r.refuse(f"axis={axis} (only the last axis)")
    if r.output(1) is not None:
        raise r.refuse("the inv_std_var output")
    _rms_normalize(r, x, r.need(1, "scale"), float(attrs.get("epsilon", 1e-5)), r.output(0))


def _embed_layer_norm(r: Rewrite, attrs: dict) -> None:
    # (input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta, mask,
    #  position_ids) -> (output, mask_index, embedding_sum)
    ids = r.need(0, "input_ids")
    if ids.type.rank != 2:
        raise ShapeError(f"node '{r.node.name}' (EmbedLayerNormalization): input_ids must be [batch, sequence]")
    batch, seq = ids.shape
    words = r.op("Gather", [r.need(2, "word_embedding"), ids], "words", {"axis": 0})
    positions = r.input(8)
    if positions is None:
        positions = r.const("positions", np.arange(seq, dtype=np.int32).reshape(1, seq))
    s = r.op("Add", [words, r.op("Gather", [r.need(3, "position_embedding"), positions], "pos", {"axis": 0})],
             "word_pos")
    if r.input(1) is not None and r.input(4) is not None:
        segments = r.op("Gather", [r.input(4), r.input(1)], "seg", {"axis": 0})
        s = r.op("Add", [s, segments], "embedding")
    eps = float(attrs.get("epsilon", 1e-12))
    r.op("LayerNormalization", [s, r.need(5, "gamma"), r.need(6, "beta")], "ln", {"axis": -1, "epsilon": eps},
         out=r.output(0))
    if r.output(1) is not None:
        mask = r.input(7)
        if mask is None:  # onnxruntime: all tokens valid
            lengths = r.const("full", np.full((batch,), 0, np.int32))
            r.op("Identity", [lengths], "mask_index", out=r.output(1))
        else:  # the number of valid tokens per batch row
            as_int = r.op("Cast", [mask], "mask_i32", {"to": DType.INT32})
            axes = r.const("mask_axes", np.asarray([1], np.int64))
            r.op("ReduceSum", [as_int, axes], "mask_index", {"keepdims": 0}, out=r.output(1))
    r.copy_to(s, 2)


# ---- the table -----------------------------------------------------------------------------------

register(MS, "Gelu", _gelu)
register(MS, "BiasGelu", _bias_gelu)
register(MS, "FastGelu", _fast_gelu)
register(MS, "QuickGelu", _quick_gelu)
register(MS, "FusedMatMul", _fused_matmul)
register(MS, "MatMulNBits", _matmul_nbits)
register(MS, "DynamicQuantizeMatMul", _dynamic_quantize_matmul)
register(MS, "MatMulIntegerToFloat", _matmul_integer_to_float)
register(MS, "QGemm", _qgemm)
register(MS, "QLinearAdd", _qlinear_binary("Add"))
register(MS, "QLinearMul", _qlinear_binary("Mul"))
register(MS, "QLinearSigmoid", _qlinear_unary("Sigmoid"))
register(MS, "QLinearLeakyRelu", _qlinear_unary("LeakyRelu", alpha=0.01))
register(MS, "QLinearGlobalAveragePool", _qlinear_global_average_pool)
register(MS, "QLinearConcat", _qlinear_concat)
register(MS, "QLinearAveragePool", _qlinear_average_pool)
register(MS, "SkipLayerNormalization", _skip_layer_norm)
register(MS, "SkipSimplifiedLayerNormalization", _skip_simplified_layer_norm)
register(MS, "EmbedLayerNormalization", _embed_layer_norm)
# onnxruntime registers SimplifiedLayerNormalization in the ONNX domain, though ONNX does not define it.
register("", "SimplifiedLayerNormalization", _simplified_layer_norm)

# Attention and MultiHeadAttention, in a module of their own.
from ember.frontends.onnx import contrib_attention  # noqa: E402, F401
