"""Integer kernels on cases the ONNX node tests miss: groups, depthwise, strides, dilations, 1-D and 3-D,
both packings of convolution taps (channels in fours or not),
per-channel scales and zero points, uint8 weights whose offsets do not fit int8, several pixel blocks,
batched and run-time operands, run-time zero points, ties and saturation. The reference is ONNX's own
evaluator, and integer outputs must be identical (bit-exact requantisation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.codegen import library
from ember.ops import registry
from ember.ops.qlinear import fixed_point
from tests.support import cdriver
from tests.support.host import cpu_has

RNG = np.random.default_rng(5)


def _model(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], consts: dict[str, np.ndarray],
           outputs: tuple[str, ...], opset: int) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    outs = [onnx.ValueInfoProto(name=o) for o in outputs]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in consts.items()]
    return helper.make_model(helper.make_graph(nodes, "g", ins, outs, inits),
                             opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _check(tmp_path: Path, nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], consts: dict[str, np.ndarray],
           outputs: tuple[str, ...] = ("y",), opset: int = 21, sanitize: bool = False) -> dict[str, np.ndarray]:
    model = _model(nodes, feeds, consts, outputs, opset)
    folder = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    onnx.save(model, folder / "m.onnx")
    ref = ReferenceEvaluator(model).run(None, feeds)
    bundle = ember.compile(folder / "m.onnx", folder / "out", opt_level=1)
    got = cdriver.run(bundle.path, folder / "drv", feeds, sanitize=True) if sanitize else bundle.run(feeds)
    for name, r in zip(outputs, ref, strict=True):
        r = np.asarray(r)
        assert got[name].dtype == r.dtype and got[name].shape == r.shape, name
        if r.dtype.kind in "iu":
            np.testing.assert_array_equal(got[name], r, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], r, rtol=1e-6, atol=1e-6, err_msg=name)
    return got


def _q(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


CONV_CASES = {
    # name: (x dtype, x shape, w dtype, w shape, attrs, per-channel scale, per-channel zero point, bias)
    "u8_3x3_pad": (np.uint8, (1, 3, 9, 10), np.uint8, (5, 3, 3, 3), {"pads": [1, 1, 1, 1]}, False, False, True),
    "s8_group_dil_stride": (np.int8, (2, 8, 11, 9), np.int8, (6, 4, 3, 2),
                            {"group": 2, "strides": [2, 1], "dilations": [2, 1], "pads": [0, 1, 2, 0]},
                            True, False, True),
    "u8_weight_offsets": (np.uint8, (1, 8, 12, 12), np.uint8, (7, 8, 2, 2), {"strides": [1, 2]}, True, True, False),
    "u8_5ch_offsets": (np.uint8, (1, 5, 9, 12), np.uint8, (3, 5, 3, 1), {"pads": [1, 0, 1, 0]}, True, True, True),
    "s8_depthwise_x2": (np.int8, (1, 3, 10, 9), np.int8, (6, 1, 3, 3),
                        {"group": 3, "strides": [2, 2], "pads": [1, 0, 1, 2]}, True, False, True),
    # (ONNX's reference mis-shapes per-channel scales of a 1-D QLinearConv: per tensor here)
    "u8_1d_blocks": (np.uint8, (1, 6, 150), np.int8, (9, 6, 5), {"pads": [2, 2]}, False, False, True),
    "s8_3d": (np.int8, (1, 4, 4, 5, 6), np.int8, (3, 4, 2, 3, 2), {"pads": [1, 0, 1, 0, 1, 0]}, False, False, True),
    "u8_one_pixel_gemv": (np.uint8, (1, 8, 3, 3), np.uint8, (5, 8, 3, 3), {}, True, True, True),
    "s8_two_pixels_gemv": (np.int8, (1, 3, 2, 3), np.uint8, (4, 3, 2, 2), {}, True, True, False),
    "s8_same_upper": (np.int8, (1, 2, 7, 8), np.uint8, (4, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
                      False, True, False),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_qlinearconv(tmp_path: Path, case: str) -> None:
    xdt, xs, wdt, ws, attrs, per_ch, per_ch_zp, with_bias = CONV_CASES[case]
    m = ws[0]
    x = _q(xs, xdt)
    consts = {
        "xs": _f32(0.02), "xz": np.array(3 if xdt is np.int8 else 131, xdt), "w": _q(ws, wdt),
        "ws": (RNG.uniform(0.005, 0.03, m) if per_ch else np.full(1, 0.011)).astype(np.float32),
        "wz": (_q((m,), wdt) if per_ch_zp else np.zeros(1, wdt)),
        "ys": _f32(0.37), "yz": np.array(-7 if xdt is np.int8 else 120, xdt),
    }
    inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if with_bias:
        consts["b"] = RNG.integers(-3000, 3000, m).astype(np.int32)
        inputs.append("b")
    _check(tmp_path, [helper.make_node("QLinearConv", inputs, ["y"], **attrs)], {"x": x}, consts)


@pytest.mark.parametrize("channels", [3, 8])
def test_convinteger_runtime_zero_point_sanitized(tmp_path: Path, channels: int) -> None:
    """The zero point of x known only at run time (as after DynamicQuantizeLinear); under ASan/UBSan,
    with both packings of the taps."""
    x, xz = _q((1, channels, 20, 13), np.uint8), np.array(77, np.uint8)
    consts = {"w": _q((5, channels, 3, 3), np.int8), "wz": np.array(0, np.int8)}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 2, 1, 0], strides=[1, 2])
    _check(tmp_path, [node], {"x": x, "xz": xz}, consts, opset=13, sanitize=True)


@pytest.mark.parametrize("rows", [70, 2])
def test_matmulinteger_constant_b_per_column_zero_point(tmp_path: Path, rows: int) -> None:
    """Tiles of rows, and matrix-vector products for one or two rows."""
    a, az = _q((rows, 33), np.uint8), np.array(128, np.uint8)
    consts = {"b": _q((33, 10), np.uint8), "bz": _q((10,), np.uint8)}
    _check(tmp_path, [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])], {"a": a, "az": az},
           consts, opset=13)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinearmatmul_runtime_b_broadcast_batch(tmp_path: Path, dtype: type) -> None:
    a, b = _q((2, 3, 5, 7), dtype), _q((3, 7, 6), dtype)
    consts = {"as": _f32(0.05), "az": np.array(4, dtype), "bs": _f32(0.02), "bz": np.array(9, dtype),
              "ys": _f32(0.1), "yz": np.array(2, dtype)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    _check(tmp_path, [node], {"a": a, "b": b}, consts)


def test_qlinearmatmul_constant_b_per_column_scale(tmp_path: Path) -> None:
    a = _q((3, 80, 21), np.int8)
    consts = {"as": _f32(0.05), "az": np.array(-3, np.int8), "b": _q((21, 11), np.int8),
              "bs": RNG.uniform(0.01, 0.05, 11).astype(np.float32), "bz": np.zeros(11, np.int8),
              "ys": _f32(0.3), "yz": np.array(5, np.int8)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    _check(tmp_path, [node], {"a": a}, consts)


def test_quantize_ties_saturation_and_axes(tmp_path: Path) -> None:
    """Exact halves round to even, values past the range saturate, per-axis with a negative axis; per
    tensor, 600 values take 16 at a time on AVX-512 (quant.c ember_q_saturate16), then a scalar tail.
    (Saturation inside int32 range: ONNX's reference wraps around for |x / scale| >= 2^31.)"""
    x = np.concatenate([np.arange(-298, 298, dtype=np.float32) * 0.25, _f32(3e5, -3e5, 0.0, -0.0)])
    x = x.reshape(2, 3, 100)
    consts = {"s": _f32(0.5), "z": np.array(-3, np.int8), "s3": _f32(0.25, 0.5, 1.5),
              "z3": np.array([0, 7, 255], np.uint8), "s16": _f32(0.001), "z16": np.array(-5, np.int16),
              "zu": np.array(131, np.uint8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]),
             helper.make_node("QuantizeLinear", ["x", "s", "zu"], ["yu"]),
             helper.make_node("QuantizeLinear", ["x", "s3", "z3"], ["y3"], axis=-2),
             helper.make_node("QuantizeLinear", ["x", "s16", "z16"], ["y16"]),
             helper.make_node("DequantizeLinear", ["y3", "s3", "z3"], ["d3"], axis=1)]
    _check(tmp_path, nodes, {"x": x}, consts, outputs=("y", "yu", "y3", "y16", "d3"))


