"""The second batch of TFLite builtins (scans, comparisons, selections, normalizations, space/batch moves,
sparse weights, LSTM, SVDF, control flow over subgraphs) and MediaPipe's Convolution2DTransposeBias, each
compiled by ember and run against LiteRT's reference kernels on the same random inputs.

Float outputs within 1e-4 relative to the largest reference value (as test_tflite_float.py), integer and
bool outputs and int8 models exactly. LSTM and SVDF keep state in LiteRT between invocations: a bundle is
stateless, so LiteRT's variables are reset before each run (its first invocation is what ember computes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from ember.errors import UnsupportedOperatorError
from tests.frontends.test_tflite_float import compare_float
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert

FLOAT = ["math_more", "space_batch", "sparse_fc", "legacy_ops", "svdf", "lstm_batch_major",
         "lstm_time_major_cifg_peephole", "control_flow", "atrous"]


def _compile(name: str, out: Path):
    return ember.compile(FIXTURES / f"{name}.tflite", out, name=name, opt_level=1)


def _runs(interp, seeds=(0, 1)):
    for seed in seeds:
        xs = inputs_for(interp, seed)
        yield xs
        yield [-x if x.dtype.kind == "f" else x for x in xs]  # the other side of IF/WHILE conditions, signs


@pytest.mark.parametrize("name", FLOAT)
def test_float_ops_match_litert(name: str, tmp_path: Path) -> None:
    bundle = _compile(name, tmp_path)
    interp = litert(FIXTURES / f"{name}.tflite")
    for xs in _runs(interp):
        interp.reset_all_variables()
        ref, got = run_litert(interp, xs), run_ember(bundle, interp, xs)
        assert len(ref) == len(got)
        for i, (r, g) in enumerate(zip(ref, got, strict=True)):
            compare_float(r, g, f"{name} output {i}")


def test_int8_ops_bit_exact(tmp_path: Path) -> None:
    """ELU, LOG_SOFTMAX, L2_NORMALIZATION, REDUCE_MIN, SELECT, TILE, BROADCAST_TO, GATHER_ND on int8."""
    bundle = _compile("math_more_int8", tmp_path)
    interp = litert(FIXTURES / "math_more_int8.tflite")
    for xs in _runs(interp, (0, 1, 2)):
        for i, (r, g) in enumerate(zip(run_litert(interp, xs), run_ember(bundle, interp, xs), strict=True)):
            assert g.dtype == r.dtype == np.int8 and g.shape == r.shape
            np.testing.assert_array_equal(g, r, err_msg=f"output {i}")


def test_if_and_while_stay_control_flow(tmp_path: Path) -> None:
    """IF and WHILE become ember's If and Loop (the loop exit is computed at run time), and the test inputs
    take both branches."""
    from ember.config import CompileOptions
    from ember.driver import build_graph

    graph, _, _ = build_graph(str(FIXTURES / "control_flow.tflite"), CompileOptions())
    counts = graph.op_counts()
    assert counts.get("If") == 1 and counts.get("Loop") == 1, counts
    interp = litert(FIXTURES / "control_flow.tflite")
    taken = {bool(np.sum(xs[0]) > 0) for xs in _runs(interp)}
    assert taken == {True, False}


def test_space_to_batch_around_conv_folds_into_dilation() -> None:
    """SPACE_TO_BATCH_ND -> VALID conv -> BATCH_TO_SPACE_ND compiles as one dilated convolution (no
    space/batch Reshapes), the crops as one Slice; test_float_ops_match_litert checks its outputs."""
    from ember.config import CompileOptions
    from ember.driver import build_graph

    graph, _, _ = build_graph(str(FIXTURES / "atrous.tflite"), CompileOptions())
    convs = [n for n in graph.walk() if n.op.startswith("Conv")]
    assert sorted(n.attrs["dilations"] for n in convs) == [[2, 2], [3, 3]]
    assert "Reshape" not in graph.op_counts(), graph.op_counts()


def test_transpose_conv_bias_matches_builtin(tmp_path: Path) -> None:
    """MediaPipe's custom op (LiteRT has no kernel for it) against the same layer as a builtin TRANSPOSE_CONV
    with a bias input, which LiteRT runs."""
    bundle = _compile("transpose_conv_bias", tmp_path)
    interp = litert(FIXTURES / "transpose_conv_bias_ref.tflite")
    for xs in _runs(interp):
        compare_float(run_litert(interp, xs)[0], run_ember(bundle, interp, xs)[0], "Convolution2DTransposeBias")


def test_sparse_weights_are_densified() -> None:
    """The fixture's weights really are stored sparse (a DENSIFY reads them), and ember's dense copy has the
    pruned zeros where the Keras model had them."""
    from ember.config import CompileOptions
    from ember.driver import load_graph

    interp = litert(FIXTURES / "sparse_fc.tflite")
    assert "DENSIFY" in {op["op_name"] for op in interp._get_ops_details()}
    graph = load_graph(str(FIXTURES / "sparse_fc.tflite"), CompileOptions())[0]
    weights = [v.const for n in graph.nodes for v in n.inputs if v is not None and v.is_const and v.const.ndim == 2]
    assert weights and all(0.6 < float(np.mean(w == 0)) < 0.95 for w in weights), [np.mean(w == 0) for w in weights]


def test_other_custom_op_is_named(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedOperatorError, match=r"^unsupported operator 'Igamma' \(domain 'tflite custom'\)"
                                                       r"[^\n]*$"):
        _compile("refused_ops", tmp_path)


def test_subgraph_index_out_of_range(tmp_path: Path) -> None:
    """A WHILE whose body names a subgraph the model does not have: one line naming it."""
    import struct

    import tflite

    from ember.errors import ModelFormatError

    data = bytearray((FIXTURES / "control_flow.tflite").read_bytes())
    model = tflite.Model.GetRootAs(bytes(data), 0)
    sg = model.Subgraphs(0)
    while_op = next(sg.Operators(i) for i in range(sg.OperatorsLength())
                    if model.OperatorCodes(sg.Operators(i).OpcodeIndex()).BuiltinCode() == tflite.BuiltinOperator.WHILE)
    table = while_op.BuiltinOptions()
    opts = tflite.WhileOptions()
    opts.Init(table.Bytes, table.Pos)
    pos = opts._tab.Pos + opts._tab.Offset(6)  # body_subgraph_index
    data[pos:pos + 4] = struct.pack("<i", 99)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match=r"WHILE_\d+ body names subgraph 99, but the model has 5$"):
        ember.compile(bad, tmp_path / "out")
