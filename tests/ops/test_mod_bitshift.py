"""Mod, BitShift and the bitwise ops where the ONNX node tests leave gaps: every integer type, the cases C
leaves undefined (x % 0, INT_MIN % -1, shifts by a negative amount or by the width or more, left shifts
into the sign bit), float Mod's signed zeros and infinities. Each model's C runs under ASan+UBSan (no
recovery) and must match the ONNX reference implementation bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import ember
from ember.errors import UnsupportedOperatorError
from tests.ops.opmodels import make_model, reference, sanitized_run

INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
RNG = np.random.default_rng(7)


def _ints(dt: type, n: int) -> np.ndarray:
    """Random values of the whole range plus the extremes, 0, 1 and -1."""
    info = np.iinfo(dt)
    edge = [info.min, info.max, 0, 1, info.max - 1, info.min + 1] + ([-1, -2] if info.min < 0 else [2, 3])
    rand = RNG.integers(info.min, info.max, max(n - len(edge), 0), dtype=dt, endpoint=True)
    return np.concatenate([np.array(edge, dt), rand])[:n]


def test_integer_mod_every_type_and_the_undefined_cases(tmp_path: Path) -> None:
    nodes, feeds, outs = [], {}, {}
    for dt in INTS:
        s = np.dtype(dt).name
        a = np.concatenate([_ints(dt, 200), _ints(dt, 56)])
        small = np.array([0, 1, 2, 3, 7, 100], dt)
        if np.iinfo(dt).min < 0:
            small = np.concatenate([small, np.array([-1, -2, -3, -7, -100], dt)])
        # Small divisors (0 and -1 included) against every kind of dividend, then random pairs.
        b = np.concatenate([np.resize(small, 200), _ints(dt, 56)])
        a[:6], b[:6] = np.iinfo(dt).min, np.resize(np.array([-1 if np.iinfo(dt).min < 0 else 1, 0], dt), 6)
        feeds[f"a_{s}"], feeds[f"b_{s}"] = a, b
        for fmod in (0, 1):
            nodes.append(helper.make_node("Mod", [f"a_{s}", f"b_{s}"], [f"y{fmod}_{s}"], fmod=fmod))
            outs[f"y{fmod}_{s}"] = np.dtype(dt)
    model = make_model(nodes, feeds, outs)
    got, ref = sanitized_run(model, feeds, tmp_path), reference(model, feeds)
    for name in outs:
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
    # The sign rules, spelled out: floored takes the divisor's sign, fmod the dividend's.
    a32, b32 = feeds["a_int32"], feeds["b_int32"]
    nonzero = (got["y0_int32"] != 0) & (b32 != 0)
    assert np.all(np.sign(got["y0_int32"][nonzero]) == np.sign(b32[nonzero]))
    nonzero = (got["y1_int32"] != 0) & (b32 != 0)
    assert np.all(np.sign(got["y1_int32"][nonzero]) == np.sign(a32[nonzero]))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
def test_float_mod_signed_zeros_infinities_and_broadcast(dt: type, tmp_path: Path) -> None:
    special = np.array([0.0, -0.0, 5.0, -5.0, 5.5, -5.5, np.inf, -np.inf, np.nan, 1e-3, 6.0], dt)
    a = np.concatenate([np.repeat(special, len(special)), (RNG.standard_normal(300) * 50).astype(dt)])
    b = np.concatenate([np.tile(special, len(special)), (RNG.standard_normal(300) * 5).astype(dt)])
    feeds = {"a": a, "b": b, "c": np.array([3.0, -3.0], dt).reshape(2, 1)}
    nodes = [helper.make_node("Mod", ["a", "b"], ["y0"], fmod=0), helper.make_node("Mod", ["a", "b"], ["y1"], fmod=1),
             helper.make_node("Mod", ["a", "c"], ["yb"], fmod=0)]
    model = make_model(nodes, feeds, {"y0": np.dtype(dt), "y1": np.dtype(dt), "yb": np.dtype(dt)})
    got, ref = sanitized_run(model, feeds, tmp_path), reference(model, feeds)
    for name in ("y0", "y1", "yb"):
        g, r = got[name], ref[name]
        assert g.shape == r.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(r), err_msg=name)
        ok = ~np.isnan(r)
        # Exact, signed zeros included (numpy's floored mod gives zeros the divisor's sign).
        np.testing.assert_array_equal(g[ok], r[ok], err_msg=name)
        np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(r[ok]), err_msg=name)


def test_bitshift_every_type_over_the_width_and_negative_amounts(tmp_path: Path) -> None:
    nodes, feeds, outs = [], {}, {}
    for dt in INTS:
        s, bits = np.dtype(dt).name, np.iinfo(dt).bits
        lo = -3 if np.iinfo(dt).min < 0 else 0
        amounts = np.arange(lo, bits + 4).astype(dt)  # negative, every amount in range, the width and past it
        x = _ints(dt, 64)
        feeds[f"x_{s}"] = np.repeat(x, len(amounts))
        feeds[f"n_{s}"] = np.tile(amounts, len(x))
        for d in ("LEFT", "RIGHT"):
            nodes.append(helper.make_node("BitShift", [f"x_{s}", f"n_{s}"], [f"{d}_{s}"], direction=d))
            outs[f"{d}_{s}"] = np.dtype(dt)
    model = make_model(nodes, feeds, outs)
    got, ref = sanitized_run(model, feeds, tmp_path), reference(model, feeds)
    for name in outs:
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
    # Spelled out for int8: a negative value shifted right by the width or more is -1, left by it is 0.
    x, n = feeds["x_int8"], feeds["n_int8"]
    assert np.all(got["RIGHT_int8"][(n >= 8) & (x < 0)] == -1)
    assert np.all(got["LEFT_int8"][(n >= 8) | (n < 0)] == 0)


def test_bitwise_ops_and_xor_broadcast(tmp_path: Path) -> None:
    nodes, feeds, outs = [], {}, {}
    for dt in INTS:
        s = np.dtype(dt).name
        feeds[f"a_{s}"], feeds[f"b_{s}"] = _ints(dt, 24).reshape(2, 3, 4), _ints(dt, 4)
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            nodes.append(helper.make_node(op, [f"a_{s}", f"b_{s}"], [f"{op}_{s}"]))
            outs[f"{op}_{s}"] = np.dtype(dt)
        nodes.append(helper.make_node("BitwiseNot", [f"a_{s}"], [f"not_{s}"]))
        outs[f"not_{s}"] = np.dtype(dt)
    feeds["p"], feeds["q"] = RNG.random((3, 4)) < 0.5, RNG.random(4) < 0.5
    nodes.append(helper.make_node("Xor", ["p", "q"], ["xor"]))
    outs["xor"] = np.dtype(bool)
    model = make_model(nodes, feeds, outs)
    got, ref = sanitized_run(model, feeds, tmp_path), reference(model, feeds)
    for name in outs:
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)


def test_constant_inputs_fold_like_the_c(tmp_path: Path) -> None:
    """A node with constant inputs is folded at compile time by its numpy `evaluate`: same results."""
    a = np.array([-128, -7, 7, 127, 0], np.int8)
    b = np.array([-1, 3, -3, 0, 5], np.int8)
    n = np.array([-1, 1, 7, 8, 9], np.int8)
    inits = [onnx.numpy_helper.from_array(a, "a"), onnx.numpy_helper.from_array(b, "b"),
             onnx.numpy_helper.from_array(n, "n")]
    nodes = [helper.make_node("Mod", ["a", "b"], ["m"]), helper.make_node("BitShift", ["a", "n"], ["r"],
                                                                         direction="RIGHT"),
             helper.make_node("BitShift", ["a", "n"], ["l"], direction="LEFT"),
             helper.make_node("Add", ["m", "z"], ["ym"]), helper.make_node("Add", ["r", "z"], ["yr"]),
             helper.make_node("Add", ["l", "z"], ["yl"])]
    feeds = {"z": np.zeros(5, np.int8)}
    model = make_model(nodes, feeds, {"ym": np.dtype(np.int8), "yr": np.dtype(np.int8), "yl": np.dtype(np.int8)})
    model.graph.initializer.extend(inits)
    onnx.save(model, tmp_path / "m.onnx")
    got = ember.compile(tmp_path / "m.onnx", tmp_path / "out").run(feeds)
    ref = reference(model, feeds)
    for name in ("ym", "yr", "yl"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)


@pytest.mark.parametrize(("op", "attrs", "dtype", "detail"), [
    ("BitShift", {"direction": "UP"}, np.uint8, "direction 'UP'"),
    ("BitShift", {"direction": "LEFT"}, np.float32, "float32 input"),
    ("Mod", {"fmod": 2}, np.int32, "fmod=2"),
    ("BitwiseAnd", {}, np.float32, "float32 input"),
])
def test_bad_attributes_and_types_are_one_line_errors(op: str, attrs: dict, dtype: type, detail: str,
                                                      tmp_path: Path) -> None:
    feeds = {"a": np.ones(3, dtype), "b": np.ones(3, dtype)}
    model = make_model([helper.make_node(op, ["a", "b"], ["y"], name="the_node", **attrs)], feeds,
                   {"y": np.dtype(dtype)})
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOperatorError, match=f"the_node.*{detail}"):
        ember.compile(tmp_path / "m.onnx", tmp_path / "out")
