"""The indexing family on a Cortex-M4 (QEMU): one model with every operator of ember/ops/indexing.py,
reorder.py and CumProd, float32 and integer, compiled for cortex-m4 (freestanding, no double-precision
soft float: the object checks of ember.compile) and run bare metal; outputs match the host bundle's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

import ember
from tests.cross import require_tools
from tests.support import mcu
from tests.support.models import assert_close

RNG = np.random.default_rng(11)
F, I64, I32 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.INT32


def _model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    vi = helper.make_tensor_value_info
    n = helper.make_node
    nodes = [
        n("DepthToSpace", ["x"], ["d2s"], blocksize=2, mode="CRD"),
        n("SpaceToDepth", ["d2s"], ["s2d"], blocksize=2),
        n("GatherElements", ["x", "gi"], ["ge"], axis=2),
        n("GatherND", ["x", "ndi"], ["gnd"], batch_dims=1),
        n("ScatterElements", ["x", "gi", "x"], ["se"], axis=3, reduction="add"),
        n("ScatterND", ["x", "ndi2", "upd"], ["snd"], reduction="max"),
        n("OneHot", ["oi", "depth", "values"], ["oh"], axis=0),
        n("TopK", ["x", "k"], ["tv", "ti"], axis=1),
        n("TopK", ["xi", "k"], ["tiv", "tii"], largest=0),
        n("Hardmax", ["x"], ["hm"], axis=1),
        n("ReverseSequence", ["seq", "lens"], ["rs"], batch_axis=1, time_axis=0),
        n("CumProd", ["x", "axis"], ["cp"], exclusive=1),
        n("EyeLike", ["seq2d"], ["ey"], k=1, dtype=I32),
    ]
    feeds = {
        "x": RNG.uniform(0.5, 1.5, (2, 8, 4, 4)).astype(np.float32),
        "gi": RNG.integers(-4, 4, (2, 8, 4, 4)).astype(np.int64),
        "ndi": RNG.integers(-4, 8, (2, 3, 1)).astype(np.int64),
        "ndi2": np.array([[0, 1], [1, -1], [0, 1]], np.int64),
        "upd": RNG.uniform(0, 2, (3, 4, 4)).astype(np.float32),
        "oi": RNG.integers(-6, 6, (3, 4)).astype(np.int32),
        "xi": RNG.integers(-3, 3, (6, 5)).astype(np.int32),
        "seq": RNG.standard_normal((5, 3, 2)).astype(np.float32),
        "lens": np.array([5, 2, 0], np.int64),
        "seq2d": np.zeros((3, 5), np.float32),
    }
    consts = [numpy_helper.from_array(np.array([3], np.int64), "k"), numpy_helper.from_array(np.array(5, np.int64),
              "depth"), numpy_helper.from_array(np.array([-1, 1], np.float32), "values"),
              numpy_helper.from_array(np.array(3, np.int64), "axis")]
    ins = [vi(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()]
    outs = [vi(o, I64 if o in ("ti", "tii") else I32 if o in ("tiv", "ey") else F, None)
            for o in ("d2s", "s2d", "ge", "gnd", "se", "snd", "oh", "tv", "ti", "tiv", "tii", "hm", "rs", "cp", "ey")]
    graph = helper.make_graph(nodes, "indexing", ins, outs, consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)]), feeds


def test_indexing_ops_on_cortex_m4_match_host(tmp_path: Path) -> None:
    require_tools("cortex-m4", mcu.missing_tools("cortex-m4"))
    model, feeds = _model()
    onnx.save(model, tmp_path / "indexing.onnx")
    ref = ember.compile(tmp_path / "indexing.onnx", tmp_path / "host").run(feeds)
    bundle = ember.compile(tmp_path / "indexing.onnx", tmp_path / "m4", target="cortex-m4")
    got = mcu.run_on_mcu(bundle.path, "cortex-m4", feeds, tmp_path / "run")
    assert sorted(got) == sorted(ref)
    for name, r in ref.items():
        if r.dtype.kind == "f":
            assert_close(got[name], r, f"cortex-m4 output '{name}'")
        else:
            np.testing.assert_array_equal(got[name], r, err_msg=f"cortex-m4 output '{name}'")
