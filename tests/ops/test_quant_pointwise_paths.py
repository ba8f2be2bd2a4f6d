"""QAdd and QMaxPool (kernels/qpointwise.c) on every path: this machine's CPU (AVX-512 here: 64
outputs per step, padded last blocks, masked row ends) and the SSE2 baseline, which takes the portable
code. QAdd equals its definition in 64-bit integers (the multipliers fold_qdq_ops.py makes), so within
one step of the exact rescale and of onnxruntime's QLinearAdd; QMaxPool equals onnxruntime's. Shapes
cover same-shape and broadcast operands (one value, per-channel runs long and short, a repeating last
axis), tails, saturation, a folded Relu, Sub, power-of-two scales (AVX-512's one-product path), the
64-bit fallback of QAdd, strides 1, 2 and 3, dilation, pads."""

from __future__ import annotations

import importlib.util
import platform
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ember
from ember.codegen import library
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.reference import onnxruntime_session
from tests.support import cdriver

RNG = np.random.default_rng(23)
CPUS = [None, "x86-64"]  # native (AVX-512 here), SSE2: the portable code

# name: (a shape, b shape, op, relu, (a scale, b scale, y scale))
ADDS = {
    "same_tail": ((1, 3, 29, 31), (1, 3, 29, 31), "Add", False, (0.02, 0.03, 0.04)),
    "same_relu": ((2, 4, 8, 9), (2, 4, 8, 9), "Add", True, (0.05, 0.021, 0.06)),
    "pow2_scales_ties": ((1, 2, 16, 20), (1, 2, 16, 20), "Add", False, (0.5, 0.25, 1.0)),
    "pow2_channel_sub_relu": ((1, 3, 8, 8), (1, 3, 1, 1), "Sub", True, (0.25, 0.0625, 0.125)),
    "saturating": ((1, 2, 10, 13), (1, 2, 10, 13), "Add", False, (0.08, 0.07, 0.01)),
    "one_value_sub": ((1, 4, 9, 10), (1,), "Sub", False, (0.03, 0.05, 0.04)),
    "channel_runs_49": ((1, 6, 7, 7), (1, 6, 1, 1), "Add", False, (0.02, 0.04, 0.05)),
    "channel_runs_12": ((1, 5, 3, 4), (1, 5, 1, 1), "Add", True, (0.02, 0.04, 0.03)),
    "last_axis_40": ((2, 3, 40), (40,), "Add", False, (0.03, 0.02, 0.035)),
    "ratio_5000_64bit": ((1, 2, 9, 11), (1, 2, 9, 11), "Add", False, (50.0, 0.02, 0.01)),
}


def _zero_point(dtype: type) -> np.ndarray:
    return np.array(RNG.integers(-30, 30) if dtype is np.int8 else RNG.integers(90, 160), dtype)


