"""One data vocabulary (`--input NAME=FILE`) for run, validate, bench and profile: stacks, images, folders,
int8 bundles fed float data, validation thresholds by bundle kind, labels, and one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from ember.cli import main
from ember.errors import BundleError
from ember.quant.data import InputInfo, Preprocess, load_image
from ember.runtime.loader import dequantize_array, load, quantize_array

from .helpers import save_model

SHAPE = (1, 1, 8, 8)
SAMPLES = 24


def _digits(path: Path) -> Path:
    """A small classifier: Conv -> Relu -> MatMul -> Softmax over 10 classes of an 8x8 gray image."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32) * 0.5, "w")
    fc = numpy_helper.from_array(rng.standard_normal((4 * 6 * 6, 10)).astype(np.float32) * 0.2, "fc")
    sh = numpy_helper.from_array(np.array([1, -1], np.int64), "sh")
    nodes = [helper.make_node("Conv", ["data", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Reshape", ["r", "sh"], ["f"]), helper.make_node("MatMul", ["f", "fc"], ["l"]),
             helper.make_node("Softmax", ["l"], ["prob"], axis=1)]
    return save_model(path, nodes, [helper.make_tensor_value_info("data", TensorProto.FLOAT, list(SHAPE))],
                      [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], [w, fc, sh])


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(capsys, *args: str) -> str:
    code, _, err = cli(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("ember: error: "), err
    return lines[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """digits.onnx, a stack of samples (calib.npy: [SAMPLES, 1, 1, 8, 8]), a float bundle and an
    --io int8 bundle profiled on the stack."""
    d = tmp_path_factory.mktemp("data")
    model = _digits(d / "digits.onnx")
    np.save(d / "calib.npy", np.random.default_rng(1).random((SAMPLES, *SHAPE)).astype(np.float32))
    assert main(["compile", str(model), "-o", str(d / "f")]) == 0
    assert main(["profile", str(model), str(d / "calib.npy"), "-o", str(d / "p.yaml")]) == 0
    assert main(["compile", str(model), "-o", str(d / "q"), "--profile", str(d / "p.yaml"), "--quantize", "int8",
                 "--io", "int8"]) == 0
    return d


def test_profile_takes_a_stack_positionally_and_by_name(work: Path, capsys) -> None:
    doc = yaml.safe_load((work / "p.yaml").read_text())  # the fixture's positional form
    assert doc["samples"] == SAMPLES
    code, out, err = cli(capsys, "profile", str(work / "digits.onnx"), "--input", f"data={work / 'calib.npy'}",
                         "-o", str(work / "p2.yaml"))
    assert code == 0, err
    assert f"from {SAMPLES} sample(s)" in out
    assert yaml.safe_load((work / "p2.yaml").read_text())["tensors"] == doc["tensors"]
    line = one_line(capsys, "profile", str(work / "digits.onnx"), str(work / "calib.npy"), "--input",
                    f"data={work / 'calib.npy'}", "-o", str(work / "p3.yaml"))
    assert "not both" in line


def test_run_loops_over_a_stack(work: Path, capsys) -> None:
    code, out, err = cli(capsys, "run", str(work / "f"), "--input", f"data={work / 'calib.npy'}", "--output",
                         str(work / "o.npz"))
    assert code == 0, err
    got = np.load(work / "o.npz")["prob"]
    assert got.shape == (SAMPLES, 1, 10)
    bundle, calib = load(work / "f"), np.load(work / "calib.npy")
    for k in (0, 7, SAMPLES - 1):
        np.testing.assert_array_equal(got[k], bundle.run({"data": calib[k]})["prob"])
    code, out, _ = cli(capsys, "run", str(work / "f"), "--input", str(work / "calib.npy"), "--top-k", "2")
    assert code == 0 and len(re.findall(r"^prob\[\d+\]: top-2: ", out, re.M)) == SAMPLES


def test_run_reads_images_and_folders(work: Path, capsys) -> None:
    folder = work / "imgs"
    folder.mkdir()
    rng = np.random.default_rng(2)
    for name in ("b.png", "a.png"):
        Image.fromarray(rng.integers(0, 256, (8, 8), dtype=np.uint8)).save(folder / name)
    prep = ("--image-mode", "neg1to1", "--mean", "0.1", "--std", "0.5")
    code, _, err = cli(capsys, "run", str(work / "f"), "--input", f"data={folder / 'a.png'}", *prep, "--output",
                       str(work / "one.npz"))
    assert code == 0, err
    info = InputInfo("data", SHAPE, np.dtype(np.float32))
    x = load_image(folder / "a.png", info, Preprocess("neg1to1", mean=(0.1,), std=(0.5,)))
    bundle = load(work / "f")
    np.testing.assert_array_equal(np.load(work / "one.npz")["prob"], bundle.run({"data": x[None]})["prob"])
    code, _, err = cli(capsys, "run", str(work / "f"), "--input", f"data={folder}", *prep, "--output",
                       str(work / "two.npz"))
    assert code == 0, err
    both = np.load(work / "two.npz")["prob"]
    assert both.shape == (2, 1, 10)
    np.testing.assert_array_equal(both[0], np.load(work / "one.npz")["prob"])  # sorted by name: a.png first


def test_files_that_are_no_data_are_one_line(work: Path, capsys) -> None:
    (work / "notes.npy").write_text("not an array\n")
    line = one_line(capsys, "run", str(work / "f"), "--input", f"data={work / 'notes.npy'}")
    assert "notes.npy" in line and "not an image or array file" in line and ".npy/.npz" in line
    np.save(work / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    line = one_line(capsys, "run", str(work / "f"), "--input", f"data={work / 'objects.npy'}")
    assert "objects.npy" in line and "Python objects" in line and "pickle" not in line
    np.save(work / "wrong.npy", np.zeros((3, 7), np.float32))
    for cmd in ("run", "validate"):
        args = (cmd, str(work / "digits.onnx"), str(work / "f")) if cmd == "validate" else (cmd, str(work / "f"))
        line = one_line(capsys, *args, "--input", f"data={work / 'wrong.npy'}")
        assert "shape [3, 7] does not fit input 'data' [1, 1, 8, 8]" in line
    line = one_line(capsys, "run", str(work / "f"), "--input", f"label={work / 'calib.npy'}")
    assert "--input label: the bundle has no input of that name (inputs: data)" in line


def test_int8_bundle_takes_float_data_and_gives_float_outputs(work: Path, capsys) -> None:
    q = load(work / "q")
    (qin,), (qout,) = q.inputs, q.outputs
    assert qin["dtype"] == "int8" and qin["quantization"] and qout["quantization"]
    x = np.load(work / "calib.npy")[3]
    s_in, z_in = np.float32(qin["quantization"]["scale"][0]), qin["quantization"]["zero_point"][0]
    xq = np.clip(np.rint(x / s_in) + z_in, -128, 127).astype(np.int8)  # ONNX QuantizeLinear, by hand
    np.testing.assert_array_equal(quantize_array(x, qin["quantization"], np.dtype(np.int8)), xq)
    raw = q.run({"data": xq})["prob"]
    np.testing.assert_array_equal(q.run({"data": x})["prob"], raw)
    s_out, z_out = qout["quantization"]["scale"][0], qout["quantization"]["zero_point"][0]
    np.testing.assert_allclose(q.run({"data": x}, dequantize=True)["prob"], (raw.astype(np.float64) - z_out) * s_out,
                               rtol=1e-6)
    deq = np.empty((1, 10), np.float32)  # out=: float32 arrays for the outputs dequantize=True makes float
    assert q.run({"data": x}, dequantize=True, out=[deq])["prob"] is deq
    np.testing.assert_array_equal(deq, q.run({"data": x}, dequantize=True)["prob"])
    with pytest.raises(BundleError, match=r"out 'prob': float32\[1, 10\]; the bundle writes .* int8\[1, 10\]"):
        q.run({"data": x}, out=[deq])
    code, _, err = cli(capsys, "run", str(work / "q"), "--input", f"data={work / 'calib.npy'}", "--dequantize",
                       "--output", str(work / "qo.npz"))
    assert code == 0, err
    got = np.load(work / "qo.npz")["prob"]
    assert got.dtype == np.float32 and got.shape == (SAMPLES, 1, 10)
    np.testing.assert_array_equal(got[3], dequantize_array(raw, qout["quantization"]))


def test_validate_thresholds_know_the_bundle(work: Path, capsys) -> None:
    data = ("--input", f"data={work / 'calib.npy'}")
    code, out, err = cli(capsys, "validate", str(work / "digits.onnx"), str(work / "q"), *data, "--json",
                         str(work / "v.json"))
    assert code == 0, out + err
    assert f"int8 bundle, {SAMPLES} sample(s)" in out and out.strip().endswith("PASS")
    result = json.loads((work / "v.json").read_text())
    assert result["ok"] and result["kind"] == "int8" and result["samples"] == SAMPLES
    assert result["thresholds"]["min_cosine"] == 0.99 and result["outputs"][0]["cosine"] >= 0.99
    code, _, err = cli(capsys, "report", str(work / "q"), "--validation", str(work / "v.json"), "-o",
                       str(work / "r.html"))
    assert code == 0 and "Validation" in (work / "r.html").read_text(), err
    # The float threshold the int8 bundle used to be held to fails it: the defaults differ by bundle kind.
    code, out, _ = cli(capsys, "validate", str(work / "digits.onnx"), str(work / "q"), *data, "--max-error", "1e-4")
    assert code == 1 and "FAIL (thresholds: rel err <= 0.0001" in out
    code, out, _ = cli(capsys, "validate", str(work / "digits.onnx"), str(work / "f"), *data)
    assert code == 0 and f"float bundle, {SAMPLES} sample(s)" in out
    code, out, _ = cli(capsys, "validate", str(work / "digits.onnx"), str(work / "q"))  # random, in int8's range
    assert code == 0, out
    # Float inputs of an int8 bundle: random data inside the profile's range (standard normal data, mostly
    # outside the calibrated [0, 1), gives cosine ~0.9 on this model).
    assert main(["compile", str(work / "digits.onnx"), "-o", str(work / "qf"), "--profile", str(work / "p.yaml"),
                 "--quantize", "int8"]) == 0
    code, out, _ = cli(capsys, "validate", str(work / "digits.onnx"), str(work / "qf"))
    assert code == 0 and "note:" not in out, out


def test_validate_labels_report_accuracy(work: Path, capsys) -> None:
    calib = np.load(work / "calib.npy")
    ref = np.stack([load(work / "f").run({"data": x})["prob"].reshape(-1) for x in calib])
    labels = np.random.default_rng(3).integers(0, 10, SAMPLES)
    labels[:12] = ref[:12].argmax(1)  # half right, by construction
    (work / "labels.txt").write_text("\n".join(map(str, labels)) + "\n")
    code, out, err = cli(capsys, "validate", str(work / "digits.onnx"), str(work / "f"), "--input",
                         f"data={work / 'calib.npy'}", "--labels", str(work / "labels.txt"))
    assert code == 0, out + err
    top5 = np.argsort(-ref, axis=1, kind="stable")[:, :5]
    want = (np.mean(ref.argmax(1) == labels), np.mean(np.any(top5 == labels[:, None], axis=1)))
    for who in ("bundle", "reference"):
        m = re.search(rf"accuracy of {who}\s+on 'prob': top-1 ([\d.]+)\s+top-5 ([\d.]+)", out)
        assert m, out
        assert (float(m[1]), float(m[2])) == pytest.approx(want, abs=1e-4)
    np.save(work / "short.npy", labels[:5])
    line = one_line(capsys, "validate", str(work / "digits.onnx"), str(work / "f"), "--input",
                    f"data={work / 'calib.npy'}", "--labels", str(work / "short.npy"))
    assert f"5 labels for {SAMPLES} samples" in line


def test_validate_random_ids_stay_inside_the_embedding(tmp_path: Path, capsys) -> None:
    emb = numpy_helper.from_array(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32), "emb")
    model = save_model(tmp_path / "emb.onnx",
                       [helper.make_node("Cast", ["ids"], ["i32"], to=TensorProto.INT32),
                        helper.make_node("Gather", ["emb", "i32"], ["y"], axis=0)],
                       [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 64])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 4])], [emb])
    assert main(["compile", str(model), "-o", str(tmp_path / "b")]) == 0
    for seed in ("0", "1", "2"):  # ids in [0, 10) would leave the 5-row table on any of these
        code, out, err = cli(capsys, "validate", str(model), str(tmp_path / "b"), "--seed", seed)
        assert code == 0, out + err
    np.save(tmp_path / "ids.npy", np.full((1, 64), 7, np.int64))
    line = one_line(capsys, "validate", str(model), str(tmp_path / "b"), "--input", f"ids={tmp_path / 'ids.npy'}")
    assert "onnxruntime failed on sample 0" in line and "Traceback" not in line


