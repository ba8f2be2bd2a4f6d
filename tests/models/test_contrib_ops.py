"""onnxruntime's com.microsoft operators (ember/frontends/onnx/contrib.py) against onnxruntime itself.

Each model is one contrib node (or a short chain), built with onnx.helper; onnxruntime's CPU kernels are
the reference. Float ops match at 1e-4 relative; quantized ops (uint8 outputs) within one step, since
ember's integer kernels may round a tie differently from onnxruntime's float path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.errors import UnsupportedOperatorError
from tests.support.models import assert_outputs_match, bert_fused_by_onnxruntime, onnxruntime_outputs

F, U8, I8, I32, I64 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32, TensorProto.INT64
RNG = np.random.default_rng(7)


def _model(nodes: list[onnx.NodeProto], inputs: list[tuple[str, int, list[int]]],
           outputs: list[tuple[str, int, list[int] | None]], inits: dict[str, np.ndarray] | None = None,
           ) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "contrib", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs],
                          [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def _ms(op: str, ins: list[str], outs: list[str], **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, ins, outs, domain="com.microsoft", **attrs)


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tmp_path: Path, *, steps: int = 0,
           rtol: float = 1e-4, atol: float = 1e-5) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    want = onnxruntime_outputs(path, feeds)
    got = ember.compile(path, tmp_path / "out").run(feeds)
    assert_outputs_match(got, want, rtol=rtol, atol=atol, steps=steps)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op", ["Gelu", "FastGelu", "BiasGelu", "QuickGelu"])
def test_gelu_family(op: str, tmp_path: Path) -> None:
    takes_bias = op in ("FastGelu", "BiasGelu")
    attrs = {"alpha": 1.5} if op == "QuickGelu" else {}
    node = _ms(op, ["x", "bias"] if takes_bias else ["x"], ["y"], **attrs)
    inits = {"bias": _x(16)} if takes_bias else {}
    _check(_model([node], [("x", F, [2, 3, 16])], [("y", F, None)], inits), {"x": _x(2, 3, 16) * 3}, tmp_path)


@pytest.mark.parametrize(("trans_a", "trans_b", "alpha"), [(0, 0, 1.0), (1, 0, 0.5), (0, 1, 2.0), (1, 1, 0.25)])
def test_fused_matmul(trans_a: int, trans_b: int, alpha: float, tmp_path: Path) -> None:
    a_shape = [2, 6, 5] if trans_a else [2, 5, 6]
    b_shape = [7, 6] if trans_b else [6, 7]
    node = _ms("FusedMatMul", ["a", "b"], ["y"], transA=trans_a, transB=trans_b, alpha=alpha)
    model = _model([node], [("a", F, a_shape)], [("y", F, None)], {"b": _x(*b_shape)})
    _check(model, {"a": _x(*a_shape)}, tmp_path)


@pytest.mark.parametrize("with_bias", [False, True])
def test_skip_layer_normalization(with_bias: bool, tmp_path: Path) -> None:
    ins = ["x", "skip", "gamma", "beta"] + (["bias"] if with_bias else [])
    node = _ms("SkipLayerNormalization", ins, ["y", "", "", "sum"], epsilon=1e-5)
    inits = {"gamma": _x(32), "beta": _x(32)} | ({"bias": _x(32)} if with_bias else {})
    model = _model([node], [("x", F, [2, 5, 32]), ("skip", F, [2, 5, 32])], [("y", F, None), ("sum", F, None)],
                   inits)
    _check(model, {"x": _x(2, 5, 32), "skip": _x(2, 5, 32)}, tmp_path)
    # The rewrite's Adds and LayerNormalization meet again in one fused node (passes/fuse_norm.py).
    graph, _, _ = build_graph(str(tmp_path / "model.onnx"), CompileOptions())
    assert graph.op_counts() == {"SkipLayerNormalization": 1}


def test_skip_simplified_and_simplified_layer_normalization(tmp_path: Path) -> None:
    nodes = [_ms("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"], ["h", "", "", "sum"],
                 epsilon=1e-6),
             helper.make_node("SimplifiedLayerNormalization", ["sum", "gamma"], ["y"], axis=-1, epsilon=1e-5)]
    model = _model(nodes, [("x", F, [1, 4, 16]), ("skip", F, [1, 4, 16])],
                   [("h", F, None), ("y", F, None), ("sum", F, None)], {"gamma": _x(16), "bias": _x(16)})
    _check(model, {"x": _x(1, 4, 16), "skip": _x(1, 4, 16)}, tmp_path)


@pytest.mark.parametrize("with_mask", [False, True])
def test_embed_layer_normalization(with_mask: bool, tmp_path: Path) -> None:
    ins = ["ids", "segments", "word", "position", "segment", "gamma", "beta"] + (["mask"] if with_mask else [])
    node = _ms("EmbedLayerNormalization", ins, ["y", "mask_index", "embedding_sum"], epsilon=1e-5)
    inits = {"word": _x(30, 16), "position": _x(8, 16), "segment": _x(2, 16), "gamma": _x(16), "beta": _x(16)}
    inputs = [("ids", I32, [2, 6]), ("segments", I32, [2, 6])] + ([("mask", I32, [2, 6])] if with_mask else [])
    model = _model([node], inputs, [("y", F, None), ("mask_index", I32, None), ("embedding_sum", F, None)], inits)
    feeds = {"ids": RNG.integers(0, 30, (2, 6), dtype=np.int32),
             "segments": RNG.integers(0, 2, (2, 6), dtype=np.int32)}
    if with_mask:
        feeds["mask"] = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    _check(model, feeds, tmp_path)


def _nbits_weights(n: int, k: int, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    blocks = -(-k // block)
    q = RNG.integers(0, 16, (n, blocks * block), dtype=np.uint8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(n, blocks, block // 2)
    scales = (RNG.random((n * blocks,)) * 0.1 + 0.01).astype(np.float32)
    zq = RNG.integers(0, 16, (n, blocks + blocks % 2), dtype=np.uint8)
    zeros = (zq[:, 0::2] | (zq[:, 1::2] << 4)).reshape(-1)
    return packed, scales, zeros


@pytest.mark.parametrize("with_zeros", [False, True])
def test_matmul_nbits(with_zeros: bool, tmp_path: Path) -> None:
    n, k, block = 12, 64, 16
    packed, scales, zeros = _nbits_weights(n, k, block)
    ins = ["a", "b", "scales"] + (["zeros"] if with_zeros else [])
    node = _ms("MatMulNBits", ins, ["y"], K=k, N=n, bits=4, block_size=block)
    inits = {"b": packed, "scales": scales} | ({"zeros": zeros} if with_zeros else {})
    model = _model([node], [("a", F, [3, k])], [("y", F, None)], inits)
    _check(model, {"a": _x(3, k)}, tmp_path, rtol=1e-4, atol=1e-4)


def test_dynamic_quantize_matmul_and_matmul_integer_to_float(tmp_path: Path) -> None:
    b = RNG.integers(-100, 100, (16, 8), dtype=np.int8)
    nodes = [_ms("DynamicQuantizeMatMul", ["a", "b", "b_scale", "", "bias"], ["y"]),
             helper.make_node("DynamicQuantizeLinear", ["a"], ["a_q", "a_s", "a_zp"]),
             _ms("MatMulIntegerToFloat", ["a_q", "b", "a_s", "b_scale", "a_zp", "", "bias"], ["y2"])]
    inits = {"b": b, "b_scale": np.array([0.02], np.float32), "bias": _x(8)}
    model = _model(nodes, [("a", F, [4, 16])], [("y", F, None), ("y2", F, None)], inits)
    _check(model, {"a": _x(4, 16)}, tmp_path, rtol=1e-4, atol=1e-4)


def _q(name: str, scale: float, zero: int) -> dict[str, np.ndarray]:
    return {f"{name}_s": np.array(scale, np.float32), f"{name}_z": np.array(zero, np.uint8)}


def test_qlinear_pointwise_ops(tmp_path: Path) -> None:
    nodes = [_ms("QLinearAdd", ["a", "a_s", "a_z", "b", "b_s", "b_z", "c_s", "c_z"], ["sum"]),
             _ms("QLinearMul", ["a", "a_s", "a_z", "b", "b_s", "b_z", "m_s", "m_z"], ["prod"]),
             _ms("QLinearSigmoid", ["b", "b_s", "b_z", "s_s", "s_z"], ["sig"]),
             _ms("QLinearLeakyRelu", ["a", "a_s", "a_z", "c_s", "c_z"], ["leaky"], alpha=0.2),
             _ms("QLinearConcat", ["c_s", "c_z", "b", "b_s", "b_z", "a", "a_s", "a_z"], ["cat"], axis=1),
             _ms("QLinearGlobalAveragePool", ["a", "a_s", "a_z", "c_s", "c_z"], ["gap"], channels_last=0)]
    inits = _q("a", 0.05, 128) | _q("b", 0.04, 120) | _q("c", 0.08, 125) | _q("m", 0.1, 130) | _q("s", 1 / 255, 0)
    model = _model(nodes, [("a", U8, [1, 4, 3, 3]), ("b", U8, [1, 4, 3, 3])],
                   [(o, U8, None) for o in ("sum", "prod", "sig", "leaky", "cat", "gap")], inits)
    feeds = {k: RNG.integers(0, 256, (1, 4, 3, 3), dtype=np.uint8) for k in ("a", "b")}
    _check(model, feeds, tmp_path, steps=1)


def test_qgemm(tmp_path: Path) -> None:
    b = RNG.integers(0, 256, (6, 10), dtype=np.uint8)
    node = _ms("QGemm", ["a", "a_s", "a_z", "b", "b_s", "b_z", "c", "y_s", "y_z"], ["y"], transB=1, alpha=1.0)
    inits = _q("a", 0.05, 128) | _q("b", 0.03, 127) | _q("y", 0.2, 128) | {"b": b}
    inits["c"] = RNG.integers(-500, 500, (6,), dtype=np.int32)
    model = _model([node], [("a", U8, [3, 10])], [("y", U8, None)], inits)
    _check(model, {"a": RNG.integers(0, 256, (3, 10), dtype=np.uint8)}, tmp_path, steps=1)


def test_unsupported_attribute_is_named(tmp_path: Path) -> None:
    node = _ms("FusedMatMul", ["a", "b"], ["y"], transBatchA=1)
    path = tmp_path / "m.onnx"
    onnx.save(_model([node], [("a", F, [2, 3, 4])], [("y", F, None)], {"b": _x(4, 5)}), path)
    with pytest.raises(UnsupportedOperatorError, match="FusedMatMul.*transBatchA"):
        ember.compile(path, tmp_path / "out")


@pytest.mark.parametrize(("mask", "unidirectional"), [("lengths", 0), ("raw", 0), ("none", 1), ("raw", 1)])
def test_attention(mask: str, unidirectional: int, tmp_path: Path) -> None:
    batch, seq, hidden, heads = 2, 5, 16, 4
    ins = ["x", "w", "b"] + ([] if mask == "none" else ["mask"])
    node = _ms("Attention", ins, ["y"], num_heads=heads, unidirectional=unidirectional)
    inputs = [("x", F, [batch, seq, hidden])]
    feeds = {"x": _x(batch, seq, hidden)}
    if mask == "lengths":
        inputs.append(("mask", I32, [batch]))
        feeds["mask"] = np.array([3, 5], np.int32)
    elif mask == "raw":
        inputs.append(("mask", I32, [batch, seq]))
        feeds["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    model = _model([node], inputs, [("y", F, None)], {"w": _x(hidden, 3 * hidden) * 0.3, "b": _x(3 * hidden)})
    _check(model, feeds, tmp_path)


def test_multi_head_attention(tmp_path: Path) -> None:
    batch, seq, kv_seq, hidden, heads = 2, 4, 6, 16, 2
    node = _ms("MultiHeadAttention", ["q", "k", "v", "bias", "pad"], ["y"], num_heads=heads, scale=0.3)
    model = _model([node], [("q", F, [batch, seq, hidden]), ("k", F, [batch, kv_seq, hidden]),
                            ("v", F, [batch, kv_seq, hidden]), ("pad", I32, [batch, kv_seq])],
                   [("y", F, None)], {"bias": _x(3 * hidden)})
    feeds = {"q": _x(batch, seq, hidden), "k": _x(batch, kv_seq, hidden), "v": _x(batch, kv_seq, hidden),
             "pad": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)}
    _check(model, feeds, tmp_path)


def test_bert_through_the_transformer_optimizer(tmp_path: Path) -> None:
    """A Hugging Face BERT encoder (random weights) exported from PyTorch, fused by onnxruntime's transformer
    optimizer into com.microsoft Attention, SkipLayerNormalization and BiasGelu, compiled by ember."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    bert_fused_by_onnxruntime(tmp_path / "model.onnx", hidden=64, layers=2, heads=4, seq=16, batch=2, vocab=100,
                              mask_input=True)
    ops = {(n.domain, n.op_type) for n in onnx.load(tmp_path / "model.onnx").graph.node}
    assert {("com.microsoft", "Attention"), ("com.microsoft", "SkipLayerNormalization")} <= ops, ops
    lengths = np.array([16, 9])  # the second row padded: the mask matters
    feeds = {"input_ids": RNG.integers(0, 100, (2, 16)), "token_type_ids": RNG.integers(0, 2, (2, 16)),
             "attention_mask": (np.arange(16) < lengths[:, None]).astype(np.int64)}
    _check(onnx.load(tmp_path / "model.onnx"), feeds, tmp_path, rtol=1e-3, atol=1e-4)
