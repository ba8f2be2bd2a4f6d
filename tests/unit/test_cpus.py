"""--cpu on the x86-64 targets: the CPU table (toolchain/cpus.py), native detection, the one-line error for
an unknown name, and what a choice changes: the convolution algorithms, NAME.c's kernel macros, NAME.json."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import load_graph
from ember.errors import OptionError
from ember.passes.conv_algorithms import choose_conv_algorithms
from ember.reference import onnxruntime_session
from ember.toolchain.cpus import CPUS, DEFAULT_FAMILY, FAMILIES, detect, resolve_cpu, with_params

# /proc/cpuinfo's first processor, cut to the fields detection reads (flags shortened).
EPYC_MILAN = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2

processor\t: 1
vendor_id\t: AuthenticAMD
flags\t\t: fpu
"""
ZEN4 = "vendor_id : AuthenticAMD\ncpu family : 25\nmodel name : AMD EPYC 9654\nflags : avx2 fma avx512f avx512bw\n"
XEON = "vendor_id : GenuineIntel\nmodel name : Intel(R) Xeon(R) Platinum 8480+\nflags : avx2 fma avx512f\n"
TIGERLAKE = "vendor_id : GenuineIntel\nmodel name : 11th Gen Intel(R) Core(TM) i7-1165G7\nflags : avx2 fma avx512f\n"
OLD = "vendor_id : GenuineIntel\nmodel name : Intel(R) Xeon(R) CPU E5-2670\nflags : sse2 sse4_2 avx\n"


@pytest.mark.parametrize(("text", "family", "model"), [
    (EPYC_MILAN, "avx2", "AMD EPYC 7B13"), (ZEN4, "avx512-1fma", "AMD EPYC 9654"),
    (XEON, "avx512", "Intel(R) Xeon(R) Platinum 8480+"), (TIGERLAKE, "avx512-1fma", None), (OLD, "x86-64", None),
    ("", "x86-64", None)])
def test_native_detection_reads_flags_and_model(text: str, family: str, model: str | None) -> None:
    fam, name = detect(text)
    assert fam.name == family
    if model is not None:
        assert name == model


def test_amx_int8_comes_from_the_cpu_not_the_table() -> None:
    """CpuFamily.amx_int8 (what conv_algorithms.qconv_amx_fits reads) is set by the CPU's flags or name, and
    --cpu-param cannot set it (the compiler's -march decides whether the tiles exist)."""
    assert detect(XEON.replace("avx512f", "avx512f amx_bf16 amx_tile amx_int8"))[0].amx_int8
    assert not detect(XEON)[0].amx_int8 and not detect(XEON.replace("avx512f", "avx512f amx_tile"))[0].amx_int8
    assert resolve_cpu("host", "sapphirerapids").family.amx_int8
    assert not resolve_cpu("host", "cascadelake").family.amx_int8
    assert not resolve_cpu("host", "sapphirerapids", ("qamx=false",)).family.qamx
    with pytest.raises(OptionError, match="amx_int8=true"):
        resolve_cpu("host", "cascadelake", ("amx_int8=true",))


def test_table_names_map_to_families() -> None:
    assert resolve_cpu("host", "x86-64-v3").family.name == "avx2"
    assert resolve_cpu("x86_64", "znver3").family.name == "avx2"
    assert resolve_cpu("host", "x86-64-v4").family.name == "avx512"
    assert resolve_cpu("host", "znver4").family.name == "avx512-1fma"
    assert resolve_cpu("x86_64", None).family.name == "x86-64"  # the x86_64 target's baseline
    assert set(CPUS.values()) <= set(FAMILIES)
    # Targets without a table keep passing --cpu to the compiler untouched.
    assert resolve_cpu("aarch64", "cortex-a72") is None and resolve_cpu("cortex-m4", None) is None


@pytest.mark.parametrize(("target", "cpu", "words"), [
    ("host", "skylake-avx51", ["skylake-avx51", "host", "x86-64-v3", "native"]),
    ("x86_64", "native", ["native", "x86_64", "x86-64-v3"])])
def test_unknown_cpu_is_one_line_listing_the_choices(target: str, cpu: str, words: list[str]) -> None:
    with pytest.raises(OptionError) as e:
        resolve_cpu(target, cpu)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words)


def test_unknown_cpu_on_the_command_line(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "ember.cli", "compile", str(_conv_model(tmp_path / "c.onnx")), "-o",
                          str(tmp_path / "out"), "--cpu", "zen3"], capture_output=True, text=True)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1 and lines[0].startswith("ember: error: --cpu 'zen3'")
    assert "znver3" in lines[0] and not (tmp_path / "out").exists()


