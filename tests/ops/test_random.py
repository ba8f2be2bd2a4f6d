"""Seeded random operators against the ONNX reference (numpy's RandomState), bit for bit.

One model holds every operator at several seeds, shapes and element types; it is compiled once and run in
the C driver under AddressSanitizer + UBSan. float64 normals are the one exception to bit equality: the
polar method takes a log, and glibc's log misrounds about 1 in 3000 arguments where ember's is correctly
rounded, so those differ by one ulp.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from ember.errors import EmberError
from tests.cross import require_tools
from tests.ops.opmodels import make_model, reference, sanitized_run
from tests.support import crossrun

F32, F64 = TensorProto.FLOAT, TensorProto.DOUBLE
SEEDS = (0, 1, 7, 42, 12345, 2**31, 2**32 - 256)  # float attributes: float32 values


def _nodes() -> tuple[list[onnx.NodeProto], dict[str, np.dtype]]:
    nodes, outs = [], {}

    def add(op: str, inputs: list[str], name: str, dt: type, n_out: int = 1, **attrs: object) -> None:
        names = [name] + [f"{name}_mask" for _ in range(n_out - 1)]
        nodes.append(helper.make_node(op, inputs, names, name=name, **attrs))
        outs[name] = np.dtype(dt)
        if n_out > 1:
            outs[f"{name}_mask"] = np.dtype(bool)

    for i, seed in enumerate(SEEDS):
        add("RandomUniform", [], f"u32_{i}", np.float32, seed=float(seed), shape=[3, 5, 7 + i], low=-2.5, high=3.0)
        add("RandomNormal", [], f"n32_{i}", np.float32, seed=float(seed), shape=[1001 + i], mean=1.5, scale=0.3)
        add("Bernoulli", ["p32"], f"b32_{i}", np.float32, seed=float(seed))
        add("Dropout", ["x32", "ratio", "train"], f"d32_{i}", np.float32, n_out=2, seed=seed)
    add("RandomUniform", [], "u64", np.float64, seed=3.0, shape=[2, 999], low=0.2, high=0.7, dtype=F64)
    add("RandomNormal", [], "n64", np.float64, seed=9.0, shape=[4001], dtype=F64)
    add("RandomUniformLike", ["x32"], "ul", np.float32, seed=5.0, low=-1.0)
    add("RandomUniform", [], "u16", np.float16, seed=13.0, shape=[3000], low=-7.3, high=900.0,
        dtype=TensorProto.FLOAT16)
    add("RandomNormal", [], "n16", np.float16, seed=14.0, shape=[3000], mean=0.1, scale=2e-5,
        dtype=TensorProto.FLOAT16)  # small values: half's subnormals
    add("RandomNormalLike", ["x32"], "nl", np.float64, seed=6.0, dtype=F64, mean=-3.0, scale=10.0)
    add("Bernoulli", ["p64"], "b64", np.int64, seed=8.0, dtype=TensorProto.INT64)
    add("Bernoulli", ["p32"], "bbool", bool, seed=10.0, dtype=TensorProto.BOOL)
    add("Bernoulli", ["p16"], "b16", np.float16, seed=11.0)
    add("Dropout", ["x64", "ratio", "train"], "d64", np.float64, seed=12)
    return nodes, outs


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    p = rng.random(500)
    # The branches of numpy's inversion, and probabilities whose 1 - p rounds in double (float32 ones too).
    p[:16] = [0.0, 1.0, 0.5, 0.25, 0.75, np.nextafter(0.5, 1), 1e-30, 1e-45, 2**-54, 3 * 2**-54, 2**-53,
              5 * 2**-55, 2**-31 + 2**-54, 1e-12, 0.5 - 2**-25, np.nextafter(0.5, 0)]
    return {"x32": rng.standard_normal((4, 6, 5)).astype(np.float32), "x64": rng.standard_normal(300),
            "p32": p.astype(np.float32), "p64": p, "p16": p.astype(np.float16)}


def _model() -> onnx.ModelProto:
    nodes, outs = _nodes()
    model = make_model(nodes, _feeds(), outs, opset=22)
    model.graph.initializer.extend([onnx.numpy_helper.from_array(np.array(0.3, np.float32), "ratio"),
                                    onnx.numpy_helper.from_array(np.array(True), "train")])
    return model


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    model, feeds = _model(), _feeds()
    got = sanitized_run(model, feeds, tmp_path_factory.mktemp("random"))
    return got, reference(model, feeds)


def test_bit_exact_with_the_reference(results: tuple[dict, dict]) -> None:
    got, ref = results
    for name, want in ref.items():
        if name == "n64":
            continue
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        assert np.array_equal(got[name].view(np.uint8), want.view(np.uint8)), name


def test_float64_normals_within_one_ulp(results: tuple[dict, dict]) -> None:
    got, ref = results
    a, b = got["n64"], ref["n64"]
    ulps = np.abs(a.view(np.int64) - b.view(np.int64))
    assert ulps.max() <= 1
    assert (ulps == 0).mean() > 0.99  # only glibc's misrounded logs differ


@pytest.mark.parametrize("target", ["aarch64", "riscv64"])
def test_cross_targets_draw_the_same_bits(results: tuple[dict, dict], tmp_path: Path, target: str) -> None:
    """clang for CPUs with fused multiply-add (under -ffp-contract=fast, which ignores contract pragmas) must
    still round every step numpy rounds, and keep the log's error-free products exact."""
    require_tools(target, crossrun.missing_tools(target))
    onnx.save(_model(), tmp_path / "m.onnx")
    ember.compile(tmp_path / "m.onnx", tmp_path / "out", target=target)
    got = crossrun.run_linux(tmp_path / "out", target, _feeds(), tmp_path / "run")
    for name, want in results[0].items():
        assert np.array_equal(got[name].view(np.uint8), want.view(np.uint8)), name


