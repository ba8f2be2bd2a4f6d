"""Glow's command lines (the AOT bundle guide and NXP's eIQ Glow article in the seeds) run unchanged on
ember's `model-compiler` and `image-classifier`; only file names are the test's own. Each host bundle is
compared with onnxruntime on the same PNG images; cross bundles are checked through their ELF attributes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper

from ember.glow import classifier, compiler, targets
from ember.reference import onnxruntime_session
from ember.runtime.loader import load

ort = pytest.importorskip("onnxruntime")
Image = pytest.importorskip("PIL.Image")

INT8_TOL = 0.04  # softmax probabilities (up to ~0.5) of the int8 LeNet vs float onnxruntime; measured 0.016-0.024


def lenet(path: Path, batch: str | int = 1, second_input: bool = False) -> Path:
    """A small LeNet for 28x28 grayscale digits (seeded weights); `batch` may be a symbol such as 'None'."""
    rng = np.random.default_rng(7)

    def w(name: str, *shape: int, gain: float = 1.0) -> onnx.TensorProto:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return numpy_helper.from_array((gain * rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), name)

    logits = "bias_out" if second_input else "f2"
    nodes = [helper.make_node("Conv", ["data", "c1_w", "c1_b"], ["c1"], pads=[2, 2, 2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "c2_w", "c2_b"], ["c2"]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p2"], ["flat"]),
             helper.make_node("Gemm", ["flat", "f1_w", "f1_b"], ["f1"], transB=1),
             helper.make_node("Relu", ["f1"], ["r3"]),
             helper.make_node("Gemm", ["r3", "f2_w", "f2_b"], ["f2"], transB=1),
             helper.make_node("Softmax", [logits], ["softmax"], axis=1)]
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [batch, 1, 28, 28])]
    if second_input:  # declared with symbols: -model-input fixes both shapes
        nodes.insert(-1, helper.make_node("Add", ["f2", "bias"], ["bias_out"]))
        inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 1, "H", "W"]),
                  helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["N", 10])]
    inits = [w("c1_w", 6, 1, 5, 5), w("c1_b", 6), w("c2_w", 12, 6, 5, 5), w("c2_b", 12), w("f1_w", 64, 300),
             w("f1_b", 64), w("f2_w", 10, 64, gain=16.0), w("f2_b", 10)]
    out = [helper.make_tensor_value_info("softmax", TensorProto.FLOAT, [batch if not second_input else "N", 10])]
    model = helper.make_model(helper.make_graph(nodes, "lenet_mnist", inputs, out, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """lenet_mnist/ (a folder holding the ONNX model, Glow's -model=lenet_mnist), models/lenet_mnist/ (eIQ's
    layout), images/ and the guide's sample image name, as PNGs of digit-like strokes."""
    d = tmp_path_factory.mktemp("glow")
    lenet(d / "lenet_mnist" / "model.onnx")
    lenet(d / "mnist_none.onnx", batch="None")
    shutil.copytree(d / "lenet_mnist", d / "models" / "lenet_mnist")
    rng = np.random.default_rng(1)
    (d / "images").mkdir()
    for i in range(6):
        img = np.zeros((28, 28), np.uint8)
        img[4 + i : 24, 8 + i // 2 : 12 + i] = 255  # a bar, somewhere different per image
        img = np.clip(img + rng.integers(0, 40, img.shape), 0, 255).astype(np.uint8)
        Image.fromarray(img, "L").save(d / "images" / f"{i}_10{i:02d}.png")
    shutil.copy(d / "images" / "0_1000.png", d / "0_1009.png")
    return d


def gray(path: Path, scale: float = 1 / 255) -> np.ndarray:
    return (np.asarray(Image.open(path).convert("L"), np.float32) * scale).reshape(1, 1, 28, 28)


def reference(model: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return onnxruntime_session(str(model)).run(None, feeds)[0]


def run_tool(tool, args: str | list[str], capsys) -> tuple[int, str, str]:
    rc = tool.main(args.split() if isinstance(args, str) else args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def images(work: Path) -> list[Path]:
    return sorted((work / "images").glob("*.png"))


@pytest.fixture(scope="module")
def profile(work: Path) -> Path:
    """The guide's profiling line for LeNet (with the test's images in place of `0_1009.png ...`)."""
    import os

    cwd = os.getcwd()
    os.chdir(work)
    try:
        imgs = " ".join(str(p.relative_to(work)) for p in images(work))
        rc = classifier.main(f"0_1009.png {imgs} -image-mode=0to1 -model=lenet_mnist -model-input-name=data "
                             "-dump-profile=profile.yml".split())
    finally:
        os.chdir(cwd)
    assert rc == 0
    return work / "profile.yml"


def int8_matches(bundle_dir: Path, name: str, model: Path, work: Path) -> None:
    b = load(bundle_dir, name)
    for p in images(work):
        got = b.run({"data": gray(p)})["softmax"]
        want = reference(model, {"data": gray(p)})
        assert np.abs(got - want).max() < INT8_TOL, (p.name, got, want)
        top2 = np.sort(want.reshape(-1))[-2:]
        if top2[1] - top2[0] > 2 * INT8_TOL:  # the same label wherever the error bound cannot swap the top two
            assert got.argmax() == want.argmax(), p.name


def test_guide_float_bundle(work, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = lenet(tmp_path / "mobilenet_v1_0.25_128.onnx")
    rc, out, err = run_tool(compiler, "-backend=CPU -model=mobilenet_v1_0.25_128.onnx -emit-bundle=bundle", capsys)
    assert rc == 0, err
    for suffix in (".o", ".h", ".weights.bin", ".weights.txt"):  # the guide's artifacts, named after the model
        assert (tmp_path / "bundle" / f"mobilenet_v1_0_25_128{suffix}").is_file()  # '.' is no C identifier
    b = load(tmp_path / "bundle")
    x = gray(images(work)[2])
    np.testing.assert_allclose(b.run({"data": x})["softmax"], reference(model, {"data": x}), rtol=1e-4, atol=1e-6)


def test_guide_profile_then_int8(work, profile, monkeypatch, capsys):
    doc = yaml.safe_load(profile.read_text())
    assert doc["samples"] == 7 and {"data", "r1", "softmax"} <= set(doc["tensors"])
    monkeypatch.chdir(work)
    rc, out, err = run_tool(compiler, "-backend=CPU -model=lenet_mnist -emit-bundle=build "
                            "-model-input=data,float,[1,1,28,28] -load-profile=profile.yml", capsys)
    assert rc == 0, err
    m = load(work / "build").manifest
    assert m["name"] == "lenet_mnist" and m["options"]["quantize"] == "int8"
    assert m["ops"].get("QConv", 0) + m["ops"].get("QMatMul", 0) >= 2, m["ops"]  # integer kernels, not simulated
    header = (work / "build" / "lenet_mnist.h").read_text()  # what the guide's and eIQ's C code use
    for macro in ("LENET_MNIST_data 0", "LENET_MNIST_softmax ", "LENET_MNIST_CONSTANT_MEM_SIZE",
                  "LENET_MNIST_MUTABLE_MEM_SIZE", "LENET_MNIST_ACTIVATIONS_MEM_SIZE", "LENET_MNIST_MEM_ALIGN",
                  "GLOW_MEM_ALIGN(", "GLOW_GET_ADDR("):
        assert macro in header, macro
    int8_matches(work / "build", "lenet_mnist", work / "lenet_mnist" / "model.onnx", work)


def glow_profile(ember_profile: Path, path: Path) -> Path:
    """The same ranges in Glow's own format (Serialization.cpp): a hash document, then NodeOutputName entries."""
    doc = yaml.safe_load(ember_profile.read_text())
    entries = [{"NodeOutputName": f"{name}:0", "Min": t["min"], "Max": t["max"],
                "Histogram": [float(c) for c in np.asarray(t["histogram"]["counts"]).reshape(-1, 64).sum(1)]}
               for name, t in doc["tensors"].items()]
    path.write_text("---\nGraphPreLowerHash: 0x1234\n...\n---\n" + yaml.safe_dump(entries) + "...\n")
    return path


def test_guide_keep_original_precision_with_a_glow_profile(work, profile, monkeypatch, capsys):
    monkeypatch.chdir(work)
    glow_profile(profile, work / "glow_profile.yml")
    rc, out, err = run_tool(compiler, "-backend=CPU -model=lenet_mnist -emit-bundle=build_keep "
                            "-model-input=data,float,[1,1,28,28] -load-profile=glow_profile.yml "
                            "-keep-original-precision-for-nodes=Add,Sub,Mul,Div,Exp,SoftMax", capsys)
    assert rc == 0, err
    assert "Glow's profile format" in err
    m = load(work / "build_keep").manifest
    assert m["options"]["keep_float"] == ["Add", "Sub", "Mul", "Div", "Exp", "Softmax"]
    assert m["ops"].get("Softmax") == 1
    int8_matches(work / "build_keep", "lenet_mnist", work / "lenet_mnist" / "model.onnx", work)


def test_guide_define_symbol_dynamic_api_and_options(work, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = lenet(tmp_path / "mnist.onnx", batch="None")
    rc, out, err = run_tool(compiler, "-backend=CPU -model=mnist.onnx -emit-bundle=bundle -onnx-define-symbol=None,1 "
                            "-bundle-api=dynamic -network-name=mb2 -relocation-model=pic -dump-graph-DAG=graph.dot",
                            capsys)
    assert rc == 0, err
    header = (tmp_path / "bundle" / "mb2.h").read_text()
    assert "BundleConfig" in header and "mb2_config" in header
    assert (tmp_path / "graph.dot").read_text().startswith("digraph")
    b = load(tmp_path / "bundle", "mb2")
    assert b.manifest["options"]["reloc"] == "pic"
    x = gray(images(work)[3])
    np.testing.assert_allclose(b.run({"data": x})["softmax"], reference(model, {"data": x}), rtol=1e-4, atol=1e-6)


def test_guide_model_input_for_two_inputs(work, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = lenet(tmp_path / "two" / "two.onnx", second_input=True)
    rc, out, err = run_tool(compiler, "-backend=CPU -model=two -emit-bundle=build -model-input=data,float,[1,1,28,28] "
                            "-model-input=bias,float,[1,10]", capsys)
    assert rc == 0, err
    b = load(tmp_path / "build", "two")
    assert [(e["name"], e["shape"]) for e in b.inputs] == [("data", [1, 1, 28, 28]), ("bias", [1, 10])]
    feeds = {"data": gray(images(work)[1]), "bias": np.linspace(-1, 1, 10, dtype=np.float32).reshape(1, 10)}
    np.testing.assert_allclose(b.run(feeds)["softmax"], reference(model, feeds), rtol=1e-4, atol=1e-6)


def arm_attributes(obj: Path) -> tuple[str, dict[str, object]]:
    from elftools.elf.elffile import ELFFile

    with open(obj, "rb") as f:
        elf = ELFFile(f)
        attrs = {a.tag: a.value for s in elf.iter_sections() if s.name == ".ARM.attributes"
                 for sub in s.iter_subsections() for ss in sub.iter_subsubsections() for a in ss.iter_attributes()}
        return elf["e_machine"], attrs


def test_eiq_profile_and_cortex_m7_lines(work, monkeypatch, capsys):
    """The article's two commands as typed on Windows: backslash paths, an unexpanded `images\\*.png` and the
    schema printed as `symmetric_with_power2 scale`."""
    pytest.importorskip("ziglang")
    monkeypatch.chdir(work)
    rc, out, err = run_tool(classifier, ["images\\*.png", "-image-mode=0to1", "-image-layout=NCHW",
                                         "-image-channel-order=BGR", "-model=models\\lenet_mnist",
                                         "-model-input-name=data", "-dump-profile=eiq_profile.yml",
                                         "-quantization-schema=symmetric_with_power2", "scale",
                                         "-quantization-precision-bias=Int8"], capsys)
    assert rc == 0, err
    assert yaml.safe_load((work / "eiq_profile.yml").read_text())["samples"] == 6
    rc, out, err = run_tool(compiler, ["-model=models\\lenet_mnist", "-model-input=data,float,[1,1,28,28]",
                                       "-emit-bundle=bundle", "-backend=CPU", "-target=arm", "-mcpu=cortex-m7",
                                       "-float-abi=hard", "-load-profile=eiq_profile.yml",
                                       "-quantization-schema=symmetric_with_power2", "scale",
                                       "-quantization-precision-bias=Int8", "-use-cmsis"], capsys)
    assert rc == 0, err
    assert "-use-cmsis" in err and len(err.strip().splitlines()) == 2  # notes: backend, cmsis
    m = load(work / "bundle", "lenet_mnist").manifest
    assert (m["target"], m["options"]["schema"], m["options"]["bias"]) == \
        ("cortex-m7", "symmetric_with_power2_scale", "int8")
    assert not {"Conv", "Gemm", "MatMul"} & set(m["ops"]), m["ops"]  # int8 biases keep the integer kernels
    machine, attrs = arm_attributes(work / "bundle" / "lenet_mnist.o")
    assert machine == "EM_ARM" and attrs["TAG_CPU_NAME"] == "cortex-m7" and attrs["TAG_ABI_VFP_ARGS"] == 1


def test_guide_cortex_m4_defaults_to_soft_float(work, tmp_path, capsys):
    pytest.importorskip("ziglang")
    rc, out, err = run_tool(compiler, f"-backend=CPU -model={work / 'lenet_mnist'} -emit-bundle={tmp_path / 'b'} "
                            "-target=arm -mcpu=cortex-m4", capsys)
    assert rc == 0, err
    assert "no -float-abi: soft" in err
    machine, attrs = arm_attributes(tmp_path / "b" / "lenet_mnist.o")
    assert machine == "EM_ARM" and attrs["TAG_CPU_NAME"] == "cortex-m4"
    assert attrs.get("TAG_ABI_VFP_ARGS", 0) == 0  # base (soft) procedure-call standard: links with soft firmware


def test_image_classifier_prints_glow_top_k(work, monkeypatch, capsys):
    """Glow's default preprocessing (0to255, BGR; grayscale for a 1-channel input) and its result lines."""
    monkeypatch.chdir(work)
    imgs = [str(p.relative_to(work)) for p in images(work)[:3]]
    rc, out, err = run_tool(classifier, [*imgs, "-model=lenet_mnist", "-topk=2"], capsys)
    assert rc == 0, err
    model = work / "lenet_mnist" / "model.onnx"
    lines = out.splitlines()
    assert len(lines) == 6
    for i, path in enumerate(imgs):
        want = reference(model, {"data": gray(work / path, 1.0)})[0]
        top = np.argsort(-want)[:2]
        assert lines[2 * i] == f" File: {path}\tLabel-K1: {top[0]} (probability: {want[top[0]]:.4f})"
        assert lines[2 * i + 1] == f"\t\t\t\t\t\tLabel-K2: {top[1]} (probability: {want[top[1]]:.4f})"


@pytest.mark.parametrize("args, fragment", [
    ("-backend=OpenCL -model=lenet_mnist -emit-bundle=b", "-backend=OpenCL"),
    ("-model=lenet_mnist -emit-bundle=b -frobnicate", "unknown option '-frobnicate'"),
    ("-model=nowhere -emit-bundle=b", "-model=nowhere: no such file"),
    ("-model=lenet_mnist", "-emit-bundle=<dir> is required"),
    ("-model=lenet_mnist -emit-bundle=b -dump-profile=p.yml", "image-classifier"),
    ("-model=lenet_mnist -emit-bundle=b -target=arm -mcpu=cortex-m7 -mattr=+mve", "-mattr=+mve"),
    ("-model=lenet_mnist -emit-bundle=b -target=arm -mcpu=cortex-m3", "-mcpu=cortex-m3"),
    ("-model=lenet_mnist -emit-bundle=b -target=thumbv6m-none-eabi -mcpu=cortex-m7", "thumbv6m"),
    ("-model=lenet_mnist -emit-bundle=b -code-model=large", "-code-model=large"),
    ("-model=lenet_mnist -emit-bundle=b -target=armv7em-none-eabi", "name the core with -mcpu"),
    ("-model=lenet_mnist -emit-bundle=b -model-input=data,int8q,0.1,0,[1,1,28,28]", "is not int8"),
    ("-model=lenet_mnist -emit-bundle=b -model-input=data,float,1x1x28x28", "[d0,d1,...]"),
    ("-model=lenet_mnist -emit-bundle=b -load-profile=profile.yml -keep-original-precision-for-nodes=Frob",
     "unknown node kind 'Frob'"),
    ("-model=lenet_mnist -emit-bundle=b -load-profile=profile.yml -quantization-precision=Int4",
     "-quantization-precision=Int4"),
    ("-model=mnist_none.onnx -emit-bundle=b", "symbol 'None'; fix it with -onnx-define-symbol=None,VALUE"),
])
def test_refusals_are_one_line(work, profile, monkeypatch, capsys, args, fragment):
    monkeypatch.chdir(work)
    rc, out, err = run_tool(compiler, args, capsys)
    assert rc == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("model-compiler: error: ") and fragment in lines[0], err
    assert not (work / "b").exists()


def test_image_classifier_refusals(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    for args, fragment in (("-model=lenet_mnist", "no images"),
                           ("0_1009.png -model=lenet_mnist -dump-profile=a.yml -load-profile=profile.yml",
                            "-dump-profile cannot be given with -load-profile"),
                           ("0_1009.png -model=lenet_mnist -image-mode=0to2", "-image-mode must be one of")):
        rc, out, err = run_tool(classifier, args, capsys)
        assert rc == 1 and err.startswith("image-classifier: error: ") and fragment in err, err


def test_target_triples():
    c = targets.choose("thumbv7em-none-eabihf", "cortex-m7", None, [], None)
    assert (c.target, c.cpu, c.float_abi) == ("cortex-m7", None, "hard")
    c = targets.choose("armv7l-unknown-linux-gnueabihf", "cortex-a7", None, [], None)
    assert (c.target, c.cpu, c.float_abi) == ("armv7", "cortex-a7", "hard")
    c = targets.choose("aarch64", "cortex-a53", None, [], "small")
    assert (c.target, c.cpu) == ("aarch64", "cortex-a53") and any("code-model" in n for n in c.notes)
    assert targets.choose("thumbv8m.main-none-eabi", None, "hard", ["+dsp"], None).target == "cortex-m33"
    assert targets.choose("i386", None, None, [], None).target == "i386"
    assert targets.choose(None, None, None, [], None).target == "host"


def test_console_scripts_help_and_version():
    """The entry points as installed (`python -m` runs the same `main`); -help lists every Glow flag."""
    res = subprocess.run([sys.executable, "-m", "ember.glow.compiler", "-help"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 0, res.stderr
    for flag in ("-backend", "-model", "-emit-bundle", "-network-name", "-model-input", "-onnx-define-symbol",
                 "-bundle-api", "-target", "-mcpu", "-mattr", "-float-abi", "-code-model", "-relocation-model",
                 "-load-profile", "-dump-profile", "-quantization-schema", "-quantization-precision",
                 "-quantization-precision-bias", "-enable-channelwise", "-keep-original-precision-for-nodes",
                 "-dump-graph-DAG", "-use-cmsis", "-version"):
        assert f"  {flag}" in res.stdout, flag
    assert classifier.main(["-version"]) == 0


def test_image_classifier_runs_the_int8_bundle(work, profile, monkeypatch, capsys):
    monkeypatch.chdir(work)
    imgs = [str(p.relative_to(work)) for p in images(work)]
    rc, out, err = run_tool(classifier, [*imgs, "-model=lenet_mnist", "-image-mode=0to1", "-load-profile=profile.yml",
                                         "-quantization-schema=symmetric"], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == len(imgs)
    for line, path in zip(lines, imgs, strict=True):
        want = reference(work / "lenet_mnist" / "model.onnx", {"data": gray(work / path)})[0]
        label, prob = line.split("Label-K1: ")[1].split(" (probability: ")
        assert abs(float(prob.rstrip(")")) - want[int(label)]) < INT8_TOL, line
        top2 = np.sort(want)[-2:]
        if top2[1] - top2[0] > 2 * INT8_TOL:
            assert int(label) == want.argmax(), line
