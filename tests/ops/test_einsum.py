"""Einsum on the equations users write, float32, against onnxruntime (also in the ASan/UBSan C driver).

The matmul-shaped ones must run on the matmul kernel (with scratch permutes where the layout needs them);
the others on the generated loop nest.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

# name: (equation, operand shapes, runs on ember_matmul_f32)
CASES: dict[str, tuple[str, list[tuple[int, ...]], bool]] = {
    "attention_scores": ("bhqd,bhkd->bhqk", [(2, 3, 7, 16), (2, 3, 9, 16)], True),
    "attention_values": ("bhqk,bhkd->bhqd", [(2, 3, 7, 9), (2, 3, 9, 16)], True),
    "matmul": ("ij,jk->ik", [(13, 21), (21, 17)], True),
    "matmul_transposed_a": ("ji,jk->ik", [(21, 13), (21, 17)], True),
    "matmul_result_transposed": ("ij,jk->ki", [(5, 6), (6, 7)], True),
    "result_batch_moved": ("bij,bjk->ibk", [(3, 4, 5), (3, 5, 6)], True),
    "operand_batch_last": ("ijb,bjk->bik", [(4, 5, 3), (3, 5, 6)], True),
    "batch_transpose": ("bij->bji", [(4, 5, 6)], False),
    "diagonal": ("ii->i", [(6, 6)], False),
    "trace": ("ii", [(5, 5)], False),
    "outer": ("i,j->ij", [(4,), (5,)], True),
    "ellipsis_broadcast": ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 2)], False),
    "sum_out_one_operand": ("ij,jk->k", [(3, 4), (4, 5)], False),
    "implicit_output": ("ij,jk", [(3, 4), (4, 5)], True),
}


def _model(path: Path, equation: str, shapes: list[tuple[int, ...]]) -> list[str]:
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes, strict=True)]
    graph = helper.make_graph([node], "einsum", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 8
    onnx.save(model, path)
    return names


@pytest.mark.parametrize("case", sorted(CASES))
def test_einsum_matches_onnxruntime(case: str, tmp_path: Path) -> None:
    equation, shapes, on_matmul = CASES[case]
    path = tmp_path / "einsum.onnx"
    names = _model(path, equation, shapes)
    rng = np.random.default_rng(7)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes, strict=True)}
    ref = onnxruntime_outputs(path, feeds)["y"]
    bundle = ember.compile(path, tmp_path / "out")
    got = bundle.run(feeds)["y"]
    assert got.shape == ref.shape
    assert_close(got, ref, case)
    assert_close(cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)["y"], ref, f"{case} (ASan)")
    uses_matmul = "ember_matmul_f32(" in _c_source(tmp_path / "out")
    assert uses_matmul == on_matmul, f"{case}: matmul kernel used: {uses_matmul}"


def _c_source(out: Path) -> str:
    return "\n".join(p.read_text() for p in out.rglob("*.c"))