def test_float32_dropout_and_bernoulli_build_for_a_single_precision_fpu(tmp_path: Path) -> None:
    """Dropout's mask and float32 Bernoulli compare the 53-bit draw with integer thresholds: no double
    arithmetic, so the object check (no double-precision soft float on Cortex-M4) passes; a RandomNormal
    still needs double."""
    if importlib.util.find_spec("ziglang") is None:
        require_tools("cortex-m4", ["zig (pip install ziglang)"])
    x = {"x": np.zeros((4, 5), np.float32)}
    model = make_model([helper.make_node("Dropout", ["x", "r", "t"], ["y", "z"], seed=3),
                        helper.make_node("Bernoulli", ["x"], ["b"], seed=4.0)], x,
                       {"y": np.float32, "z": bool, "b": np.float32}, opset=22)
    model.graph.initializer.extend([onnx.numpy_helper.from_array(np.array(0.3, np.float32), "r"),
                                    onnx.numpy_helper.from_array(np.array(True), "t")])
    onnx.save(model, tmp_path / "d.onnx")
    ember.compile(tmp_path / "d.onnx", tmp_path / "d", target="cortex-m4")
    onnx.save(make_model([helper.make_node("RandomNormal", [], ["y"], seed=1.0, shape=[4])], {},
                         {"y": np.float32}, opset=22), tmp_path / "n.onnx")
    with pytest.raises(EmberError, match="double-precision software float"):
        ember.compile(tmp_path / "n.onnx", tmp_path / "n", target="cortex-m4")


def test_draws_are_not_degenerate(results: tuple[dict, dict]) -> None:
    """Guards the comparison itself: distinct seeds give distinct streams, masks drop about `ratio`."""
    got, _ = results
    assert not np.array_equal(got["u32_0"][..., :7], got["u32_1"][..., :7])
    assert 0.2 < 1.0 - got["d32_0_mask"].mean() < 0.4
    assert abs(got["n32_0"].mean() - 1.5) < 0.05


