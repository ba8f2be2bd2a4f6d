"""Weight-only int4 layers (MatMulInt4: weights stay packed two per byte) against onnxruntime.

Two sources of 4-bit weights: com.microsoft MatMulNBits (onnxruntime.quantization's MatMulNBitsQuantizer, and
hand-packed for the inputs it does not write: float zero points, bias, g_idx) and the opset-21 pattern
DequantizeLinear(int4/uint4 constant, blocked or per-column scales) -> MatMul. Criterion: every output within
max abs error <= 1e-4 x its range of onnxruntime's (tests.support.models.assert_close; both accumulate the same
dequantized weights in float32, in different orders), and NAME.json's constant region holds the packed codes,
scales and zero points only: at most their bytes plus 64-byte alignment per tensor, about 1/8 of float32.
onnxruntime by default fuses DequantizeLinear(int4) -> MatMul into MatMulNBits at accuracy level 4 (int8
activations, ~1% error); the reference session asks for level 0 (float32), which ember computes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.errors import UnsupportedOperatorError
from ember.reference import onnxruntime_session
from tests.support import cdriver
from tests.support.models import assert_close

F = TensorProto.FLOAT
RNG = np.random.default_rng(11)


def _model(nodes: list[onnx.NodeProto], x_shape: list[int], inits: dict[str, np.ndarray],
           opset: int = 21, initializers: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "int4", [helper.make_tensor_value_info("x", F, x_shape)],
                          [helper.make_tensor_value_info("y", F, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()] + (initializers or []))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                               helper.make_opsetid("com.microsoft", 1)])


def _onnxruntime(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "0")
    return onnxruntime_session(str(path), opts).run(["y"], feeds)[0]


def _run(model: onnx.ModelProto, x_shape: list[int], tmp_path: Path, packed_bytes: int, asan: bool = False) -> int:
    """Compiles, checks against onnxruntime and the constant region's size; `asan`: also the bundle's C built
    with -Wall -Wextra -Werror and run under AddressSanitizer + UBSan (tests/support/cdriver.py)."""
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    feeds = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
    bundle = ember.compile(path, tmp_path / "out")
    assert "MatMulInt4" in bundle.manifest["ops"]
    want = _onnxruntime(path, feeds)
    assert_close(bundle.run(feeds)["y"], want, "y")
    if asan:
        assert_close(cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)["y"], want, "y (ASan)")
    constant = bundle.manifest["memory"]["constant"]
    assert packed_bytes <= constant <= packed_bytes + 64 * 5, (constant, packed_bytes)
    return constant


def _float_matmul(k: int, n: int, bias: bool) -> onnx.ModelProto:
    inits = {"w": RNG.standard_normal((k, n)).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm" if bias else "y"])]
    if bias:
        inits["b"] = RNG.standard_normal(n).astype(np.float32)
        nodes.append(helper.make_node("Add", ["mm", "b"], ["y"]))
    return _model(nodes, [3, k], inits, opset=17)


# ---- MatMulNBits written by onnxruntime's quantizer ----------------------------------------------

@pytest.mark.parametrize(("k", "n", "block", "symmetric"), [
    (512, 64, 32, True), (100, 24, 16, False), (256, 40, 64, False), (136, 16, 128, True)])
def test_matmul_nbits_from_onnxruntime_quantizer(k: int, n: int, block: int, symmetric: bool,
                                                 tmp_path: Path) -> None:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    q = MatMulNBitsQuantizer(_float_matmul(k, n, bias=False), bits=4, block_size=block, is_symmetric=symmetric)
    q.process()
    model = q.model.model
    assert [nd.op_type for nd in model.graph.node] == ["MatMulNBits"]
    nblk = -(-k // block)
    zp = 0 if symmetric else n * -(-nblk // 2)
    constant = _run(model, [3, k], tmp_path, n * nblk * block // 2 + 4 * n * nblk + zp)
    if k * n >= 16384:  # large enough for alignment not to matter: 1/8 of float32, plus a float scale per block
        assert constant <= k * n * 4 * (1 / 8 + 1 / block) * 1.05, constant


# ---- MatMulNBits packed by hand: float zero points, bias, trivial g_idx ---------------------------

def _nbits(k: int, n: int, block: int) -> tuple[np.ndarray, np.ndarray, int]:
    nblk = -(-k // block)
    codes = RNG.integers(0, 16, (n, nblk * block), dtype=np.uint8)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).reshape(n, nblk, block // 2)
    return packed, (RNG.random((n, nblk)) * 0.1 + 0.01).astype(np.float32), nblk


def test_matmul_nbits_float_zero_points_bias_and_g_idx(tmp_path: Path) -> None:
    k, n, block = 72, 20, 16
    packed, scales, nblk = _nbits(k, n, block)
    zeros = (RNG.random((n, nblk)) * 15).astype(np.float32)
    inits = {"b": packed, "s": scales, "z": zeros, "g": (np.arange(k) // block).astype(np.int32),
             "bias": RNG.standard_normal(n).astype(np.float32)}
    node = helper.make_node("MatMulNBits", ["x", "b", "s", "z", "g", "bias"], ["y"], domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=block, accuracy_level=0)
    _run(_model([node], [2, 3, k], inits), [2, 3, k], tmp_path, packed.size + 4 * (scales.size + zeros.size + n),
         asan=True)


def test_matmul_nbits_act_order_g_idx_is_refused(tmp_path: Path) -> None:
    k, n, block = 32, 8, 16
    packed, scales, _ = _nbits(k, n, block)
    g = RNG.permutation(np.arange(k) // block).astype(np.int32)
    node = helper.make_node("MatMulNBits", ["x", "b", "s", "", "g"], ["y"], domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=block)
    path = tmp_path / "model.onnx"
    onnx.save(_model([node], [1, k], {"b": packed, "s": scales, "g": g}), path)
    with pytest.raises(UnsupportedOperatorError, match="g_idx") as err:
        ember.compile(path, tmp_path / "out")
    assert "\n" not in str(err.value)


# ---- DequantizeLinear(int4 / uint4) -> MatMul (opset 21) -----------------------------------------

def _int4_tensor(name: str, values: np.ndarray, signed: bool) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.INT4 if signed else TensorProto.UINT4, values.shape,
                              values.reshape(-1).tolist())


@pytest.mark.parametrize(("k", "n", "block", "signed", "zero_points"), [
    (64, 24, 32, True, False), (100, 16, 16, True, True), (96, 20, 32, False, True), (80, 12, 0, False, False)])
def test_dequantize_int4_then_matmul(k: int, n: int, block: int, signed: bool, zero_points: bool,
                                     tmp_path: Path) -> None:
    lo, hi = (-8, 8) if signed else (0, 16)
    q = RNG.integers(lo, hi, (k, n))
    nblk = -(-k // block) if block else 1
    s_shape = (nblk, n) if block else (n,)  # block 0: one scale per output column (axis 1)
    scale = (RNG.random(s_shape) * 0.1 + 0.01).astype(np.float32)
    inits = [_int4_tensor("q", q, signed)]
    ins = ["q", "s"]
    if zero_points:
        inits.append(_int4_tensor("z", RNG.integers(lo, hi, s_shape), signed))
        ins.append("z")
    attrs = {"axis": 0, "block_size": block} if block else {"axis": 1}
    nodes = [helper.make_node("DequantizeLinear", ins, ["w"], **attrs), helper.make_node("MatMul", ["x", "w"], ["y"])]
    bb = (block if block else k + k % 2) // 2
    packed = n * nblk * bb + 4 * n * nblk + (n * -(-nblk // 2) if zero_points else 0)
    _run(_model(nodes, [2, 3, k], {"s": scale}, initializers=inits), [2, 3, k], tmp_path, packed, asan=zero_points)


def test_int4_layer_builds_for_cortex_m4(tmp_path: Path) -> None:
    """The kernel is freestanding C: the object for a Cortex-M4 (zig cc) passes ember's symbol checks."""
    k, n, block = 64, 16, 32
    packed, scales, _ = _nbits(k, n, block)
    node = helper.make_node("MatMulNBits", ["x", "b", "s"], ["y"], domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=block)
    path = tmp_path / "model.onnx"
    onnx.save(_model([node], [1, k], {"b": packed, "s": scales}), path)
    from ember.api import write_bundle
    from ember.config import CompileOptions

    manifest = write_bundle(str(path), tmp_path / "m4", CompileOptions(target="cortex-m4"))
    assert (tmp_path / "m4" / f"{manifest['name']}.o").stat().st_size > 0
    assert "ember_matmul_int4" in (tmp_path / "m4" / f"{manifest['name']}.c").read_text()
