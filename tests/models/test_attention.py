"""Decoder blocks of the transformer operators (opset 23), built with onnx.helper, against onnxruntime:
RMSNormalization -> Q/K/V projections -> RotaryEmbedding -> Attention (GQA/MQA, causal, KV cache, masks)
-> output projection + residual; and a decoding step on an external cache (TensorScatter + Attention's
nonpad_kv_seqlen, opset 24)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.errors import EmberError
from tests.support.models import assert_close, onnxruntime_outputs

HIDDEN, HEAD = 64, 16


def _rope_caches(positions: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    angles = np.arange(positions)[:, None] * inv[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def _decoder_4d(batch: int, seq: int, past: int, hq: int, hkv: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """4-D Attention with GQA, is_causal and a KV cache (past_key/past_value in, present out); the
    queries and keys rotate by their absolute positions (position_ids past..past+seq)."""
    rng = np.random.default_rng(7)
    cos, sin = _rope_caches(past + seq + 8, HEAD // 2)

    def w(name: str, *shape: int, s: float = 0.2) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)

    inits = [
        w("norm", HIDDEN, s=1.0), w("wq", HIDDEN, hq * HEAD), w("wk", HIDDEN, hkv * HEAD), w("wv", HIDDEN, hkv * HEAD),
        w("wo", hq * HEAD, HIDDEN), numpy_helper.from_array(cos, "cos"), numpy_helper.from_array(sin, "sin"),
        numpy_helper.from_array(np.array([batch, seq, hq, HEAD], np.int64), "q_shape"),
        numpy_helper.from_array(np.array([batch, seq, hkv, HEAD], np.int64), "kv_shape"),
        numpy_helper.from_array(np.array([batch, seq, hq * HEAD], np.int64), "y_shape"),
    ]
    nodes = [helper.make_node("RMSNormalization", ["x", "norm"], ["h"], epsilon=1e-6)]
    for name, shape in (("q", "q_shape"), ("k", "kv_shape"), ("v", "kv_shape")):
        nodes += [helper.make_node("MatMul", ["h", f"w{name}"], [f"{name}_flat"]),
                  helper.make_node("Reshape", [f"{name}_flat", shape], [f"{name}_bshd"]),
                  helper.make_node("Transpose", [f"{name}_bshd"], [f"{name}_4d"], perm=[0, 2, 1, 3])]
    nodes += [
        helper.make_node("RotaryEmbedding", ["q_4d", "cos", "sin", "pos"], ["q_rot"]),
        helper.make_node("RotaryEmbedding", ["k_4d", "cos", "sin", "pos"], ["k_rot"]),
        helper.make_node("Attention", ["q_rot", "k_rot", "v_4d", "", "past_key", "past_value"],
                         ["attn", "present_key", "present_value"], is_causal=1),
        helper.make_node("Transpose", ["attn"], ["attn_bshd"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["attn_bshd", "y_shape"], ["attn_flat"]),
        helper.make_node("MatMul", ["attn_flat", "wo"], ["proj"]),
        helper.make_node("Add", ["x", "proj"], ["y"]),
    ]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f, [batch, seq, HIDDEN]),
              helper.make_tensor_value_info("pos", TensorProto.INT64, [batch, seq]),
              helper.make_tensor_value_info("past_key", f, [batch, hkv, past, HEAD]),
              helper.make_tensor_value_info("past_value", f, [batch, hkv, past, HEAD])]
    outputs = [helper.make_tensor_value_info("y", f, [batch, seq, HIDDEN]),
               helper.make_tensor_value_info("present_key", f, [batch, hkv, past + seq, HEAD]),
               helper.make_tensor_value_info("present_value", f, [batch, hkv, past + seq, HEAD])]
    model = helper.make_model(helper.make_graph(nodes, "decoder4d", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 23)])
    feeds = {"x": rng.standard_normal((batch, seq, HIDDEN)).astype(np.float32),
             "pos": np.tile(np.arange(past, past + seq, dtype=np.int64), (batch, 1)),
             "past_key": rng.standard_normal((batch, hkv, past, HEAD)).astype(np.float32),
             "past_value": rng.standard_normal((batch, hkv, past, HEAD)).astype(np.float32)}
    return model, feeds


def _decoder_3d(batch: int, seq: int, hq: int, hkv: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """3-D Attention (q_num_heads / kv_num_heads) with a boolean padding mask and softcap; RotaryEmbedding
    on the 3-D projections (num_heads), interleaved, without position_ids (per-token caches)."""
    rng = np.random.default_rng(11)
    cos, sin = _rope_caches(seq, HEAD // 2)
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)
             for name, shape in (("wq", (HIDDEN, hq * HEAD)), ("wk", (HIDDEN, hkv * HEAD)),
                                 ("wv", (HIDDEN, hkv * HEAD)), ("norm", (HIDDEN,)))]
    inits += [numpy_helper.from_array(np.broadcast_to(c, (batch, seq, HEAD // 2)).copy(), n)
              for n, c in (("cos", cos), ("sin", sin))]
    nodes = [helper.make_node("RMSNormalization", ["x", "norm"], ["h"], axis=-1),
             helper.make_node("MatMul", ["h", "wq"], ["q"]), helper.make_node("MatMul", ["h", "wk"], ["k"]),
             helper.make_node("MatMul", ["h", "wv"], ["v"]),
             helper.make_node("RotaryEmbedding", ["q", "cos", "sin"], ["q_rot"], num_heads=hq, interleaved=1),
             helper.make_node("RotaryEmbedding", ["k", "cos", "sin"], ["k_rot"], num_heads=hkv, interleaved=1),
             helper.make_node("Attention", ["q_rot", "k_rot", "v", "mask"], ["y"], q_num_heads=hq,
                              kv_num_heads=hkv, softcap=4.0)]
    f = TensorProto.FLOAT
    model = helper.make_model(helper.make_graph(
        nodes, "decoder3d", [helper.make_tensor_value_info("x", f, [batch, seq, HIDDEN]),
                             helper.make_tensor_value_info("mask", TensorProto.BOOL, [batch, 1, seq, seq])],
        [helper.make_tensor_value_info("y", f, [batch, seq, hq * HEAD])], inits),
        opset_imports=[helper.make_opsetid("", 23)])
    mask = np.ones((batch, 1, seq, seq), bool)
    mask[0, ..., seq - 3:] = False  # the first sample's last three tokens are padding
    mask[1, 0, 2, :] = False  # and one query row of the second attends nothing (zeros, not NaN)
    return model, {"x": rng.standard_normal((batch, seq, HIDDEN)).astype(np.float32), "mask": mask}


def _decode_external_cache(batch: int, cache: int, hq: int, hkv: int, causal: int) -> tuple[
        onnx.ModelProto, dict[str, np.ndarray]]:
    """One decoding step on a static (external) cache, opset 24: TensorScatter writes the new key/value row
    at each sample's position, Attention reads the cache with nonpad_kv_seqlen (padding masked, causal
    frontier at the sample's length)."""
    rng = np.random.default_rng(5)
    f = TensorProto.FLOAT
    nodes = [helper.make_node("TensorScatter", ["k_cache", "k_new", "write"], ["k_next"]),
             helper.make_node("TensorScatter", ["v_cache", "v_new", "write"], ["v_next"]),
             helper.make_node("Attention", ["q", "k_next", "v_next", "", "", "", "lengths"], ["y"], is_causal=causal)]
    shapes = {"q": [batch, hq, 1, HEAD], "k_new": [batch, hkv, 1, HEAD], "v_new": [batch, hkv, 1, HEAD],
              "k_cache": [batch, hkv, cache, HEAD], "v_cache": [batch, hkv, cache, HEAD]}
    inputs = [helper.make_tensor_value_info(n, f, s) for n, s in shapes.items()]
    inputs += [helper.make_tensor_value_info(n, TensorProto.INT64, [batch]) for n in ("write", "lengths")]
    outputs = [helper.make_tensor_value_info("y", f, [batch, hq, 1, HEAD]),
               helper.make_tensor_value_info("k_next", f, shapes["k_cache"]),
               helper.make_tensor_value_info("v_next", f, shapes["v_cache"])]
    model = helper.make_model(helper.make_graph(nodes, "decode", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 24)])
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    write = rng.integers(0, cache, batch).astype(np.int64)
    feeds |= {"write": write, "lengths": write + 1}
    return model, feeds