def _compile(tmp_path: Path, nodes: list[onnx.NodeProto], outs: dict[str, np.dtype]) -> ember.Bundle:
    onnx.save(make_model(nodes, {}, outs, opset=22), tmp_path / "m.onnx")
    return ember.compile(tmp_path / "m.onnx", tmp_path / "out", opt_level=1)


def test_without_a_seed_each_call_repeats_the_compile_time_draw(tmp_path: Path) -> None:
    """Two unseeded nodes of one form stay two draws; one that only constants follow is not folded."""
    nodes = [helper.make_node("RandomNormal", [], [y], shape=[64]) for y in ("a", "b", "c0")]
    nodes.append(helper.make_node("Add", ["c0", "one"], ["c"]))
    model = make_model(nodes, {}, {"a": np.float32, "b": np.float32, "c": np.float32}, opset=22)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.ones(64, np.float32), "one"))
    onnx.save(model, tmp_path / "m.onnx")
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out", opt_level=1)
    first, second = bundle.run({}), bundle.run({})
    for name in ("a", "b", "c"):
        assert np.array_equal(first[name], second[name])
    assert not np.array_equal(first["a"], first["b"])  # each node draws a seed of its own
    assert not np.array_equal(first["a"], first["c"] - 1.0)
    assert (bundle.path / "m.c").read_text().count("was drawn at compile time") == 3
    seeds = bundle.manifest["drawn_seeds"]
    assert len(seeds) == 3 and all(0 <= s < 2**32 for s in seeds.values())


@pytest.mark.parametrize(("attrs", "message"), [
    ({"shape": [2], "seed": -1.0}, r"node 'bad' \(RandomUniform\): seed -1.0 is outside \[0, 2\^32\)"),
    ({"shape": [2, -3], "seed": 1.0}, r"node 'bad' \(RandomUniform\): shape \[2, -3\] has a negative dim"),
    ({"shape": [2], "dtype": TensorProto.INT32}, r"'RandomUniform' at node 'bad': int32 values"),
])
def test_malformed_generator_is_one_line_error(tmp_path: Path, attrs: dict, message: str) -> None:
    nodes = [helper.make_node("RandomUniform", [], ["y"], name="bad", **attrs)]
    with pytest.raises(EmberError, match=message) as e:
        _compile(tmp_path, nodes, {"y": np.float32})
    assert "\n" not in str(e.value)


def test_nan_seed_means_none_as_in_the_reference(tmp_path: Path) -> None:
    nodes = [helper.make_node("RandomUniform", [], ["y"], shape=[8], seed=float("nan"))]
    assert len(_compile(tmp_path, nodes, {"y": np.float32}).manifest["drawn_seeds"]) == 1


def _multinomial(x: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """ember's documented draw (ONNX has no reference): inverse CDF of the softmax weights."""
    rs, out = np.random.RandomState(seed), []
    for row in x.astype(np.float64):
        c = np.cumsum(np.exp(row - row.max()))
        out.append([min(np.searchsorted(c, rs.random_sample() * c[-1], side="right"), len(c) - 1)
                    for _ in range(samples)])
    return np.array(out)


def test_multinomial_draws_numpy_inverse_cdf(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    feeds = {"x32": (rng.standard_normal((4, 10)) * 3).astype(np.float32), "x64": rng.standard_normal((3, 1000))}
    feeds["x32"][0, 3] = -np.inf  # a class of weight 0 is never drawn
    nodes = [helper.make_node("Multinomial", ["x32"], ["m32"], seed=3.0, sample_size=200),
             helper.make_node("Multinomial", ["x64"], ["m64"], seed=4.0, sample_size=7, dtype=TensorProto.INT64)]
    got = sanitized_run(make_model(nodes, feeds, {"m32": np.int32, "m64": np.int64}, opset=22), feeds, tmp_path)
    assert got["m32"].dtype == np.int32 and got["m64"].dtype == np.int64
    np.testing.assert_array_equal(got["m32"], _multinomial(feeds["x32"], 200, 3))
    np.testing.assert_array_equal(got["m64"], _multinomial(feeds["x64"], 7, 4))
    assert 3 not in got["m32"][0]