def _ints(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _model(nodes: list, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray], outputs: list[str],
           domains: tuple[str, ...] = ("",)) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    graph = helper.make_graph(nodes, "g", ins, [onnx.ValueInfoProto(name=o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    opsets = [helper.make_opsetid(d, 21 if d == "" else 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _compile(folder: Path, model: onnx.ModelProto, cpu: str | None) -> ember.Bundle:
    folder.mkdir()
    onnx.save(model, folder / "m.onnx")
    return ember.compile(folder / "m.onnx", folder / "out", **({"cpu": cpu} if cpu else {}))


@pytest.fixture(scope="module", params=[np.int8, np.uint8], ids=["int8", "uint8"])
def adds(request: pytest.FixtureRequest) -> tuple[onnx.ModelProto, dict, dict, dict]:
    """One QDQ model holding every ADDS case (DequantizeLinear -> Add/Sub [-> Relu] -> QuantizeLinear),
    its inputs, each case's quantization, and onnxruntime's QLinearAdd model of the Add cases."""
    dtype = request.param
    feeds, inits, nodes, ort_nodes, quant = {}, {}, [], [], {}
    for name, (ashape, bshape, op, relu, scales) in ADDS.items():
        q = {}
        for t, shape, scale in (("a", ashape, scales[0]), ("b", bshape, scales[1]), ("y", None, scales[2])):
            q[t] = (np.float32(scale), _zero_point(dtype))
            inits[f"{name}_{t}s"], inits[f"{name}_{t}z"] = np.array(q[t][0]), q[t][1]
            if shape is not None:
                feeds[f"{name}_{t}"] = _ints(shape, dtype)
                nodes.append(helper.make_node("DequantizeLinear", [f"{name}_{t}", f"{name}_{t}s", f"{name}_{t}z"],
                                              [f"{name}_{t}f"]))
        nodes.append(helper.make_node(op, [f"{name}_af", f"{name}_bf"], [f"{name}_s"]))
        if relu:
            nodes.append(helper.make_node("Relu", [f"{name}_s"], [f"{name}_r"]))
        nodes.append(helper.make_node("QuantizeLinear", [f"{name}_{'r' if relu else 's'}", f"{name}_ys", f"{name}_yz"],
                                      [f"{name}_y"]))
        if op == "Add" and not relu:
            ort_nodes.append(helper.make_node("QLinearAdd", [f"{name}_{s}" for s in ("a", "as", "az", "b", "bs", "bz",
                                                                                    "ys", "yz")],
                                              [f"{name}_y"], domain="com.microsoft"))
        quant[name] = q
    outputs = [f"{n}_y" for n in ADDS]
    ort_model = _model(ort_nodes, feeds, inits, [n.output[0] for n in ort_nodes], ("", "com.microsoft"))
    return _model(nodes, feeds, inits, outputs), feeds, quant, ort_model


def _exact(name: str, feeds: dict[str, np.ndarray], q: dict, dtype: np.dtype) -> np.ndarray:
    """The real rescale in float64, rounded half to even, clamped (at the zero point for a Relu)."""
    _, _, op, relu, _ = ADDS[name]
    real = {t: float(q[t][0]) * (feeds[f"{name}_{t}"].astype(np.float64) - int(q[t][1])) for t in "ab"}
    s = real["a"] + real["b"] if op == "Add" else real["a"] - real["b"]
    y = np.rint(s / float(q["y"][0])) + int(q["y"][1])
    info = np.iinfo(dtype)
    return np.clip(y, int(q["y"][1]) if relu else info.min, info.max)


def _integer_reference(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each QAdd's definition (ember_qadd) on its multipliers r, in 64-bit integers."""
    graph, _, _ = build_graph(str(path), CompileOptions())
    out = {}
    for node in (n for n in graph.nodes if n.op == "QAdd"):
        r = node.attrs["_qadd"]
        za, zb, ma, mb, shift, (zy, lo, hi) = r.za, r.zb, r.ma, r.mb, r.shift, r.out.table()
        a = feeds[node.inputs[0].name].astype(np.int64)
        b = np.broadcast_to(feeds[node.inputs[1].name].astype(np.int64), a.shape)
        s = (a - za) * ma + (b - zb) * mb
        out[node.outputs[0].name] = np.clip(((s + (1 << (shift - 1)) - 1 + ((s >> shift) & 1)) >> shift) + zy, lo, hi)
    return out


def test_qadd_paths(tmp_path: Path, adds: tuple) -> None:
    model, feeds, quant, ort_model = adds
    native = _compile(tmp_path / "native", model, None)
    assert [n["op"] for n in native.manifest["nodes"]].count("QAdd") == len(ADDS)
    got, portable = native.run(feeds), _compile(tmp_path / "portable", model, "x86-64").run(feeds)
    ref = _integer_reference(tmp_path / "native" / "m.onnx", feeds)
    sess = onnxruntime_session(ort_model.SerializeToString())
    ort_out = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))
    for name in ADDS:
        y = got[f"{name}_y"].astype(np.int64)
        np.testing.assert_array_equal(y, ref[f"{name}_y"], err_msg=name)
        np.testing.assert_array_equal(portable[f"{name}_y"], got[f"{name}_y"], err_msg=name)
        assert np.abs(y - _exact(name, feeds, quant[name], got[f"{name}_y"].dtype)).max() <= 1, name
        if f"{name}_y" in ort_out:
            assert np.abs(y - ort_out[f"{name}_y"].astype(np.int64)).max() <= 1, name
    assert (got["saturating_y"] == np.iinfo(got["saturating_y"].dtype).max).any()


# name: (x shape, MaxPool attributes)
POOLS = {
    "s2_3x3_pad1_tail": ((1, 3, 30, 75), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "s2_wide_row_ceil": ((1, 1, 6, 201), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                          "ceil_mode": 1}),
    "s1_3x3_two_vectors": ((1, 2, 9, 70), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "s2_dilated_2x2": ((1, 2, 11, 40), {"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [2, 2]}),
    "s1_asymmetric_pads": ((2, 2, 10, 13), {"kernel_shape": [2, 3], "pads": [0, 2, 1, 0]}),
    "s1_row_of_1": ((1, 2, 5, 1), {"kernel_shape": [3, 1], "pads": [1, 0, 1, 0]}),
    "s3_portable": ((1, 2, 13, 17), {"kernel_shape": [3, 3], "strides": [3, 3], "pads": [1, 1, 1, 1]}),
}


@pytest.mark.parametrize("cpu", CPUS, ids=["native", "x86-64"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_qmaxpool_paths(tmp_path: Path, dtype: type, cpu: str | None) -> None:
    feeds = {f"{n}_x": _ints(shape, dtype) for n, (shape, _) in POOLS.items()}
    inits = {"s": np.array(np.float32(0.03)), "z": _zero_point(dtype)}
    nodes = []
    for n, (_, attrs) in POOLS.items():
        nodes += [helper.make_node("DequantizeLinear", [f"{n}_x", "s", "z"], [f"{n}_f"]),
                  helper.make_node("MaxPool", [f"{n}_f"], [f"{n}_p"], **attrs),
                  helper.make_node("QuantizeLinear", [f"{n}_p", "s", "z"], [f"{n}_y"])]
    model = _model(nodes, feeds, inits, [f"{n}_y" for n in POOLS])
    bundle = _compile(tmp_path / "pool", model, cpu)
    assert [n["op"] for n in bundle.manifest["nodes"]].count("QMaxPool") == len(POOLS)
    got = bundle.run(feeds)
    # the reference: onnxruntime's MaxPool on the integers themselves (ONNX's evaluator fails on some pads)
    ref_model = _model([helper.make_node("MaxPool", [f"{n}_x"], [f"{n}_y"], **a) for n, (_, a) in POOLS.items()],
                       feeds, {}, [f"{n}_y" for n in POOLS])
    ref = onnxruntime_session(ref_model.SerializeToString()).run(None, feeds)
    for n, r in zip(POOLS, ref, strict=True):
        np.testing.assert_array_equal(got[f"{n}_y"], r, err_msg=n)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 compilers")
@pytest.mark.parametrize("kernel", ["ember_qadd", "ember_qmaxpool"])
def test_avx512_paths_compile_alone_warning_free(tmp_path: Path, kernel: str) -> None:
    """The AVX-512 paths, with and without VNNI, compiled on their own (as a bundle copies them in)
    by GCC and by zig's clang (the cross compiler), which also warns about unused inline functions."""
    src = tmp_path / f"{kernel}.c"
    src.write_text("#include <stdint.h>\n#include <stddef.h>\n" + library.assemble({kernel})
                   + f"void ember_use(void);\nvoid ember_use(void) {{ (void){kernel}; }}\n")
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion", "-ffreestanding", "-c", str(src),
             "-o", str(tmp_path / "k.o")]
    for cpu in ("skylake-avx512", "x86-64-v4", "icelake-server"):
        cdriver.run_cmd(["cc", f"-march={cpu}", *flags])
    if importlib.util.find_spec("ziglang") is not None:
        cdriver.run_cmd([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", "-mcpu=znver4", *flags])