def _compare(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tmp_path: Path) -> None:
    path = tmp_path / "decoder.onnx"
    onnx.checker.check_model(model)
    onnx.save(model, path)
    ref = onnxruntime_outputs(path, feeds)
    got = ember.compile(path, tmp_path / "out").run(feeds)
    for name, expected in ref.items():
        assert_close(got[name], expected, name)


# Sequences longer than the kernel's 32-row query block exercise its blocking (and the ragged last block).
@pytest.mark.parametrize(("batch", "seq", "past", "hq", "hkv"),
                         [(2, 6, 5, 4, 2), (1, 40, 3, 4, 1), (1, 1, 9, 4, 4)])
def test_decoder_4d_gqa_causal_cache_matches_onnxruntime(batch: int, seq: int, past: int, hq: int, hkv: int,
                                                         tmp_path: Path) -> None:
    _compare(*_decoder_4d(batch, seq, past, hq, hkv), tmp_path)


@pytest.mark.parametrize(("seq", "hq", "hkv"), [(7, 4, 1), (36, 4, 2)])
def test_decoder_3d_mqa_mask_softcap_matches_onnxruntime(seq: int, hq: int, hkv: int, tmp_path: Path) -> None:
    _compare(*_decoder_3d(2, seq, hq, hkv), tmp_path)


