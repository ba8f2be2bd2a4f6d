"""fuse_attention: MatMul(Q * c, Transpose(K) * c) [/ c] -> Softmax -> MatMul(., V), as torch exports attention,
becomes one Attention node with the constants' product as its scale and gives onnxruntime's outputs; a Softmax
over another axis, scores that something else reads, or broadcast batch dims keep the nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from tests.support.models import assert_close, onnxruntime_outputs


def _model(path: Path, variant: str, b: int = 1, h: int = 3, s: int = 37, d: int = 24) -> dict[str, np.ndarray]:
    if variant == "broadcast_k":  # one K for two batches of queries
        b, kb = 2, 1
    else:
        kb = b
    rng = np.random.default_rng(3)
    feeds = {"q": rng.standard_normal((b, h, s, d)), "k": rng.standard_normal((kb, h, s, d)),
             "v": rng.standard_normal((b, h, s, 20))}
    feeds = {n: x.astype(np.float32) for n, x in feeds.items()}
    c = float(d) ** -0.25
    inits = [numpy_helper.from_array(np.array([c], np.float32), "c"),
             numpy_helper.from_array(np.array(1.7, np.float32), "div")]
    nodes = [helper.make_node("Mul", ["q", "c"], ["qs"])]
    if variant == "scale_before_transpose":  # Transpose(K * c)
        nodes += [helper.make_node("Mul", ["c", "k"], ["ks"]),
                  helper.make_node("Transpose", ["ks"], ["kt"], perm=[0, 1, 3, 2])]
    else:  # Transpose(K) * c, torch's order
        nodes += [helper.make_node("Transpose", ["k"], ["k_t"], perm=[0, 1, 3, 2]),
                  helper.make_node("Mul", ["k_t", "c"], ["kt"])]
    nodes += [helper.make_node("MatMul", ["qs", "kt"], ["sc"]),
              helper.make_node("Div", ["sc", "div"], ["sd"]),
              helper.make_node("Softmax", ["sd"], ["p"], axis=2 if variant == "other_axis" else -1),
              helper.make_node("MatMul", ["p", "v"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if variant == "scores_read":
        outputs.append(helper.make_tensor_value_info("sc", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "att", [helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape)
                                             for n, x in feeds.items()], outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return feeds


@pytest.mark.parametrize(("variant", "fused"), [("torch", True), ("scale_before_transpose", True),
                                                ("other_axis", False), ("scores_read", False),
                                                ("broadcast_k", False)])
def test_written_out_attention_fuses_and_matches_onnxruntime(variant: str, fused: bool, tmp_path: Path) -> None:
    path = tmp_path / "att.onnx"
    feeds = _model(path, variant)
    bundle = ember.compile(path, tmp_path / "out")
    ops = [n["op"] for n in bundle.manifest["nodes"]]
    if fused:
        assert ops == ["Attention"], ops
    else:
        assert "Attention" not in ops and "Softmax" in ops, ops
    got, ref = bundle.run(feeds), onnxruntime_outputs(path, feeds)
    for name, want in ref.items():
        assert_close(got[name], want, f"{variant}: {name}")


def _rows_model(path: Path, layout: str, s: int = 29, h: int = 3, d: int = 20) -> dict[str, np.ndarray]:
    """Q, K, V split into heads from [batch, tokens, heads x size] rows and the output joined back, as BERT's
    export ("bert": Reshape, Transpose 0213, K^T by Transpose 0231) and ViT's ("vit": [tokens, heads, size],
    Transpose 102, Reshape to 4-D; out by Transpose 2013) write it."""
    rng = np.random.default_rng(5)
    feeds = {n: rng.standard_normal((1, s, h * d)).astype(np.float32) for n in "qkv"}
    c = float(d) ** -0.5
    inits = [numpy_helper.from_array(np.array(c, np.float32), "c"),
             numpy_helper.from_array(np.array([1, s, h, d], np.int64), "bshd"),
             numpy_helper.from_array(np.array([s, h, d], np.int64), "shd"),
             numpy_helper.from_array(np.array([1, h, s, d], np.int64), "bhsd"),
             numpy_helper.from_array(np.array([1, s, h * d], np.int64), "rows")]
    nodes = []
    for n in "qkv":
        if layout == "bert":
            nodes += [helper.make_node("Reshape", [n, "bshd"], [f"{n}4"]),
                      helper.make_node("Transpose", [f"{n}4"], [f"{n}h"],
                                       perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3])]
        else:
            nodes += [helper.make_node("Reshape", [n, "shd"], [f"{n}3"]),
                      helper.make_node("Transpose", [f"{n}3"], [f"{n}t"], perm=[1, 0, 2]),
                      helper.make_node("Reshape", [f"{n}t", "bhsd"], [f"{n}h" if n != "k" else "k4"])]
    if layout == "vit":
        nodes.append(helper.make_node("Transpose", ["k4"], ["kh"], perm=[0, 1, 3, 2]))
    nodes += [helper.make_node("MatMul", ["qh", "kh"], ["sc"]), helper.make_node("Mul", ["sc", "c"], ["sm"]),
              helper.make_node("Softmax", ["sm"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "vh"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3] if layout == "bert" else [2, 0, 1, 3]),
              helper.make_node("Reshape", ["ot", "rows"], ["y"])]
    graph = helper.make_graph(nodes, "att", [helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape)
                                             for n, x in feeds.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return feeds


@pytest.mark.parametrize("layout", ["bert", "vit"])
def test_head_split_rows_take_the_3d_form_without_copies(layout: str, tmp_path: Path) -> None:
    path = tmp_path / "att.onnx"
    feeds = _rows_model(path, layout)
    bundle = ember.compile(path, tmp_path / "out")
    ops = {n["op"] for n in bundle.manifest["nodes"]}
    assert ops <= {"Attention", "Reshape"} and "Attention" in ops, ops  # no Transpose copies the heads
    assert_close(bundle.run(feeds)["y"], onnxruntime_outputs(path, feeds)["y"], layout)