def test_quantize_runtime_scale_and_zero_point(tmp_path: Path) -> None:
    x = RNG.standard_normal((4, 9)).astype(np.float32) * 3
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]),
             helper.make_node("DequantizeLinear", ["y", "s", "z"], ["d"])]
    _check(tmp_path, nodes, {"x": x, "s": _f32(0.03), "z": np.array(100, np.uint8)}, {}, outputs=("y", "d"),
           opset=19)


def test_dynamicquantizelinear_large(tmp_path: Path) -> None:
    x = (RNG.standard_normal((3, 1000)) * 4 + 1).astype(np.float32)
    _check(tmp_path, [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x}, {},
           outputs=("y", "s", "z"), opset=13)


@pytest.mark.parametrize("m", [1.0, 0.75, 2.0**-20 * 1.234, 3.1e-5, 1e-12, 4096.5, 2.0**40])
def test_fixed_point_is_the_float32_multiplier(m: float) -> None:
    mult, shift = fixed_point(m)
    assert 0 <= mult < 2**31 and 1 <= shift <= 62
    if 2.0**-31 < m < 2.0**30:
        assert mult * 2.0**-shift == float(np.float32(m))


def test_each_integer_kernel_compiles_alone_warning_free(tmp_path: Path) -> None:
    """A bundle copies in only the kernels it calls: each integer kernel with its dependencies must
    compile on its own, warning-free (no unused static functions) and without double promotion."""
    ops = [op for op in registry.load_all().values() if op.name in _INTEGER_OPS]
    for name in sorted({k for op in ops for k in op.kernels}):
        src = tmp_path / f"{name}.c"
        src.write_text("#include <stdint.h>\n#include <stddef.h>\n" + library.assemble({name})
                       + f"void ember_use(void);\nvoid ember_use(void) {{ (void){name}; }}\n")
        cdriver.run_cmd(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion",
                         "-ffreestanding", "-c", str(src), "-o", str(tmp_path / f"{name}.o")])