@pytest.mark.parametrize("causal", [0, 1])
def test_decode_step_on_external_cache_matches_onnxruntime(causal: int, tmp_path: Path) -> None:
    _compare(*_decode_external_cache(3, 10, 4, 2, causal), tmp_path)


def test_heads_that_do_not_divide_are_refused_by_name(tmp_path: Path) -> None:
    model, _ = _decoder_3d(2, 4, 4, 3)
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    with pytest.raises(EmberError, match="3 key/value heads do not divide 4 query heads"):
        ember.compile(path, tmp_path / "out")


def _single_node(op: str, inputs: dict[str, tuple[int, list[int]]], outputs: list[str], opset: int,
                 **attrs: object) -> onnx.ModelProto:
    node = helper.make_node(op, list(inputs), outputs, **attrs)
    graph = helper.make_graph([node], "one", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


F = TensorProto.FLOAT


@pytest.mark.parametrize(("model", "message"), [
    (_single_node("RMSNormalization", {"x": (F, [2, 3, 4]), "s": (F, [1, 4])}, ["y"], 23, axis=1),
     "run-time scale that broadcasts over the normalized axes"),
    (_single_node("TensorScatter", {"c": (F, [2, 4, 5]), "u": (F, [2, 4, 5])}, ["y"], 24, axis=0),
     "axis 0 is the batch axis"),
    (_single_node("Attention", {"q": (F, [1, 2, 3, 8]), "k": (F, [1, 2, 5, 8]), "v": (F, [1, 2, 5, 8]),
                                "m": (F, [3, 6])}, ["y"], 23),
     "attn_mask has 6 key columns, more than the 5 keys"),
    (_single_node("Attention", {"q": (F, [1, 3, 16]), "k": (F, [1, 5, 16]), "v": (F, [1, 5, 16])}, ["y"], 23),
     "3-D inputs need positive q_num_heads and kv_num_heads"),
    (_single_node("RotaryEmbedding", {"x": (F, [1, 2, 3, 8]), "c": (F, [3, 3]), "s": (F, [3, 3])}, ["y"], 23),
     r"cos_cache \[3, 3\] / sin_cache \[3, 3\] must be \[1, 3, 4\]"),
])
def test_bad_transformer_nodes_are_refused_naming_the_problem(model: onnx.ModelProto, message: str,
                                                              tmp_path: Path) -> None:
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    with pytest.raises(EmberError, match=message):
        ember.compile(path, tmp_path / "out")
