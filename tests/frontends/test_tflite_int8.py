"""Full-integer TFLite models (TFLiteConverter with a representative dataset, int8 inputs and outputs): ember
maps their quantized tensors onto its QDQ form, which passes/fold_qdq.py turns into integer kernels.

Outputs are compared with LiteRT's reference kernels within one quantization step per element: ember
requantizes with its own fixed-point rounding, not yet TFLite's (bit-exactness is a later step)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert

INT8_MODELS = ["conv_pool_int8", "kws_cnn_int8", "mobilenet_like_int8"]


@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_model_within_one_step_of_litert(name: str, tmp_path: Path) -> None:
    path = FIXTURES / f"{name}.tflite"
    bundle = ember.compile(path, tmp_path, name=name)
    interp = litert(path)
    assert all(e["dtype"] == "int8" for e in bundle.manifest["inputs"] + bundle.manifest["outputs"])
    for seed in (0, 1, 2):
        xs = inputs_for(interp, seed)
        ref, got = run_litert(interp, xs), run_ember(bundle, interp, xs)
        for i, (r, g) in enumerate(zip(ref, got, strict=True)):
            assert g.dtype == r.dtype == np.int8 and g.shape == r.shape
            diff = np.abs(g.astype(np.int32) - r.astype(np.int32))
            assert diff.max() <= 1, f"{name} output {i} (seed {seed}): {int(diff.max())} steps apart"


@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_model_runs_integer_kernels(name: str) -> None:
    """Every convolution and fully-connected layer runs on ember's integer kernels, none in float."""
    graph, _, _ = build_graph(str(FIXTURES / f"{name}.tflite"), CompileOptions())
    counts = graph.op_counts()
    assert counts.get("QConv", 0) + counts.get("QConvShifted", 0) >= 3, counts
    assert not {"Conv", "ConvNarrow", "MatMul"} & set(counts), counts
    assert counts.get("Transpose", 0) <= 2, counts
