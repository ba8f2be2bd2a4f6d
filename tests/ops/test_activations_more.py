"""Celu, Swish, Softsign, ThresholdedRelu, Shrink, IsInf, IsNaN, Sign and the inverse trigonometric and
hyperbolic ops beyond the ONNX node tests: kernel epilogues, integer Shrink, the IsInf attribute
combinations, float64 and float16, and a Cortex-M4 build. Expected values come from the ONNX reference
implementation."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ember
from ember.codegen import library
from ember.ops.epilogue import KIND_CODES
from tests.ops.opmodels import make_model, reference, sanitized_run
from tests.ops.test_math import _sweep, ulp_error

RNG = np.random.default_rng(11)
ACTIVATIONS = [("Celu", {"alpha": 0.7}), ("Swish", {"alpha": 1.3}), ("Softsign", {}),
               ("ThresholdedRelu", {"alpha": 0.4}), ("Shrink", {"bias": 0.25, "lambd": 0.6})]


@pytest.mark.parametrize(("op", "attrs"), ACTIVATIONS)
def test_activation_after_matmul_is_its_epilogue(op: str, attrs: dict, tmp_path: Path) -> None:
    w = (RNG.standard_normal((8, 6)) * 0.5).astype(np.float32)
    feeds = {"x": RNG.standard_normal((5, 8)).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node(op, ["m"], ["y"], **attrs)]
    model = make_model(nodes, feeds, {"y": np.dtype(np.float32)}, opset=24)
    model.graph.initializer.append(numpy_helper.from_array(w, "w"))
    onnx.save(model, tmp_path / "m.onnx")
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out", opt_level=2)
    source = (tmp_path / "out" / "m.c").read_text()
    # The kernel applies it (its kind code in the call), and it has no loop of its own.
    assert re.search(rf"ember_matmul_f32\(.*, {KIND_CODES[op]}, 0x[^,]*, 0x[^,]*\);", source)
    assert f": {op} -> " not in source and "MatMul -> y" in source
    np.testing.assert_allclose(bundle.run(feeds)["y"], reference(model, feeds)["y"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize(("bias", "lambd"), [(1.5, 2.7), (-2.0, 3.0), (0.0, 0.5), (3.25, -1.5)])
def test_integer_shrink_matches_thereference(dt: type, bias: float, lambd: float, tmp_path: Path) -> None:
    info = np.iinfo(dt)
    # Values whose results are in T's range (the reference's float-to-int cast is unspecified outside it).
    lo, hi = max(int(info.min) + 8, -(2**40)), min(int(info.max) - 8, 2**40)
    x = np.unique(np.concatenate([np.arange(max(lo, -20), min(hi, 20) + 1), RNG.integers(lo, hi, 200)])).astype(dt)
    feeds = {"x": x}
    model = make_model([helper.make_node("Shrink", ["x"], ["y"], bias=bias, lambd=lambd)], feeds,
                   {"y": np.dtype(dt)}, opset=21)
    got, ref = sanitized_run(model, feeds, tmp_path), reference(model, feeds)
    np.testing.assert_array_equal(got["y"], ref["y"])


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
def test_isinf_attributes_isnan_and_sign(dt: type, tmp_path: Path) -> None:
    x = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 1e-30, -7.0], dt)
    feeds = {"x": x}
    nodes = [helper.make_node("IsInf", ["x"], [f"inf{p}{n}"], detect_positive=p, detect_negative=n)
             for p in (0, 1) for n in (0, 1)]
    nodes += [helper.make_node("IsNaN", ["x"], ["nan"]), helper.make_node("Sign", ["x"], ["sign"])]
    outs = {f"inf{p}{n}": np.dtype(bool) for p in (0, 1) for n in (0, 1)} | {"nan": np.dtype(bool),
                                                                               "sign": np.dtype(dt)}
    model = make_model(nodes, feeds, outs, opset=20)
    got, ref = sanitized_run(model, feeds, tmp_path), reference(model, feeds)
    for name in outs:
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int64, np.uint64])
def test_sign_of_integers(dt: type, tmp_path: Path) -> None:
    info = np.iinfo(dt)
    feeds = {"x": np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dt)}
    model = make_model([helper.make_node("Sign", ["x"], ["y"])], feeds, {"y": np.dtype(dt)}, opset=13)
    got = sanitized_run(model, feeds, tmp_path)
    np.testing.assert_array_equal(got["y"], reference(model, feeds)["y"])


UNARY = ["Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softsign", "Celu", "Swish",
         "ThresholdedRelu", "Shrink"]


@pytest.mark.parametrize("dt", [np.float64, np.float16])
def test_float64_and_float16(dt: type, tmp_path: Path) -> None:
    """Each op on its domain (Acosh from 1, Asin/Acos/Atanh inside (-1, 1)), in one model."""
    feeds = {"x": np.linspace(-0.95, 0.95, 39).astype(dt), "big": np.linspace(1.0, 9.0, 17).astype(dt)}
    nodes = [helper.make_node(op, ["big" if op == "Acosh" else "x"], [op]) for op in UNARY]
    model = make_model(nodes, feeds, dict.fromkeys(UNARY, np.dtype(dt)), opset=24)
    onnx.save(model, tmp_path / "m.onnx")
    got = ember.compile(tmp_path / "m.onnx", tmp_path / "out").run(feeds)
    ref = reference(model, feeds)
    tol = 2e-3 if dt == np.float16 else 1e-6  # float64 goes through ember's float math (like Sin, Exp)
    for op in UNARY:
        assert got[op].dtype == dt
        np.testing.assert_allclose(got[op], ref[op], rtol=tol, atol=tol, err_msg=op)


@pytest.mark.parametrize("dt", [np.float16, np.float64])
def test_float16_and_float64_softmax_run_the_float_kernel(dt: type, tmp_path: Path) -> None:
    feeds = {"x": (RNG.standard_normal((3, 4, 5)) * 3).astype(dt)}
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=1), helper.make_node("LogSoftmax", ["x"], ["l"])]
    model = make_model(nodes, feeds, {"s": np.dtype(dt), "l": np.dtype(dt)}, opset=13)
    got = sanitized_run(model, feeds, tmp_path)
    ref = reference(model, feeds)
    tol = 2e-3 if dt == np.float16 else 1e-6
    for name in ("s", "l"):
        assert got[name].dtype == dt
        np.testing.assert_allclose(got[name], ref[name], rtol=tol, atol=tol)


@pytest.mark.skipif(importlib.util.find_spec("ziglang") is None, reason="cross targets need zig")
def test_cortex_m4_build(tmp_path: Path) -> None:
    """float32 and integer models of these ops build for a single-precision FPU: no libm, no double."""
    feeds = {"x": np.zeros(8, np.float32), "i": np.zeros(8, np.int32), "u": np.zeros(8, np.uint8)}
    nodes = [helper.make_node(op, ["x"], [op]) for op in UNARY]
    nodes += [helper.make_node("Mod", ["x", "x"], ["fmod_f"], fmod=1), helper.make_node("Mod", ["x", "x"], ["mod_f"]),
              helper.make_node("Mod", ["i", "i"], ["mod_i"]), helper.make_node("IsInf", ["x"], ["isinf"]),
              helper.make_node("Sign", ["i"], ["sign"]),
              helper.make_node("BitShift", ["u", "u"], ["shl"], direction="LEFT"),
              helper.make_node("BitwiseXor", ["i", "i"], ["bxor"])]
    outs = dict.fromkeys(UNARY, np.dtype(np.float32)) | {
        "fmod_f": np.dtype(np.float32), "mod_f": np.dtype(np.float32), "mod_i": np.dtype(np.int32),
        "isinf": np.dtype(bool), "sign": np.dtype(np.int32), "shl": np.dtype(np.uint8), "bxor": np.dtype(np.int32)}
    model = make_model(nodes, feeds, outs, opset=24)
    onnx.save(model, tmp_path / "m.onnx")
    # The toolchain's object check refuses libm symbols and double-precision helpers on this FPU.
    ember.compile(tmp_path / "m.onnx", tmp_path / "out", target="cortex-m4")
    source = (tmp_path / "out" / "m.c").read_text()
    assert all(f"ember_{f}(" in source for f in ("tanf", "asinhf", "fmodf", "sigmoidf"))
    assert (tmp_path / "out" / "m.o").stat().st_size > 0


# The vectorized Sigmoid / Swish epilogue (kernels/activation.c, ember_act_vsig) ---------------------------------

_ACT_MAIN = r"""
int main(int argc, char **argv) {
    const int kind = atoi(argv[1]);
    const float alpha = (float)atof(argv[2]);
    uint32_t n, i = 0, len = 1;
    float *x;
    (void)argc;
    if (fread(&n, sizeof n, 1, stdin) != 1 || !(x = malloc(n * sizeof(float)))) return 2;
    if (fread(x, sizeof(float), n, stdin) != n) return 2;
    /* runs of 1 to 19 floats: every tail length after whole vectors, and the vectors themselves */
    for (; i < n; i += len, len = len % 19 + 1)
        ember_act_apply_f32(x + i, len < n - i ? len : n - i, kind, alpha, 0.0f);
    fwrite(x, sizeof(float), n, stdout);
    free(x);
    return 0;
}
"""


@pytest.fixture(scope="module", params=["sse2", "native"])
def actprog(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The epilogue built alone with the bundle's flags, under ASan/UBSan: x86-64's baseline (4 lanes) and this
    machine's (8 or 16; the sanitized model test's driver builds the baseline only)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("act")
    src = ("#include <stdint.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
           + library.assemble({"ember_act_apply_f32"}) + _ACT_MAIN)
    (d / "a.c").write_text(src)
    march = [] if request.param == "sse2" else ["-march=native"]
    subprocess.run([cc, *march, "-std=c99", "-O2", "-ffp-contract=fast", "-ffreestanding", "-fno-math-errno",
                    "-fno-trapping-math", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", "-o", str(d / "a"), str(d / "a.c")],
                   check=True, capture_output=True)
    return d / "a"


@pytest.mark.parametrize(("op", "alpha"), [("Sigmoid", 0.0), ("Swish", 1.0), ("Swish", 1.7)])
def test_sigmoid_and_swish_epilogues_over_every_magnitude(actprog: Path, op: str, alpha: float) -> None:
    """Every 4099th float bit pattern, a fine grid over [-20, 20] and the edges: within 4 ulp of float64's
    x / (1 + e^-z) (sigmoid: x = 1, z = x; swish: z = alpha x) wherever sigmoid(z) is a normal float; below 2^-126
    (z < -87.3) within |x| * 2^-126, since e^-z may overflow there as it does in float32's 1 / (1 + exp(-z)).
    Exact where the result is: sigmoid(+-inf) 1 and 0, swish(+inf) +inf, swish(-inf) NaN (-inf * 0, the ONNX
    ops' value), NaN -> NaN, sigmoid(0) 0.5."""
    x = np.concatenate([_sweep(), np.linspace(-20, 20, 4001, dtype=np.float32)])
    data = np.uint32(len(x)).tobytes() + x.tobytes()
    res = subprocess.run([str(actprog), str(KIND_CODES[op]), repr(alpha)], input=data, capture_output=True, check=True)
    got = np.frombuffer(res.stdout, np.float32)
    x64 = x.astype(np.float64)
    z = (np.float32(alpha) * x).astype(np.float64) if op == "Swish" else x64
    gain = np.abs(x64) if op == "Swish" else np.ones(len(x))
    with np.errstate(all="ignore"):
        sig = 1.0 / (1.0 + np.exp(-z))
        ref = x64 * sig if op == "Swish" else sig
        err = ulp_error(got, ref)
        deep = (sig < 2.0**-126) & np.isfinite(x64)
        deep_err = np.abs(got.astype(np.float64) - ref) / (gain * 2.0**-126)
    assert np.all(deep_err[deep] <= 1.0), f"{op}: {x[deep][np.argmax(deep_err[deep])]!r}"
    err[deep] = 0.0
    for bound, where in ((4.0, np.abs(z) <= 20), (6.0, np.ones(len(x), bool))):
        i = int(np.argmax(np.where(where, err, 0.0)))
        assert err[i] <= bound, f"{op}({x[i]!r}) = {got[i]!r}, expected {ref[i]!r}: {err[i]:.2f} ulp > {bound}"
    specials = np.float32([np.inf, -np.inf, np.nan, 0.0])
    at = [int(np.flatnonzero((x == s) | (np.isnan(s) & np.isnan(x)))[0]) for s in specials]
    want = [np.inf, np.nan, np.nan, 0.0] if op == "Swish" else [1.0, 0.0, np.nan, 0.5]
    np.testing.assert_array_equal(got[at], np.float32(want))


def test_sigmoid_and_swish_epilogues_match_onnxruntime(tmp_path: Path) -> None:
    """Conv + Sigmoid and Conv * Sigmoid(Conv) (EfficientNet's Swish, fused into the conv) on values from 1e-30
    to 1e30, infinities and NaN: the sanitized C driver's outputs against onnxruntime where its sigmoid is
    accurate (|x| <= 16: MLAS's is a rational approximation within ~1e-7 absolute, so its swish within ~16 times
    that) and against the ONNX reference everywhere."""
    ort = pytest.importorskip("onnxruntime")
    mags = np.float32([0.0, 1e-30, 1e-7, 0.01, 0.3, 1.0, 2.5, 7.0, 15.9, 20.0, 40.0, 87.5, 90.0, 103.9, 200.0, 1e30])
    wide = np.concatenate([mags, -mags, np.float32([np.inf, -np.inf, np.nan, 3e-39])])  # 337: a ragged row end
    x = np.concatenate([wide, np.linspace(-16, 16, 301, dtype=np.float32)]).reshape(1, 1, 1, -1)
    feeds = {"x": x}
    # weights of 1 and 2: the convs pass x and 2x on exactly (one input channel, no other products)
    weights = [numpy_helper.from_array(np.full((3, 1, 1, 1), v, np.float32), n) for n, v in (("w", 1), ("w2", 2))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Conv", ["x", "w2"], ["c2"]), helper.make_node("Sigmoid", ["c2"], ["g"]),
             helper.make_node("Mul", ["c2", "g"], ["sw"])]
    model = make_model(nodes, feeds, {"s": np.dtype(np.float32), "sw": np.dtype(np.float32)}, opset=13)
    model.graph.initializer.extend(weights)
    got = sanitized_run(model, feeds, tmp_path)
    source = (tmp_path / "out" / "m.c").read_text()
    for op in ("Sigmoid", "Swish"):  # both applied by the conv kernels, no loop of their own
        assert re.search(rf"ember_\w+\(.*, {KIND_CODES[op]}, 0x[^,]*, 0x[^,]*\);", source), op
    assert ": Sigmoid -> " not in source and ": Mul -> " not in source
    ref = reference(model, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = dict(zip(["s", "sw"], sess.run(None, feeds), strict=True))
    for name, scale in (("s", 1), ("sw", 2)):
        inside = np.abs(np.broadcast_to(x, got[name].shape)) * scale <= 16
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-6, atol=1e-37, err_msg=name)
        np.testing.assert_allclose(got[name][inside], theirs[name][inside], rtol=1e-5, atol=4e-6, err_msg=name)


def test_hardswish_epilogue_over_every_magnitude(actprog: Path) -> None:
    """HardSwish on whole vectors (MINPS/MAXPS clamps): x * clamp(x / 6 + 1/2, 0, 1) within 2 ulp plus |x| * 2^-24
    (1/6 is rounded to a float), 0 below -3, x above 3, +inf -> +inf, -inf -> NaN (-inf * 0), NaN -> NaN."""
    x = np.concatenate([_sweep(), np.linspace(-4, 4, 4001, dtype=np.float32)])
    data = np.uint32(len(x)).tobytes() + x.tobytes()
    res = subprocess.run([str(actprog), str(KIND_CODES["HardSwish"]), "0"], input=data, capture_output=True, check=True)
    got = np.frombuffer(res.stdout, np.float32)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        ref = x64 * np.clip(x64 / 6 + 0.5, 0.0, 1.0)
        err = np.abs(got.astype(np.float64) - ref)
        bound = 2 * np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64) + np.abs(x64) * 2.0**-24
    fin = np.isfinite(ref)
    i = int(np.argmax(np.where(fin, err - bound, -np.inf)))
    assert err[i] <= bound[i], f"HardSwish({x[i]!r}) = {got[i]!r}, expected {ref[i]!r}"
    np.testing.assert_array_equal(got[~fin], ref[~fin].astype(np.float32))
    outside = fin & (np.abs(x64) >= 3)
    np.testing.assert_array_equal(got[outside], np.where(x[outside] > 0, x[outside], np.float32(0)))