def test_bench_takes_the_same_data(work: Path, capsys) -> None:
    code, out, err = cli(capsys, "bench", str(work / "q"), "--input", f"data={work / 'calib.npy'}", "--rounds", "3",
                         "--warmup", "1", "--no-profile")
    assert code == 0 and "3 rounds" in out, err


def test_each_input_its_own_files(tmp_path: Path, capsys) -> None:
    model = save_model(tmp_path / "two.onnx", [helper.make_node("Add", ["x", "y"], ["z"])],
                       [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3]) for n in ("x", "y")],
                       [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 3])])
    assert main(["compile", str(model), "-o", str(tmp_path / "b")]) == 0
    rng = np.random.default_rng(4)
    xs, y = rng.random((3, 1, 3)).astype(np.float32), rng.random((1, 3)).astype(np.float32)
    np.save(tmp_path / "xs.npy", xs)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "ys.npy", rng.random((2, 1, 3)).astype(np.float32))
    x_, y_ = ("--input", f"x={tmp_path / 'xs.npy'}"), ("--input", f"y={tmp_path / 'y.npy'}")
    code, _, err = cli(capsys, "run", str(tmp_path / "b"), *x_, *y_, "--output", str(tmp_path / "o.npz"))
    assert code == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["z"], xs + y)  # one y for every x
    line = one_line(capsys, "run", str(tmp_path / "b"), *x_, "--input", f"y={tmp_path / 'ys.npy'}")
    assert "inputs hold different numbers of samples: x 3, y 2" in line
    line = one_line(capsys, "run", str(tmp_path / "b"), "--input", str(tmp_path / "xs.npy"))
    assert "the bundle has 2 inputs (x, y); write --input NAME=" in line
    code, out, err = cli(capsys, "validate", str(model), str(tmp_path / "b"), *x_, *y_)
    assert code == 0 and "3 sample(s)" in out, out + err
    np.save(tmp_path / "ints.npy", np.ones((1, 3), np.int32))
    line = one_line(capsys, "validate", str(model), str(tmp_path / "b"), *x_, "--input", f"y={tmp_path / 'ints.npy'}")
    assert "dtype int32, the bundle expects float32" in line
    code, out, err = cli(capsys, "validate", str(model), str(tmp_path / "b"), *x_, "--input",
                         f"y={tmp_path / 'ints.npy'}", "--cast")
    assert code == 0, out + err
    np.save(tmp_path / "ys3.npy", rng.random((3, 1, 3)).astype(np.float32))
    code, out, err = cli(capsys, "profile", str(model), *x_, "--input", f"y={tmp_path / 'ys3.npy'}", "-o",
                         str(tmp_path / "p.yaml"))
    assert code == 0 and "from 3 sample(s)" in out, err
    tensors = yaml.safe_load((tmp_path / "p.yaml").read_text())["tensors"]
    assert tensors["z"]["max"] == pytest.approx(float((xs + np.load(tmp_path / "ys3.npy")).max()), rel=1e-6)
    line = one_line(capsys, "profile", str(model), *x_, "-o", str(tmp_path / "p.yaml"))
    assert "input 'y' needs data too" in line