_INTEGER_OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QConv", "QMatMul", "QLut", "QAdd",
                "QMul", "QAvgPool", "QMean")


# (target, cpu, the integer product's path it selects, what it needs): every path of qgemm.c.
PATHS = [
    ("host", "x86-64", "SSE2 PMADDWD", ("sse2",)),
    ("host", "haswell", "AVX2 VPMADDWD", ("avx2", "fma", "bmi2")),
    ("host", "alderlake", "AVX-VNNI VPDPBUSD (256-bit)", ("avx_vnni", "avx2", "bmi2")),
    ("aarch64", "cortex-a76", "SDOT", ()),
    ("aarch64", None, "NEON, generic vectors", ()),
    ("cortex-m4", None, "SMLAD", ()),
    ("cortex-m0", None, "portable C, no FPU", ()),
]


@pytest.fixture(scope="module")
def qdq_models(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, dict, dict[str, np.ndarray]]]:
    """(model, input, the native bundle's outputs): the QDQ LeNet (uint8 weights with offsets, both tap
    packings, int8 matmuls) and the MobileNet-style block (depthwise, 1x1, Add, Mul, tables, means)
    with its int8 tensors as outputs (all but the Softmax's, float math)."""
    from tests.models.test_prequantized import _inputs, _int8_tensors_as_outputs, _quantized

    folder = tmp_path_factory.mktemp("qdq_models")
    block, _ = _int8_tensors_as_outputs(_quantized(folder, "mobilenet_block", "u8u8_per_channel"))
    out = []
    for model in (_quantized(folder, "lenet", "u8u8_per_channel"), block):
        feeds = _inputs(onnx.load(model), 1)[0]
        ref = ember.compile(model, folder / f"native_{model.stem}").run(feeds)
        if model == block:  # the Softmax output and its quantization: float math
            ref = {k: v for k, v in ref.items() if not k.startswith("y")}
        out.append((model, feeds, ref))
    return out


@pytest.mark.parametrize(("target", "cpu", "path", "flags"), PATHS, ids=[f"{t}-{c or ''}" for t, c, _, _ in PATHS])
def test_integer_paths_are_bit_identical(tmp_path: Path, qdq_models: list, target: str, cpu: str | None, path: str,
                                         flags: tuple[str, ...]) -> None:
    """The same models give the native bundle's bits on every fast path of the integer kernels and on
    the portable one."""
    from tests.cross import require_tools
    from tests.support import crossrun, mcu

    if target == "host" and not cpu_has(*flags):
        pytest.skip(f"this CPU lacks {flags}")
    for i, (model, feeds, ref) in enumerate(qdq_models):
        bundle = ember.compile(model, tmp_path / f"b{i}", target=target, **({"cpu": cpu} if cpu else {}))
        if target == "host":
            got = bundle.run(feeds)
        elif target.startswith("cortex"):
            require_tools(target, mcu.missing_tools(target))
            got = mcu.run_on_mcu(bundle.path, target, feeds, tmp_path / f"run{i}")
        else:
            require_tools(target, crossrun.missing_tools(target))
            got = crossrun.run_linux(bundle.path, target, feeds, tmp_path / f"run{i}")
        for name, r in ref.items():
            np.testing.assert_array_equal(got[name], r, err_msg=f"{model.stem} {name} on {target} {cpu or ''} ({path})")
