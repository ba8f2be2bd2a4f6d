"""The Attention kernel's paths (kernels/attention.c) against onnxruntime, opset 23: K (and V, when its head size
fills whole matmul panels) packed once per head, query blocks of 48 rows with a ragged last one, the softmax
factor applied to the output rows (or to the probabilities when they are an output), and the unpacked V when
causality leaves keys out of a block or the head size is not a multiple of 16. Odd token counts (ViT's 197)
and head sizes that are not multiples of 8; the C driver under ASan/UBSan on two of them. With threads the node
divides into row blocks of its heads (whole heads where a part holds them, a head's rows cut where a part boundary
falls inside it) and computes the very bytes of one thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

# name -> (Q shape, K/V heads, head size of V, attributes, mask shape or None, qk output)
CASES: dict[str, tuple[tuple[int, ...], int, int, dict, tuple[int, ...] | None, bool]] = {
    # ViT-Tiny's heads: 197 tokens (4 blocks of 48 + 5), V in panels.
    "vit_197x64": ((1, 3, 197, 64), 3, 64, {}, None, False),
    # Head sizes 20 and 12: K packed with a ragged last panel, V read unpacked.
    "odd_heads": ((2, 2, 37, 20), 2, 12, {}, None, False),
    # Causal prefill: the early blocks see fewer keys than T (V unpacked there), the last all of them.
    "causal_gqa": ((1, 4, 70, 32), 2, 32, {"is_causal": 1}, None, False),
    # 3-D inputs, a float mask broadcast over batch and heads, softcap and a scale.
    "mask_3d": ((2, 53, 4 * 16), 2, 16, {"q_num_heads": 4, "kv_num_heads": 2, "softcap": 3.0, "scale": 0.3},
                (53, 53), False),
    # The probabilities as an output (rows normalized in place), with a boolean mask.
    "qk_probs": ((1, 2, 29, 16), 2, 16, {"qk_matmul_output_mode": 3}, (1, 1, 29, 29), True),
}
SANITIZED = ("vit_197x64", "mask_3d")


def _model(path: Path, case: str) -> dict[str, np.ndarray]:
    qshape, hkv, dv, attrs, mshape, qk = CASES[case]
    rng = np.random.default_rng(len(case))
    if len(qshape) == 4:
        b, hq, s, d = qshape
        kshape, vshape = (b, hkv, s, d), (b, hkv, s, dv)
    else:
        b, s, hidden = qshape
        d = hidden // attrs["q_num_heads"]
        kshape, vshape = (b, s, hkv * d), (b, s, hkv * dv)
    feeds = {"q": rng.standard_normal(qshape), "k": rng.standard_normal(kshape), "v": rng.standard_normal(vshape)}
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    inputs = ["q", "k", "v"]
    if mshape is not None:
        boolean = case == "qk_probs"
        mask = rng.random(mshape) > 0.3 if boolean else (rng.standard_normal(mshape) * 2).astype(np.float32)
        if boolean:
            mask[..., 0] = True  # every row keeps a key
        feeds["mask"] = mask
        inputs.append("mask")
    outputs = ["y"] + (["", "", "qk"] if qk else [])
    node = helper.make_node("Attention", inputs, outputs, **attrs)
    vi = [helper.make_tensor_value_info(n, TensorProto.BOOL if feeds[n].dtype == bool else TensorProto.FLOAT,
                                        feeds[n].shape) for n in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs if n]
    graph = helper.make_graph([node], "att", vi, outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    onnx.save(model, path)
    return feeds


@pytest.mark.parametrize("case", sorted(CASES))
def test_attention_paths_match_onnxruntime(case: str, tmp_path: Path) -> None:
    path = tmp_path / "att.onnx"
    feeds = _model(path, case)
    ref = onnxruntime_outputs(path, feeds)
    bundle = ember.compile(path, tmp_path / "out")
    got = bundle.run(feeds)
    for name, want in ref.items():
        assert_close(got[name], want, f"{case}: {name}")
    if case in SANITIZED:
        got = cdriver.run(bundle.path, tmp_path / "asan", feeds, sanitize=True)
        for name, want in ref.items():
            assert_close(got[name], want, f"{case}: {name} (ASan/UBSan)")


# ViT's 3 heads on 2 threads: a whole head and half of the next in each part; the grouped-query case (2 key/value
# heads of 2 query heads each, batch 2, a mask) on 3: every part cuts a head's rows.
@pytest.mark.parametrize(("case", "threads", "calls"), [("vit_197x64", 2, 4), ("mask_3d", 3, 4)])
def test_attention_divides_into_heads_and_rows(case: str, threads: int, calls: int, tmp_path: Path) -> None:
    path = tmp_path / "att.onnx"
    feeds = _model(path, case)
    serial = ember.compile(path, tmp_path / "t1")
    threaded = ember.compile(path, tmp_path / "t2", threads=threads)
    assert threaded.manifest["threads"]["divided"] == 1
    assert (threaded.path / "att.c").read_text().count("ember_attention_f32(") - 1 == calls
    got, want = threaded.run(feeds)["y"], serial.run(feeds)["y"]
    assert np.array_equal(got, want), f"{case}: {threads} threads vs 1"
    got = cdriver.run(threaded.path, tmp_path / "asan", feeds, sanitize=True)["y"]
    # (built with the driver's own flags, not the bundle's: its rounding may differ in the last bit)
    assert_close(got, want, f"{case}: {threads} threads vs 1 (ASan/UBSan)", rel=1e-5)