def test_cpu_params_replace_family_values() -> None:
    family = with_params(FAMILIES["avx2"], ("mm_kc=384", "row_panels_min_k=none", "matmul_panels=false"))
    assert (family.mm_kc, family.row_panels_min_k, family.matmul_panels) == (384, None, False)
    assert family.name == "avx2+mm_kc=384,row_panels_min_k=None,matmul_panels=False"
    avx2 = FAMILIES["avx2"]
    back = dataclasses.replace(family, name=avx2.name, mm_kc=avx2.mm_kc, row_panels_min_k=avx2.row_panels_min_k,
                               matmul_panels=avx2.matmul_panels)
    assert back == avx2  # nothing else changed


@pytest.mark.parametrize(("target", "param", "words"), [
    ("host", "mm_kcc=3", ["'mm_kcc=3'", "KEY=VALUE", "nhwc_min_convs"]),
    ("host", "simd=avx512", ["'simd=avx512'", "KEY one of"]),
    ("host", "matmul_panels=7", ["matmul_panels takes true or false"]),
    ("host", "mm_kc=none", ["mm_kc takes an integer"]),
    ("host", "mm_panel=24", ["mm_panel=24", "(16, 32)"]),
    ("host", "mm_kc=4096", ["mm_kc=4096", "16..1024"]),
    ("cortex-m4", "mm_kc=128", ["target 'cortex-m4' has no CPU family"]),
    ("host", "narrow_panel=64", ["narrow_panel=64", "only AVX-512 families"]),
    ("host", "mm_quad_strips=true", ["mm_quad_strips=true", "only AVX-512 families"]),
])
def test_bad_cpu_param_is_one_line(target: str, param: str, words: list[str]) -> None:
    with pytest.raises(OptionError) as err:
        resolve_cpu(target, "x86-64" if target == "host" else None, (param,))
    assert "\n" not in str(err.value) and all(w in str(err.value) for w in words), str(err.value)


def test_cpu_params_reach_the_bundle(tmp_path: Path) -> None:
    # No Winograd, whatever the map; a K block of 128: in the conv choice, NAME.c's macros and NAME.json.
    model, out = _conv_model(tmp_path / "c.onnx"), tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "ember.cli", "compile", str(model), "-o", str(out), "--cpu", "x86-64",
                          "--cpu-param", "mm_kc=128", "--cpu-param", "winograd_min_pixels=1000000"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "c.json").read_text())
    assert manifest["target_info"]["cpu_choice"]["family"]["name"] == "x86-64+mm_kc=128,winograd_min_pixels=1000000"
    assert manifest["options"]["cpu_params"] == ["mm_kc=128", "winograd_min_pixels=1000000"]
    assert "#define EMBER_MM_KC 128" in (out / "c.c").read_text()
    assert [n["op"] for n in manifest["nodes"]] != ["ConvWinograd"]
    x = np.random.default_rng(1).standard_normal((1, 16, 16, 16)).astype(np.float32)
    (want,) = onnxruntime_session(str(model)).run(None, {"x": x})
    np.testing.assert_allclose(ember.load(out).run({"x": x})["y"], want, rtol=1e-4, atol=1e-4)


