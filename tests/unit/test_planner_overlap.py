"""Tied buffers (ember/memory/offsets.py groups; OpDef.overlap in the planner) and scratch sized by real rows:
what lets a microcontroller plan beat an arena allocator. The byte-exactness of the overlapping kernels
themselves is tests/cross/test_overlap.py's."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.memory.offsets import Span, peak_live, place


def _check(spans: list[Span], offs: list[int], total: int) -> None:
    """Every buffer inside the total; buffers of one group at their rel from one base; any two other buffers
    alive together never share a byte."""
    bases: dict[int, int] = {}
    for i, a in enumerate(spans):
        assert 0 <= offs[i] and offs[i] + a.size <= total
        if a.group >= 0:
            assert bases.setdefault(a.group, offs[i] - a.rel) == offs[i] - a.rel, (i, a)
        for j in range(i):
            b = spans[j]
            if a.group >= 0 and a.group == b.group:
                continue
            if a.start <= b.end and b.start <= a.end:
                assert offs[i] + a.size <= offs[j] or offs[j] + b.size <= offs[i], (a, b, offs[i], offs[j])


def test_a_chain_of_overlapping_outputs_takes_its_largest_link_not_pairs() -> None:
    # x -> (depthwise) y -> (pointwise, wider) z, each written over the last, beside scratch of each step.
    chain = [Span(0, 1, 1024, 0, 0), Span(1, 2, 1024, 0, 0), Span(2, 3, 2048, 0, 0)]
    scratch = [Span(1, 1, 256), Span(2, 2, 256)]
    spans = chain + scratch
    offs, total = place(spans)
    _check(spans, offs, total)
    assert peak_live(spans) == 2048 + 256 and total == 2048 + 256
    apart = [Span(s.start, s.end, s.size) for s in chain] + scratch
    assert place(apart)[1] == 1024 + 2048 + 256  # the same lifetimes without the ties


def test_a_tie_above_its_input_keeps_the_distance() -> None:
    spans = [Span(0, 1, 640, 3, 0), Span(1, 2, 512, 3, 192), Span(0, 2, 128), Span(1, 1, 64)]
    offs, total = place(spans)
    _check(spans, offs, total)
    assert offs[1] - offs[0] == 192
    assert peak_live(spans) == 704 + 128 + 64  # the group counts its extent at step 1, 192 + 512


def test_random_groups_never_collide() -> None:
    rng = random.Random(7)
    for _ in range(30):
        spans, group = [], 0
        for _ in range(rng.randint(2, 6)):  # chains: each link born where the last dies
            n, rel = rng.randint(1, 4), 0
            t0 = rng.randint(0, 10)
            for k in range(n):
                rel += rng.choice((0, 64, 128)) if k else 0
                spans.append(Span(t0 + k, t0 + k + 1, rng.randint(1, 40) * 32, group, rel))
            group += 1
        spans += [Span(s, s + rng.randint(0, 3), rng.randint(1, 40) * 32) for s in
                  (rng.randint(0, 12) for _ in range(rng.randint(0, 8)))]
        offs, total = place(spans)
        _check(spans, offs, total)


def test_one_row_matmul_scratch_is_one_packed_row(tmp_path: Path) -> None:
    """An autoencoder's fully connected layer on one row (MLPerf Tiny AD): the portable int8 matrix product
    packs that row alone, not a 64-row block (41 KB of a 640-wide layer's scratch before); still exact."""
    rng = np.random.default_rng(3)
    b = rng.integers(-90, 90, (640, 16)).astype(np.int8)
    node = helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])
    graph = helper.make_graph([node], "fc", [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 640])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 16])],
                              [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.uint8(7), "az")])
    path = tmp_path / "fc.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    bundle = ember.compile(str(path), tmp_path / "out", target="host", sanitize=True)
    assert bundle.manifest["memory"]["activations"] <= 640 + 4 * 64 + 4 * 16 + 64
    a = rng.integers(0, 256, (1, 640)).astype(np.uint8)
    want = (a.astype(np.int32) - 7) @ b.astype(np.int32)
    np.testing.assert_array_equal(bundle.run({"a": a})["y"], want)


def test_overlap_is_declared_only_for_the_checked_kernel_orders(tmp_path: Path) -> None:
    """ops/overlap.py on the layers of tests/cross/test_overlap.py's model: depthwise and pointwise layers
    overlap on a microcontroller; a 3x3 stem or head never does, nor a call divided among threads, nor a
    depthwise layer on the host (whose AVX-512 kernel reads in another order)."""
    from ember.config import CompileOptions
    from ember.driver import build_graph
    from ember.ops.overlap import qconv_overlap
    from ember.ops.parallel import PARTS_ATTR
    from tests.cross.test_overlap import OVERLAPPING, _model

    model = str(_model(tmp_path / "overlap.onnx"))
    graph = build_graph(model, CompileOptions(target="cortex-m0"), target_kind="mcu")[0]
    convs = {n.name: n for n in graph.nodes if n.op == "QConv"}
    assert {name for name, n in convs.items() if qconv_overlap(n) == 0} == set(OVERLAPPING)
    assert qconv_overlap(convs["stem"]) is None and qconv_overlap(convs["head"]) is None
    convs["pw1"].attrs[PARTS_ATTR] = 2
    assert qconv_overlap(convs["pw1"]) is None
    host = build_graph(model, CompileOptions(opt_level=1), target_kind="host")[0]
    assert {n.name for n in host.nodes if n.op == "QConv" and qconv_overlap(n) == 0} == {"pw1", "pw2"}


def test_reuse_inputs_plans_intermediates_over_read_inputs(tmp_path: Path) -> None:
    """`ember compile --reuse-inputs`: one region for inputs, outputs and intermediates (as TFLite Micro's
    arena), smaller than the two regions apart, and the same output bytes."""
    import json

    from ember.cli import main
    from tests.cross.test_overlap import _model

    model = _model(tmp_path / "overlap.onnx")
    x = {"x": np.random.default_rng(5).integers(-128, 128, (1, 3, 14, 18)).astype(np.int8)}
    apart = ember.compile(str(model), tmp_path / "apart", target="host", opt_level=1)
    assert main(["compile", str(model), "-o", str(tmp_path / "one"), "-O", "1", "--reuse-inputs"]) == 0
    memory = json.loads((tmp_path / "one" / "overlap.json").read_text())["memory"]
    assert memory["activations"] == 0
    assert memory["mutable"] < apart.manifest["memory"]["mutable"] + apart.manifest["memory"]["activations"]
    one = ember.load(tmp_path / "one")
    for _ in range(2):  # the inputs are written before every call
        assert one.run(x)["y"].tobytes() == apart.run(x)["y"].tobytes()


def test_ram_limit_with_reuse_inputs_names_the_one_region(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from ember.cli import main
    from tests.cross.test_overlap import _model

    model = _model(tmp_path / "overlap.onnx")
    assert main(["compile", str(model), "-o", str(tmp_path / "a"), "--reuse-inputs", "--ram-limit", "64"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ember: error: --ram-limit 64: the smallest RAM ember reaches"), err
    assert "one mutable region with --reuse-inputs" in err[0]
    assert not (tmp_path / "a").exists()
