"""Float TFLite models compiled by ember against LiteRT's reference kernels on the same random inputs.

Tolerance: |ember - LiteRT| <= 1e-4 * max(1, max |LiteRT|) + 1e-4 * |LiteRT| per element (float32 sums in a
different order, exp/log/tanh from ember's own approximations); integer outputs (ARG_MAX) exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert, run_sanitized

# One tiny model per operator group (built at -O1: the C compiler's time dominates the tests), and two small
# networks at the default level (its convolution algorithms and layouts).
OP_MODELS = ["conv_pool", "conv_variants", "elementwise", "reduce_misc", "shape_ops", "resize_space",
             "matmul_ops", "conv_pool_fp16", "prelu_net"]
NETWORKS = ["kws_cnn", "mobilenet_like"]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Path]]:
    """name -> (bundle, its folder), compiled on first use."""
    cache: dict[str, tuple[object, Path]] = {}

    def get(name: str) -> tuple[object, Path]:
        if name not in cache:
            out = tmp_path_factory.mktemp(name)
            cache[name] = (ember.compile(FIXTURES / f"{name}.tflite", out, name=name,
                                         opt_level=3 if name in NETWORKS else 1), out)
        return cache[name]

    return get  # type: ignore[return-value]


def compare_float(ref: np.ndarray, got: np.ndarray, what: str) -> None:
    assert got.shape == ref.shape and got.dtype == ref.dtype, \
        f"{what}: {got.dtype}{got.shape} vs {ref.dtype}{ref.shape}"
    if ref.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * scale, err_msg=what)


@pytest.mark.parametrize("name", OP_MODELS + NETWORKS)
def test_float_model_matches_litert(name: str, bundles) -> None:
    path = FIXTURES / f"{name}.tflite"
    bundle, _ = bundles(name)
    interp = litert(path)
    for seed in (0, 1):
        xs = inputs_for(interp, seed)
        ref, got = run_litert(interp, xs), run_ember(bundle, interp, xs)
        assert len(ref) == len(got)
        for i, (r, g) in enumerate(zip(ref, got, strict=True)):
            compare_float(r, g, f"{name} output {i} (seed {seed})")


def test_nhwc_model_keeps_one_transpose_and_records_layouts(bundles) -> None:
    """A MobileNet-like NHWC model: the Transposes around each NCHW operator cancel between layers (one stays
    at the image input, none where a channels-last region's stem reads the NHWC image itself), and NAME.json states
    each I/O's layout."""
    path = FIXTURES / "mobilenet_like.tflite"
    graph, _, _ = build_graph(str(path), CompileOptions())
    counts = graph.op_counts()
    assert counts.get("Transpose", 0) <= 1, counts
    # Each convolution stays one node, whichever algorithm or layout (channels-last regions: ConvNHWC) the host's
    # CPU family picked for it.
    convs = ("Conv", "ConvNarrow", "ConvShifted", "ConvWinograd", "ConvWinograd4", "ConvNHWC")
    assert sum(counts.get(op, 0) for op in convs) == 14, counts
    _, out = bundles("mobilenet_like")
    manifest = json.loads((out / "mobilenet_like.json").read_text())
    assert [e["layout"] for e in manifest["inputs"]] == ["NHWC"]
    assert manifest["inputs"][0]["shape"] == [1, 32, 32, 3]
    assert [e["layout"] for e in manifest["outputs"]] == ["ND"]


def test_signature_names_name_the_io(bundles) -> None:
    """The serving signature's names (what LiteRT's signature runner takes) name the bundle's I/O."""
    runner = litert(FIXTURES / "elementwise.tflite").get_signature_runner()
    bundle, _ = bundles("elementwise")
    assert sorted(v["name"] for v in bundle.manifest["inputs"]) == sorted(runner.get_input_details())
    assert sorted(v["name"] for v in bundle.manifest["outputs"]) == sorted(runner.get_output_details())


@pytest.mark.parametrize("name", ["resize_space", "resize_space_int8"])
def test_resize_and_depth_space_keep_no_layout_transposes(name: str) -> None:
    """RESIZE_BILINEAR runs on the NHWC tensor as it is; DEPTH_TO_SPACE and SPACE_TO_DEPTH are the one 6-D
    Transpose each of them is, on the stored integers in the int8 model (their outputs against LiteRT:
    test_float_model_matches_litert and test_tflite_int8.py)."""
    graph, _, _ = build_graph(str(FIXTURES / f"{name}.tflite"), CompileOptions())
    transposes = [n for n in graph.nodes if n.op == "Transpose"]
    assert [n.attrs["perm"] for n in transposes] == [[0, 1, 3, 2, 4, 5]] * 2, graph.op_counts()
    integer = name.endswith("int8")
    assert all((n.inputs[0].dtype.short == "int8") == integer for n in transposes)
    assert not {"DepthToSpace", "SpaceToDepth"} & set(graph.op_counts())


@pytest.mark.parametrize("name", ["conv_pool", "conv_pool_fp16", "atrous", "conv_variants"])
def test_stem_reads_the_nhwc_image(name: str, tmp_path: Path) -> None:
    """At the default -O level a stem left to ConvShifted or im2col (no channels-last region pays there) gathers its
    polyphase planes or columns from the NHWC image itself: no Transpose at the input, outputs as LiteRT's, and the C
    bundle clean under AddressSanitizer and UndefinedBehaviorSanitizer."""
    path = FIXTURES / f"{name}.tflite"
    graph, _, _ = build_graph(str(path), CompileOptions())
    views = [n for n in graph.nodes if n.op == "NhwcView" and graph.is_input(n.inputs[0])]
    assert len(views) == 1, graph.op_counts()
    assert not any(n.op == "Transpose" and graph.is_input(n.inputs[0]) for n in graph.nodes), graph.op_counts()
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "b", name=name)
    xs = inputs_for(interp, 3)
    ref = run_litert(interp, xs)
    for i, (r, g) in enumerate(zip(ref, run_ember(bundle, interp, xs), strict=True)):
        compare_float(r, g, f"{name} output {i}")
    for i, (r, g) in enumerate(zip(ref, run_sanitized(bundle, interp, xs, tmp_path / "drv"), strict=True)):
        compare_float(r, g, f"{name} output {i} (sanitized C)")