def _conv_model(path: Path, c: int = 16, m: int = 16, hw: int = 16, k: int = 3) -> Path:
    """A k x k convolution, same padding, c -> m channels on an hw x hw map."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((m, c, k, k)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[k // 2] * 4)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, hw, hw])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_family_thresholds_choose_the_conv_algorithm(tmp_path: Path) -> None:
    model = str(_conv_model(tmp_path / "c.onnx"))
    ops = []
    for family in (DEFAULT_FAMILY, dataclasses.replace(DEFAULT_FAMILY, winograd_min_pixels=10**6)):
        graph, _ = load_graph(model, CompileOptions())
        choose_conv_algorithms(graph, family)
        ops.append([n.op for n in graph.nodes])
    assert ops[0] == ["ConvWinograd"] and "ConvWinograd" not in ops[1]


def test_avx2_keeps_7x7_maps_off_the_pixel_major_path(tmp_path: Path) -> None:
    # 3x3 over 256 channels at 7x7: pixel-major on AVX-512, where it was measured faster; on AVX2 Winograd
    # F(2x2) (measured faster than ConvShifted and im2col on Zen 3).
    model = str(_conv_model(tmp_path / "c.onnx", c=256, m=64, hw=7))
    chosen = {}
    for family in ("avx512", "avx2"):
        graph, _ = load_graph(model, CompileOptions())
        choose_conv_algorithms(graph, FAMILIES[family])
        chosen[family] = [n.op for n in graph.nodes]
    assert chosen == {"avx512": ["ConvNarrow"], "avx2": ["ConvWinograd"]}


def test_cpu_choice_reaches_the_bundle_and_runs_here(tmp_path: Path) -> None:
    model = _conv_model(tmp_path / "c.onnx")
    x = np.random.default_rng(1).standard_normal((1, 16, 16, 16)).astype(np.float32)
    # x86-64-v3 (AVX2) runs on any CPU with AVX2; the plain x86-64 build runs anywhere.
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    cpus = ["x86-64", "x86-64-v3"] if " avx2" in flags and " fma" in flags else ["x86-64"]
    results = []
    for cpu in cpus:
        out = tmp_path / cpu
        res = subprocess.run([sys.executable, "-m", "ember.cli", "compile", str(model), "-o", str(out), "--cpu", cpu],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        manifest = json.loads((out / "c.json").read_text())
        choice = manifest["target_info"]["cpu_choice"]
        assert choice["cpu"] == cpu and choice["family"]["name"] == CPUS[cpu]
        assert f"-march={cpu}" in manifest["compiler"]
        family = FAMILIES[CPUS[cpu]]
        source = (out / "c.c").read_text()
        assert f"#define EMBER_MM_KC {family.mm_kc}" in source
        assert f"#define EMBER_MM_PREFETCH {int(family.mm_prefetch)}" in source
        results.append(ember.load(out).run({"x": x})["y"])

    (want,) = onnxruntime_session(str(model)).run(None, {"x": x})
    for y in results:
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_avx2_packs_constant_matmul_weights_in_panels(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    b = numpy_helper.from_array(rng.standard_normal((48, 64)).astype(np.float32), "b")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "b"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 7, 64])], [b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "mm.onnx")
    for family, op in ((DEFAULT_FAMILY, "MatMul"), (FAMILIES["avx2"], "MatMulPanels")):
        graph, _ = load_graph(str(tmp_path / "mm.onnx"), CompileOptions())
        choose_conv_algorithms(graph, family)
        assert [n.op for n in graph.nodes] == [op, "Relu"]
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " avx2" not in flags or " fma" not in flags:
        return

    x = rng.standard_normal((2, 7, 48)).astype(np.float32)
    bundle = ember.compile(tmp_path / "mm.onnx", tmp_path / "out", cpu="x86-64-v3")
    assert [n["op"] for n in bundle.manifest["nodes"]] == ["MatMulPanels+Relu"]  # Relu runs in the tiles
    (want,) = onnxruntime_session(str(tmp_path / "mm.onnx")).run(None, {"x": x})
    np.testing.assert_allclose(bundle.run({"x": x})["y"], want, rtol=1e-5, atol=1e-5)


def _strided_stem(path: Path, c: int, m: int, h: int, w: int, k: tuple[int, int]) -> Path:
    wt = numpy_helper.from_array(np.random.default_rng(0).standard_normal((m, c, *k)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [wt])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(("model", "default", "avx2"), [
    # 1x1 conv to 1280 channels on a 3x3 map (MobileNetV2 at 96x96): pixel-major on AVX2 too, where 9 pixels
    # would fill one vector and one lane of the next.
    (lambda p: _conv_model(p, c=112, m=1280, hw=3, k=1), "ConvNarrow", "ConvNarrow"),
    # ... but at 4x4 (two full AVX2 vectors) the plain kernel stays on AVX2.
    (lambda p: _conv_model(p, c=16, m=64, hw=4, k=1), "ConvNarrow", "Conv"),
    # A 3-channel 3x3 stem (K = 27) and the keyword spotter's 1-channel 10x4 stem (rows of 5 outputs):
    # ConvShifted on AVX2, im2col on the default family (K < 64).
    (lambda p: _strided_stem(p, c=3, m=16, h=96, w=96, k=(3, 3)), "Conv", "ConvShifted"),
    (lambda p: _strided_stem(p, c=1, m=16, h=49, w=10, k=(10, 4)), "Conv", "ConvShifted"),
])
def test_avx2_small_map_and_small_stem_choices(tmp_path: Path, model, default: str, avx2: str) -> None:
    path = str(model(tmp_path / "c.onnx"))
    chosen = []
    for family in (DEFAULT_FAMILY, FAMILIES["avx2"]):
        graph, _ = load_graph(path, CompileOptions())
        choose_conv_algorithms(graph, family)
        chosen.append([n.op for n in graph.nodes])
    assert chosen == [[default], [avx2]]
