"""bfloat16, float8, float4, int4/int2 (ember/ir/dtypes.py storage types): Cast's C conversions bit for bit
against ONNX's reference evaluator on dense sets of values (every encoding, rounding ties and their
neighbours, specials, random bits), QuantizeLinear/DequantizeLinear per axis and blocked, and ops widened to
float32 by passes/widen_dtypes.py."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember

RNG = np.random.default_rng(0)
FLOATS = {
    TensorProto.BFLOAT16: ml_dtypes.bfloat16, TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz, TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz, TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
}
FLOAT8 = (TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ)
INTS = {TensorProto.INT4: ml_dtypes.int4, TensorProto.UINT4: ml_dtypes.uint4, TensorProto.INT2: ml_dtypes.int2,
        TensorProto.UINT2: ml_dtypes.uint2}


def _run(tmp_path: Path, nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], outputs: list[str],
         inits: dict[str, np.ndarray] | None = None, opset: int = 25) -> tuple[dict[str, np.ndarray], list]:
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    outs = [onnx.ValueInfoProto(name=o) for o in outputs]
    init = [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()]
    model = helper.make_model(helper.make_graph(nodes, "g", ins, outs, init),
                              opset_imports=[helper.make_opsetid("", opset)], ir_version=11)
    tmp_path = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    tmp_path.mkdir()
    onnx.save(model, tmp_path / "m.onnx")
    ref = ReferenceEvaluator(model).run(None, feeds)
    got = ember.compile(tmp_path / "m.onnx", tmp_path / "out", opt_level=1).run(feeds)
    return got, ref


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _same(name: str, got: np.ndarray, ref: np.ndarray) -> None:
    """Equal bits, except that any NaN matches any NaN."""
    ref = np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape, f"{name}: {got.dtype}{got.shape} vs {ref.dtype}"
    if got.dtype.kind in "fV" and got.dtype not in (np.dtype(t) for t in INTS.values()):
        nan_g, nan_r = np.isnan(got.astype(np.float64)), np.isnan(ref.astype(np.float64))
        assert (nan_g == nan_r).all(), f"{name}: NaN at {np.flatnonzero(nan_g != nan_r)[:5]}"
        got, ref = got[~nan_g], ref[~nan_r]
    bad = np.flatnonzero(_bits(got) != _bits(ref))
    assert bad.size == 0, f"{name}: {bad.size} differ, e.g. {_bits(got)[bad[:4]]} != {_bits(ref)[bad[:4]]}"


def _float32_probe() -> np.ndarray:
    """Every value of every format, the midpoints between neighbours (ties) and the floats just around them,
    specials, and random bit patterns."""
    vals = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e38, -3e38, 1e-45, -1e-45, 1e-40], np.float32)]
    for t in FLOATS.values():
        enc = np.arange(2 ** (8 * np.dtype(t).itemsize), dtype=np.uint16 if np.dtype(t).itemsize == 2 else np.uint8)
        v = np.sort(np.unique(enc.view(t).astype(np.float32)))
        v = v[np.isfinite(v)]
        mids = ((v[1:].astype(np.float64) + v[:-1]) / 2).astype(np.float32)
        for w in (v, mids):
            vals += [w, np.nextafter(w, np.float32(np.inf)), np.nextafter(w, np.float32(-np.inf))]
    vals.append(RNG.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32))
    vals.append((RNG.standard_normal(5000) * 100).astype(np.float32))
    return np.concatenate(vals)


def test_cast_float32_to_each_format_bit_exact(tmp_path: Path) -> None:
    x = _float32_probe()
    nodes, outs = [], []
    for to in FLOATS:
        for sat in (1, 0) if to in FLOAT8 else (1,):
            outs.append(f"y{to}_{sat}")
            nodes.append(helper.make_node("Cast", ["x"], [outs[-1]], to=to, saturate=sat))
    for mode in ("up", "down", "nearest"):
        for sat in (1, 0):
            outs.append(f"e8m0_{mode}_{sat}")
            nodes.append(helper.make_node("Cast", ["x"], [outs[-1]], to=TensorProto.FLOAT8E8M0, saturate=sat,
                                          round_mode=mode))
    for to in INTS:
        outs.append(f"i{to}")
        nodes.append(helper.make_node("Cast", ["xi"], [outs[-1]], to=to))
    xi = np.trunc(np.clip(x, -300, 300)).astype(np.float32)
    xi[~np.isfinite(xi)] = 0
    got, ref = _run(tmp_path, nodes, {"x": x, "xi": xi}, outs)
    for name, r in zip(outs, ref, strict=True):
        _same(name, got[name], r)


def test_cast_each_format_to_float32_float16_float64_every_encoding(tmp_path: Path) -> None:
    feeds, nodes, outs = {}, [], []
    for to, t in {**FLOATS, **INTS, TensorProto.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu}.items():
        n = 2 ** (8 * np.dtype(t).itemsize)
        enc = np.arange(n, dtype=np.uint16 if n > 256 else np.uint8)
        if to in INTS or to == TensorProto.FLOAT4E2M1:
            enc = enc[enc < (4 if to in (TensorProto.INT2, TensorProto.UINT2) else 16)]
        feeds[f"x{to}"] = enc.view(t)
        for dst in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT8,
                    TensorProto.BFLOAT16, TensorProto.FLOAT8E5M2, TensorProto.INT4):
            if dst == TensorProto.INT4 and to in (TensorProto.UINT2, TensorProto.FLOAT8E8M0, TensorProto.UINT4):
                continue  # ml_dtypes, and so the reference, refuses these casts
            outs.append(f"y{to}_{dst}")
            nodes.append(helper.make_node("Cast", [f"x{to}"], [outs[-1]], to=dst))
    got, ref = _run(tmp_path, nodes, feeds, outs)
    for name, r in zip(outs, ref, strict=True):
        if np.asarray(r).dtype in (np.int8, ml_dtypes.int4):  # float -> int of NaN/inf/huge: undefined in numpy
            keep = np.isfinite(feeds[f"x{name[1:].split('_')[0]}"].astype(np.float64))
            keep &= np.abs(feeds[f"x{name[1:].split('_')[0]}"].astype(np.float64)) < 127
            _same(name, got[name][keep], np.asarray(r)[keep])
        else:
            _same(name, got[name], r)


def test_cast_from_float64_float16_and_int64_rounds_once(tmp_path: Path) -> None:
    x32 = _float32_probe()
    x32 = x32[np.isfinite(x32) | np.isnan(x32)]
    # float64 just off a float32 tie: the reference (ml_dtypes) rounds through float32, landing on the tie.
    x64 = np.concatenate([x32.astype(np.float64), x32.astype(np.float64) * (1 + 2.0**-30),
                          x32.astype(np.float64) * (1 - 2.0**-30)])
    x16 = x32.astype(np.float16)
    i64 = np.concatenate([RNG.integers(-(2**62), 2**62, 3000), np.arange(-70000, 70000, 7),
                          np.array([2**24 + 1, 2**31 + 2**23 + 1, -(2**63), 2**63 - 1])]).astype(np.int64)
    nodes, outs = [], []
    for src in ("x64", "x16", "i64"):
        for to in FLOATS:
            outs.append(f"{src}_{to}")
            nodes.append(helper.make_node("Cast", [src], [outs[-1]], to=to))
    got, ref = _run(tmp_path, nodes, {"x64": x64, "x16": x16, "i64": i64}, outs)
    for name, r in zip(outs, ref, strict=True):
        _same(name, got[name], r)


def test_quantize_dequantize_low_bit_per_axis_and_blocked(tmp_path: Path) -> None:
    x = (RNG.standard_normal((4, 6)) * 20).astype(np.float32)
    xs = x.copy()  # numpy's int conversion of inf is undefined: specials for the float formats only
    xs[0, :3] = [np.inf, -np.inf, 1e30]
    scale_axis = np.array([0.5, 1.5, 3.0, 7.0], np.float32)
    scale_block = (RNG.random((4, 3)) * 4 + 0.25).astype(np.float32)
    nodes, outs, inits = [], [], {"sa": scale_axis, "sb": scale_block}
    for to in (TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2, TensorProto.UINT2, *FLOAT8,
               TensorProto.FLOAT4E2M1):
        t = {**INTS, **FLOATS}[to]
        zp_axis = np.array([1, 0, 1, 0], np.float32).astype(t) if to in INTS else np.zeros(4, t)
        inits[f"za{to}"] = zp_axis
        inits[f"zb{to}"] = np.ones((4, 3), np.float32).astype(t) if to in INTS else np.zeros((4, 3), t)
        if to == TensorProto.FLOAT4E2M1:
            inits[f"za{to}"] = np.array([0.5, -1, 0, 2], np.float32).astype(t)
        sats = (1, 0) if to in FLOAT8 else (1,)
        for sat in sats:
            outs += [f"qa{to}_{sat}", f"qb{to}_{sat}"]
            src = "x" if to in INTS else "xs"
            nodes.append(helper.make_node("QuantizeLinear", [src, "sa", f"za{to}"], [outs[-2]], axis=0, saturate=sat))
            nodes.append(helper.make_node("QuantizeLinear", [src, "sb", f"zb{to}"], [outs[-1]], axis=1, block_size=2,
                                          saturate=sat))
        outs += [f"da{to}", f"db{to}"]
        nodes.append(helper.make_node("DequantizeLinear", [f"qa{to}_1", "sa", f"za{to}"], [outs[-2]], axis=0))
        nodes.append(helper.make_node("DequantizeLinear", [f"qb{to}_1", "sb", f"zb{to}"], [outs[-1]], axis=1,
                                      block_size=2))
    got, ref = _run(tmp_path, nodes, {"x": x, "xs": xs}, outs, inits)
    for name, r in zip(outs, ref, strict=True):
        _same(name, got[name], r)


def test_ops_without_a_kernel_compute_in_float32(tmp_path: Path) -> None:
    a = (RNG.standard_normal((3, 5)) * 4).astype(ml_dtypes.bfloat16)
    b = (RNG.standard_normal((5,)) * 4).astype(ml_dtypes.bfloat16)
    w = (RNG.integers(-8, 8, (5, 4))).astype(ml_dtypes.int4)
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("Transpose", ["s"], ["t"], perm=[1, 0]),
             helper.make_node("Relu", ["t"], ["y"]),
             helper.make_node("Cast", ["a"], ["a32"], to=TensorProto.FLOAT),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"]),
             helper.make_node("MatMul", ["a32", "wf"], ["m"]),
             helper.make_node("Max", ["a", "b"], ["mx"])]
    got, ref = _run(tmp_path, nodes, {"a": a, "b": b}, ["y", "m", "mx"], {"w": w, "ws": np.float32(0.5)})
    for name, r in zip(["y", "mx"], [ref[0], ref[2]], strict=True):
        _same(name, got[name], r)
    np.testing.assert_allclose(got["m"], ref[1], rtol=1e-6)


def test_widening_pass_rewires_nodes_a_pass_made() -> None:
    from ember.ir.dtypes import DType, TensorType
    from ember.ir.graph import Graph, Node
    from ember.passes.widen_dtypes import widen_storage_types

    g = Graph("g")
    a = g.value("a", TensorType(DType.BFLOAT16, (4,)))
    k = g.constant("k", np.full(4, 1.5, ml_dtypes.bfloat16))
    s, t = g.value("s", TensorType(DType.BFLOAT16, (4,))), g.value("t", TensorType(DType.BFLOAT16, (2, 2)))
    g.inputs, g.outputs = [a], [t]
    g.add_node(Node("Add", "add", [a, k], [s]))
    g.add_node(Node("Reshape", "r", [s, g.constant("shape", np.array([2, 2], np.int64))], [t]))
    widen_storage_types(g)
    assert [n.op for n in g.nodes] == ["Cast", "Add", "Cast", "Reshape"]  # Reshape moves the bits as they are
    add = g.nodes[1]
    assert [v.dtype for v in add.inputs] == [DType.FLOAT32, DType.FLOAT32] and add.outputs[0].dtype is DType.FLOAT32
    assert add.inputs[1].is_const and g.nodes[2].outputs[0] is s and s.dtype is DType.BFLOAT16
