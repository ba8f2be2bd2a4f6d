"""Multi-threaded bundles (`--threads N`): the same results as one thread, a pool that is ThreadSanitizer
clean with two application threads running the bundle at once, and a clear refusal on targets without
POSIX threads."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.cli import main
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

HERE = Path(__file__).parent
CFLAGS = ["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror"]


def _const(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(arr, name)


def _convnet(path: Path) -> Path:
    """Pointwise, depthwise, strided, Winograd and pixel-major (ConvNarrow) convolutions and a matmul, each big
    enough to be divided."""
    rng = np.random.default_rng(7)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    inits = [_const("w1", w(64, 16, 1, 1)), _const("b1", w(64)), _const("wd", w(64, 1, 3, 3)), _const("bd", w(64)),
             _const("w2", w(72, 64, 3, 3)), _const("b2", w(72)), _const("w3", w(72, 72, 3, 3)), _const("b3", w(72)),
             _const("w4", w(64, 72, 3, 3)), _const("b4", w(64)), _const("shape", np.array([64, 64], np.int64)),
             _const("wm", w(64, 160))]
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["c2"], group=64, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w2", "b2"], ["c3"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c3", "w3", "b3"], ["c4"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c4", "w4", "b4"], ["c5"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c5", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "wm"], ["output"]),
    ]
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 16, 32, 32])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [64, 160])
    graph = helper.make_graph(nodes, "convnet", [x], [y], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _int8(path: Path) -> Path:
    """QLinearConv (per-channel weight scales; a depthwise one too) and QLinearMatMul: uint8 in, constant
    uint8 weights, uint8 out."""
    rng = np.random.default_rng(3)

    def u8(*shape: int) -> np.ndarray:
        return rng.integers(0, 256, shape).astype(np.uint8)

    def scalar(name: str, v: float, dtype: type) -> onnx.TensorProto:
        return _const(name, np.array(v, dtype))

    inits = [scalar("x_scale", 0.02, np.float32), scalar("x_zp", 128, np.uint8), _const("w", u8(64, 32, 3, 3)),
             _const("w_scale", rng.uniform(0.002, 0.01, 64).astype(np.float32)), _const("w_zp", u8(64)),
             _const("bias", rng.integers(-5000, 5000, 64).astype(np.int32)), scalar("y_scale", 0.5, np.float32),
             scalar("y_zp", 100, np.uint8), _const("b", u8(256, 96)), scalar("b_scale", 0.01, np.float32),
             scalar("b_zp", 120, np.uint8), _const("wd", u8(64, 1, 3, 3)),
             _const("wd_scale", rng.uniform(0.01, 0.05, 64).astype(np.float32)), _const("wd_zp", u8(64))]
    nodes = [
        helper.make_node("QLinearConv", ["input", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp",
                                         "bias"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("QLinearMatMul", ["rows", "x_scale", "x_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"],
                         ["product"]),
        helper.make_node("QLinearConv", ["planes", "x_scale", "x_zp", "wd", "wd_scale", "wd_zp", "y_scale", "y_zp"],
                         ["depthwise"], group=64, pads=[1, 1, 1, 1]),
    ]
    ins = [helper.make_tensor_value_info("input", TensorProto.UINT8, [1, 32, 16, 16]),
           helper.make_tensor_value_info("rows", TensorProto.UINT8, [1, 64, 256]),
           helper.make_tensor_value_info("planes", TensorProto.UINT8, [1, 64, 32, 32])]
    outs = [helper.make_tensor_value_info("conv", TensorProto.UINT8, [1, 64, 16, 16]),
            helper.make_tensor_value_info("product", TensorProto.UINT8, [1, 64, 96]),
            helper.make_tensor_value_info("depthwise", TensorProto.UINT8, [1, 64, 32, 32])]
    graph = helper.make_graph(nodes, "int8", ins, outs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture(scope="module")
def convnet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ember.Bundle, ember.Bundle]:
    root = tmp_path_factory.mktemp("threads")
    model = _convnet(root / "convnet.onnx")
    return model, ember.compile(model, root / "t1"), ember.compile(model, root / "t3", threads=3)


def _input(seed: int) -> dict[str, np.ndarray]:
    return {"input": np.random.default_rng(seed).standard_normal((1, 16, 32, 32)).astype(np.float32)}


def test_threaded_float_bundle_matches_one_thread(convnet: tuple[Path, ember.Bundle, ember.Bundle]) -> None:
    model, serial, threaded = convnet
    assert threaded.threads == 3 and threaded.manifest["threads"]["divided"] == 6
    ops = [n["op"] for n in threaded.manifest["nodes"]]
    # Algorithms per CPU family (toolchain/cpus.py): the 8x8 stride-2 layer may be ConvNarrow, the 3x3 one
    # Winograd F(4x4) (AVX2 from 16 tiles), the matmul with constant B MatMulPanels.
    assert ops[:3] + ops[5:6] == ["Conv+Relu", "Conv+Clip", "ConvShifted", "Reshape"]
    assert ops[3] in ("ConvWinograd", "ConvWinograd4")
    assert ops[4] in ("ConvNarrow", "ConvShifted") and ops[6] in ("MatMul", "MatMulPanels")
    assert threaded.manifest["threads"]["link_flags"] == ["-pthread"]
    header = (threaded.path / "convnet.h").read_text()
    assert "#define CONVNET_THREADS 3" in header and "int convnet_set_threads(int n);" in header
    x = _input(1)
    want = serial.run(x)["output"]
    got = threaded.run(x)["output"]
    assert_close(got, want, "3 threads vs 1", rel=1e-5)
    assert_close(got, onnxruntime_outputs(model, x)["output"], "3 threads vs onnxruntime")
    # The parts are fixed at compile time: on fewer threads the bundle computes the very same bytes.
    for n in (1, 2):
        threaded.set_threads(n)
        assert np.array_equal(threaded.run(x)["output"], got), f"{n} threads"
    threaded.set_threads(3)
    with pytest.raises(ember.errors.BundleError, match="runs on 1 to 3 threads"):
        threaded.set_threads(4)


def test_python_threads_share_a_threaded_bundle(convnet: tuple[Path, ember.Bundle, ember.Bundle]) -> None:
    """Bundle.run from several Python threads at once: one call has the pool, the others run alone."""
    _, serial, threaded = convnet
    xs = [_input(10 + i) for i in range(4)]
    want = [serial.run(x)["output"] for x in xs]
    got: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        for _ in range(3):
            got[i] = threaded.run(xs[i])["output"]

    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i, w in enumerate(want):
        assert_close(got[i], w, f"python thread {i}", rel=1e-5)


def _rowwise(path: Path) -> Path:
    """What is divided besides convolutions by channels and matmuls by rows: an im2col and a 1x1 convolution
    (by output pixels; their weights in row panels where the CPU family has them, as with one thread), a fused
    elementwise chain with a per-channel operand (broadcast along the divided axis), a plain Add, max and average
    pooling, global pooling, softmax over rows, LayerNormalization and its skip form."""
    rng = np.random.default_rng(11)
    inits = [_const("bias", rng.standard_normal((64, 1, 1)).astype(np.float32)),
             _const("shape", np.array([1, 64, 64 * 64], np.int64)),
             _const("gamma", rng.standard_normal(4096).astype(np.float32)),
             _const("beta", rng.standard_normal(4096).astype(np.float32)),
             _const("wc", (rng.standard_normal((8, 64, 3, 3)) / 24).astype(np.float32)),
             _const("wp", (rng.standard_normal((32, 64, 1, 1)) / 8).astype(np.float32))]
    nodes = [
        helper.make_node("Add", ["input", "bias"], ["a"]),
        helper.make_node("Tanh", ["a"], ["t"]),
        helper.make_node("Mul", ["t", "input"], ["m"]),
        helper.make_node("Add", ["m", "input"], ["s"]),
        helper.make_node("MaxPool", ["s"], ["mp"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["s"], ["gap"]),
        helper.make_node("Reshape", ["s", "shape"], ["rows"]),
        helper.make_node("Softmax", ["rows"], ["sm"], axis=-1),
        helper.make_node("LayerNormalization", ["rows", "gamma", "beta"], ["ln"], axis=-1),
        helper.make_node("Add", ["ln", "sm"], ["sum"]),
        helper.make_node("LayerNormalization", ["sum", "gamma"], ["out"], axis=-1),
        # Dilated 3x3 on a wide map: im2col (no Winograd, no ConvShifted), divided along its output pixels.
        helper.make_node("Conv", ["s", "wc"], ["conv"], dilations=[2, 2], pads=[2, 2, 2, 2]),
        # 1x1 on the same map: one matmul, divided along its output pixels (columns).
        helper.make_node("Conv", ["s", "wp"], ["pw"]),
    ]
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 64, 64, 64])
    outs = [helper.make_tensor_value_info("ap", TensorProto.FLOAT, [1, 64, 31, 31]),
            helper.make_tensor_value_info("gap", TensorProto.FLOAT, [1, 64, 1, 1]),
            helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 64, 4096]),
            helper.make_tensor_value_info("conv", TensorProto.FLOAT, [1, 8, 64, 64]),
            helper.make_tensor_value_info("pw", TensorProto.FLOAT, [1, 32, 64, 64])]
    graph = helper.make_graph(nodes, "rowwise", [x], outs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_elementwise_pooling_and_row_kernels_divide(tmp_path: Path) -> None:
    model = _rowwise(tmp_path / "rowwise.onnx")
    serial = ember.compile(model, tmp_path / "t1")
    threaded = ember.compile(model, tmp_path / "t2", threads=2)
    divided = {n["op"] for n in threaded.manifest["nodes"]} - {"Reshape"}
    assert threaded.manifest["threads"]["divided"] == len(threaded.manifest["nodes"]) - 1, divided
    assert {"MaxPool", "AveragePool", "GlobalAveragePool", "Softmax", "Conv"} <= divided
    assert any(op.startswith("Fused(") for op in divided) and any("LayerNormalization" in op for op in divided)
    x = {"input": np.random.default_rng(41).standard_normal((1, 64, 64, 64)).astype(np.float32)}
    got, want, ref = threaded.run(x), serial.run(x), onnxruntime_outputs(model, x)
    family = (serial.manifest["target_info"].get("cpu_choice") or {}).get("family", {})
    if family.get("row_panels_min_k") is not None:
        # Pixel parts read all the weights: they keep the row panels one thread reads (ember_matmul_core_ap).
        assert (threaded.path / "rowwise.c").read_text().count("ember_matmul_core_ap(((float") == 4
    for k in ("ap", "gap", "out", "conv", "pw"):
        assert_close(got[k], want[k], f"{k}: 2 threads vs 1", rel=1e-5)
        assert_close(got[k], ref[k], f"{k}: 2 threads vs onnxruntime")
    got_c = cdriver.run(threaded.path, tmp_path / "c", x, sanitize=True, cflags=("-pthread",))
    for k in ("out", "conv", "pw"):
        assert_close(got_c[k], want[k], f"{k}: sanitized C driver, 2 threads", rel=1e-5)


def test_int8_threaded_bundle_is_bit_identical(tmp_path: Path) -> None:
    model = _int8(tmp_path / "int8.onnx")
    serial = ember.compile(model, tmp_path / "t1")
    threaded = ember.compile(model, tmp_path / "t2", threads=2)
    assert threaded.manifest["threads"]["divided"] == 3
    rng = np.random.default_rng(5)
    x = {"input": rng.integers(0, 256, (1, 32, 16, 16)).astype(np.uint8),
         "rows": rng.integers(0, 256, (1, 64, 256)).astype(np.uint8),
         "planes": rng.integers(0, 256, (1, 64, 32, 32)).astype(np.uint8)}
    got, want, ref = threaded.run(x), serial.run(x), onnxruntime_outputs(model, x)
    for k in ("conv", "product", "depthwise"):
        assert np.array_equal(got[k], want[k]), k
        assert np.abs(got[k].astype(np.int32) - ref[k].astype(np.int32)).max() <= 1, k


def _projections(path: Path) -> Path:
    """Two products with constant B (MatMulPanels): a transformer's projection, B (64 x 320) bigger than A (48 x
    64), with Relu after it; then one of more rows than columns (320 x 48 by 48 x 64 after a Transpose)."""
    rng = np.random.default_rng(17)
    inits = [_const("w1", (rng.standard_normal((64, 320)) / 8).astype(np.float32)),
             _const("w2", (rng.standard_normal((48, 64)) / 7).astype(np.float32))]
    nodes = [helper.make_node("MatMul", ["input", "w1"], ["p"]), helper.make_node("Relu", ["p"], ["wide"]),
             helper.make_node("Transpose", ["wide"], ["t"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["t", "w2"], ["tall"])]
    graph = helper.make_graph(nodes, "proj", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 48, 64])],
                              [helper.make_tensor_value_info("wide", TensorProto.FLOAT, [1, 48, 320]),
                               helper.make_tensor_value_info("tall", TensorProto.FLOAT, [1, 320, 64])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_products_with_panels_divide_along_the_bigger_operand(tmp_path: Path) -> None:
    """B bigger than A: whole panels of B's columns per part (3 calls of the kernel, each on its panels); A
    bigger: rows (no column offsets). The same bytes as one thread either way."""
    model = _projections(tmp_path / "proj.onnx")
    serial = ember.compile(model, tmp_path / "t1")
    threaded = ember.compile(model, tmp_path / "t3", threads=3)
    ops = [n["op"] for n in threaded.manifest["nodes"]]
    if ops.count("MatMulPanels+Relu") + ops.count("MatMulPanels") != 2:
        pytest.skip(f"this CPU family packs no matmul panels: {ops}")
    assert threaded.manifest["threads"]["divided"] == 2
    c = (threaded.path / "proj.c").read_text()
    assert c.count("ember_matmul_panels_f32(") - 1 == 6
    if "EMBER_MM_PANEL 16" in c:  # AVX2's panels: 20 of them, parts of 6, 7 and 7
        assert ")) + 96, 320," in c and ")) + 208, 320," in c
    x = {"input": np.random.default_rng(3).standard_normal((1, 48, 64)).astype(np.float32)}
    got, want, ref = threaded.run(x), serial.run(x), onnxruntime_outputs(model, x)
    for k in ("wide", "tall"):
        assert np.array_equal(got[k], want[k]), f"{k}: 3 threads vs 1"
        assert_close(got[k], ref[k], f"{k}: 3 threads vs onnxruntime")


def test_pool_is_thread_sanitizer_clean(convnet: tuple[Path, ember.Bundle, ember.Bundle], tmp_path: Path) -> None:
    """Two application threads, each running the multi-threaded bundle on its own regions, under TSan."""
    _, _, threaded = convnet
    text = (HERE / "pool_main.c").read_text().replace("@name@", "convnet").replace("@NAME@", "CONVNET")
    main = tmp_path / "main.c"
    main.write_text(text)
    exe = tmp_path / "app"
    cdriver.run_cmd(["cc", *CFLAGS, "-g", "-fsanitize=thread", "-I", str(threaded.path), str(main),
                     str(threaded.path / "convnet.c"), "-pthread", "-o", str(exe)])
    args = [str(exe), str(threaded.path / "convnet.weights.bin")]
    xs = [_input(21), _input(22)]
    for i, x in enumerate(xs):
        (tmp_path / f"in{i}.bin").write_bytes(x["input"].tobytes())
        args.append(str(tmp_path / f"in{i}.bin"))
    args += [str(tmp_path / "out0.bin"), str(tmp_path / "out1.bin")]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout}\n{res.stderr[-4000:]}"
    assert "mismatches: 0 0" in res.stdout
    for i, x in enumerate(xs):
        got = np.frombuffer((tmp_path / f"out{i}.bin").read_bytes(), np.float32).reshape(64, 160)
        assert_close(got, convnet[1].run(x)["output"], f"thread {i}", rel=1e-5)


def test_threaded_bundle_is_asan_ubsan_clean(convnet: tuple[Path, ember.Bundle, ember.Bundle],
                                             tmp_path: Path) -> None:
    """NAME.c with its pool, -Wall -Wextra -Werror, AddressSanitizer and UBSan, in a plain C driver."""
    _, serial, threaded = convnet
    x = _input(31)
    got = cdriver.run(threaded.path, tmp_path, x, sanitize=True, cflags=("-pthread",))
    assert_close(got["output"], serial.run(x)["output"], "sanitized, 3 threads", rel=1e-5)


def _ember(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("target", "what"), [("cortex-m4", "a microcontroller"), ("wasm32", "a WebAssembly")])
def test_threads_refused_without_posix_threads(convnet: tuple[Path, ember.Bundle, ember.Bundle], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str], target: str, what: str) -> None:
    code, _, err = _ember(capsys, "compile", str(convnet[0]), "-o", str(tmp_path / "b"), "--target", target,
                          "--threads", "2")
    assert code == 1
    assert err.strip() == (f"ember: error: --threads 2: target '{target}' is {what} target; multi-threaded "
                           "bundles need POSIX threads (host and Linux targets)")
    assert not (tmp_path / "b").exists()


def test_bench_and_run_take_threads(convnet: tuple[Path, ember.Bundle, ember.Bundle], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    _, serial, threaded = convnet
    # The per-operator profile is a second build of NAME.c, linked with -pthread too.
    code, out, err = _ember(capsys, "bench", str(threaded.path), "--threads", "2", "--rounds", "3", "--warmup", "1")
    assert code == 0, err
    assert "3 rounds after 1 warm-up, 2 threads" in out and "per operator" in out
    np.save(tmp_path / "x.npy", _input(4)["input"])
    code, _, err = _ember(capsys, "run", str(threaded.path), "--threads", "1", "--input", f"input={tmp_path / 'x.npy'}",
                          "--output", str(tmp_path / "o.npz"))
    assert code == 0, err
    assert_close(np.load(tmp_path / "o.npz")["output"], serial.run(_input(4))["output"], "ember run", rel=1e-5)
    code, out, _ = _ember(capsys, "info", str(threaded.path))
    assert code == 0 and "threads: up to 3, 6 node(s) divided among them (link with -pthread)" in out
    code, _, err = _ember(capsys, "bench", str(serial.path), "--threads", "2")
    assert code == 1
    assert err.strip() == "ember: error: threads 2: bundle convnet runs on 1 to 1 threads (compiled without --threads)"
