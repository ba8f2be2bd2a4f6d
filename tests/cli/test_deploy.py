"""`ember deploy FILE.yml`: a MACE-style deployment file of two models -> one static library, used from C
through the registry header with one shared activation arena; obfuscation, checksums, key errors."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.reference import onnxruntime_session
from tests.cli.helpers import ember, one_error_line

# Every name the obfuscated model holds: none may reach the library's files.
CONV_NAMES = ("image_in", "class_scores", "secret_conv_weight", "secret_conv_bias", "secret_feat", "secret_relu",
              "secret_conv_node", "secret_relu_node", "secret_pool", "secret_convnet", "convnet")


def _conv_model(path: Path) -> Path:
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "secret_conv_weight")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "secret_conv_bias")
    nodes = [helper.make_node("Conv", ["image_in", "secret_conv_weight", "secret_conv_bias"], ["secret_feat"],
                              pads=[1, 1, 1, 1], name="secret_conv_node"),
             helper.make_node("Relu", ["secret_feat"], ["secret_relu"], name="secret_relu_node"),
             helper.make_node("GlobalAveragePool", ["secret_relu"], ["class_scores"], name="secret_pool")]
    g = helper.make_graph(nodes, "secret_convnet", [helper.make_tensor_value_info("image_in", TensorProto.FLOAT,
                                                                                  [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("class_scores", TensorProto.FLOAT, [1, 4, 1, 1])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], doc_string="secret_convnet doc")
    m.ir_version = 8
    onnx.save(m, path)
    return path


def _mlp_model(path: Path) -> Path:
    """A symbolic batch, fixed by input_shapes; two MatMuls so that it needs activations too."""
    rng = np.random.default_rng(2)
    w1 = numpy_helper.from_array(rng.standard_normal((6, 16)).astype(np.float32), "mlp_w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 5)).astype(np.float32), "mlp_w2")
    nodes = [helper.make_node("MatMul", ["feature_vec", "mlp_w1"], ["hidden"]),
             helper.make_node("Tanh", ["hidden"], ["hidden_act"]),
             helper.make_node("MatMul", ["hidden_act", "mlp_w2"], ["embedding_out"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("feature_vec", TensorProto.FLOAT,
                                                                       ["batch", 6])],
                          [helper.make_tensor_value_info("embedding_out", TensorProto.FLOAT, ["batch", 5])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_yml(folder: Path, conv_sha: str | None = None, extra: str = "", abis: str = "[host]") -> Path:
    conv, mlp = folder / "convnet.onnx", folder / "mlp.onnx"
    text = f"""# MACE's layout: subgraphs, comma shapes, file:// URLs, {{CPU: ...}} thresholds
library_name: vision-kit
target_abis: {abis}
model_graph_format: code
model_data_format: code
models:
  convnet:
    platform: onnx
    model_file_path: convnet.onnx
    model_sha256_checksum: {conv_sha or _sha(conv)}
    subgraphs:
      - input_tensors:
          - image_in
        input_shapes:
          - 1,3,8,8
        output_tensors:
          - class_scores
        output_shapes:
          - 1,4,1,1
        validation_inputs_data:
          - conv_input.npy
    runtime: cpu
    obfuscate: 1
    winograd: 0
{extra}  mlp:
    model_file_path: {mlp.as_uri()}
    model_sha256_checksum: {_sha(mlp)}
    subgraphs:
      - input_tensors: feature_vec
        input_shapes: 2,6
        output_tensors: embedding_out
        output_shapes: 2,5
        validation_threshold:
          CPU: 0.9999
    runtime: cpu
"""
    path = folder / "deploy.yml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("deploy")
    _conv_model(folder / "convnet.onnx")
    _mlp_model(folder / "mlp.onnx")
    np.save(folder / "conv_input.npy", np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32))
    return folder


@pytest.fixture(scope="module")
def deployed(models) -> tuple[Path, subprocess.CompletedProcess]:
    yml = _write_yml(models, abis="[host, cortex-m4]")
    res = ember("deploy", str(yml), "-o", str(models / "out"), "--validate", "--benchmark", "--round", "3")
    assert res.returncode == 0, res.stderr
    return models / "out" / "host", res


MAIN_C = r"""
#include <stdio.h>
#include <string.h>
#include "vision-kit.h"

static uint8_t weights_0[] __attribute__((aligned(64))) = {
#include "model_0.weights.txt"
};
static uint8_t weights_1[] __attribute__((aligned(64))) = {
#include "mlp.weights.txt"
};
/* One arena for both models, which run one after the other. */
static uint8_t arena[VISION_KIT_ACTIVATIONS_MEM_SIZE] __attribute__((aligned(VISION_KIT_MEM_ALIGN)));
static uint8_t mutable_0[4096] __attribute__((aligned(VISION_KIT_MEM_ALIGN)));
static uint8_t mutable_1[4096] __attribute__((aligned(VISION_KIT_MEM_ALIGN)));

static int run(const char *name, uint8_t *weights, size_t nweights, uint8_t *mut, const char *in, const char *out) {
    const vision_kit_model_t *m = vision_kit_find_model(name);
    FILE *f;
    uint32_t d;
    if (!m || m->constant_mem_size != nweights || m->mutable_mem_size > 4096 ||
        m->activations_mem_size > VISION_KIT_ACTIVATIONS_MEM_SIZE || m->num_inputs != 1 || m->num_outputs != 1)
        return 1;
    f = fopen(in, "rb");
    if (!f || fread(mut + m->inputs[0].offset, 1, m->inputs[0].bytes, f) != m->inputs[0].bytes) return 2;
    fclose(f);
    if (m->entry(weights, mut, arena) != 0) return 3;
    f = fopen(out, "wb");
    fwrite(mut + m->outputs[0].offset, 1, m->outputs[0].bytes, f);
    fclose(f);
    printf("%s %s %s", m->name, m->inputs[0].name, m->outputs[0].dtype);
    for (d = 0; d < m->outputs[0].num_dims; ++d) printf(" %d", (int)m->outputs[0].dims[d]);
    printf("\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5 || vision_kit_find_model("convnet") || vision_kit_find_model("mlpx")) return 9;
    printf("models %d arena %d\n", VISION_KIT_NUM_MODELS, VISION_KIT_ACTIVATIONS_MEM_SIZE);
    return run("model_0", weights_0, sizeof weights_0, mutable_0, argv[1], argv[2]) ||
           run("mlp", weights_1, sizeof weights_1, mutable_1, argv[3], argv[4]);
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_one_library_runs_both_models_from_c(deployed, models, tmp_path):
    out, _ = deployed
    (tmp_path / "main.c").write_text(MAIN_C)
    exe = tmp_path / "main"
    cc = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(out), str(tmp_path / "main.c"),
                         str(out / "libvision-kit.a"), "-o", str(exe)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    x0 = np.load(models / "conv_input.npy")
    x1 = np.random.default_rng(4).standard_normal((2, 6)).astype(np.float32)
    x0.tofile(tmp_path / "in0.bin")
    x1.tofile(tmp_path / "in1.bin")
    res = subprocess.run([str(exe), *(str(tmp_path / f) for f in ("in0.bin", "out0.bin", "in1.bin", "out1.bin"))],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    acts = [json.loads((out / f"{n}.json").read_text())["memory"]["activations"] for n in ("model_0", "mlp")]
    assert min(acts) > 0
    assert res.stdout.splitlines() == [f"models 2 arena {max(acts)}", "model_0 input_0 float32 1 4 1 1",
                                       "mlp feature_vec float32 2 5"]
    for model, x, got, shape in (("convnet.onnx", x0, "out0.bin", (1, 4, 1, 1)), ("mlp.onnx", x1, "out1.bin", (2, 5))):
        sess = onnxruntime_session(str(models / model))
        ref = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(np.fromfile(tmp_path / got, np.float32).reshape(shape), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("abi", ["host", "cortex-m4"])
def test_obfuscation_leaves_no_model_name(deployed, abi):
    out = deployed[0].parent / abi
    files = [f for f in out.iterdir() if f.suffix in (".a", ".h", ".json")]
    assert {f.name for f in files} >= {"libvision-kit.a", "vision-kit.h", "vision-kit.json", "model_0.h",
                                       "model_0.json", "mlp.h", "mlp.json"}
    for f in files:
        data = f.read_bytes()
        for name in CONV_NAMES:
            assert name.encode() not in data, f"'{name}' survives in {f.name}"
    # The search finds names where they are meant to be: the model that is not obfuscated keeps its own.
    assert b"feature_vec" in (out / "libvision-kit.a").read_bytes()
    assert "#define MODEL_0_input_0 " in (out / "model_0.h").read_text()


def test_cross_target_library_holds_every_model(deployed):
    lib = deployed[0].parent / "cortex-m4" / "libvision-kit.a"
    members = subprocess.run(["ar", "t", str(lib)], capture_output=True, text=True, check=True).stdout.split()
    assert sorted(members) == ["mlp.o", "model_0.o", "vision_kit_registry.o"]
    for member in members:
        obj = subprocess.run(["ar", "p", str(lib), member], capture_output=True, check=True).stdout
        assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[18:20], "little") == 40  # EM_ARM


def test_validate_and_benchmark_every_model(deployed):
    _, res = deployed
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith(("convnet (model_0)", "mlp "))]
    host = [r for r in rows if " host " in r]
    assert len(rows) == 4 and len(host) == 2, res.stdout
    assert all("PASS" in r and "median" in r and "(3 rounds)" in r for r in host), res.stdout
    assert all(r.rstrip().endswith("-") for r in rows if r not in host)
    assert "winograd: ignored" in res.stderr
    doc = json.loads((deployed[0] / "vision-kit.json").read_text())
    assert [m["validation"]["pass"] for m in doc["models"]] == [True, True]


def test_wrong_checksum_is_one_line(models, tmp_path):
    yml = _write_yml(models, conv_sha="ab" * 32)
    line = one_error_line(ember("deploy", str(yml), "-o", str(tmp_path / "out")))
    assert "deploy.yml: models.convnet.model_sha256_checksum: does not match" in line
    assert not (tmp_path / "out").exists()


def test_unknown_key_gets_a_suggestion(models, tmp_path):
    yml = _write_yml(models, extra="    quantise: 1\n")
    line = one_error_line(ember("deploy", str(yml), "-o", str(tmp_path / "out")))
    assert line.endswith("deploy.yml: models.convnet.quantise: unknown key; did you mean 'quantize'?")


def test_missing_key_and_unknown_tensor_are_one_line(models, tmp_path):
    yml = _write_yml(models)
    yml.write_text(yml.read_text().replace("library_name: vision-kit\n", ""))
    assert one_error_line(ember("deploy", str(yml))).endswith("deploy.yml: library_name: missing (required)")
    yml.write_text(_write_yml(models).read_text().replace("- class_scores", "- class_score"))
    assert "models.convnet.subgraphs[0].output_tensors: 'class_score' is not a tensor of the model" in \
        one_error_line(ember("deploy", str(yml), "-o", str(tmp_path / "out")))


def test_remote_models_and_unknown_abis_are_refused(models, tmp_path):
    yml = _write_yml(models, abis="[arm64-v8b]")
    assert "target_abis[0]: unknown ABI or target 'arm64-v8b'; did you mean 'arm64-v8a'?" in one_error_line(
        ember("deploy", str(yml), "-o", str(tmp_path / "out")))
    text = _write_yml(models).read_text().replace("convnet.onnx", "https://example.com/convnet.onnx")
    yml.write_text(text)
    assert "models.convnet.model_file_path: https://example.com/convnet.onnx: ember downloads nothing" in \
        one_error_line(ember("deploy", str(yml), "-o", str(tmp_path / "out")))


def _two_input_model(path: Path) -> Path:
    rng = np.random.default_rng(6)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "q_weight")
    nodes = [helper.make_node("Add", ["left_in", "right_in"], ["q_sum"]),
             helper.make_node("Conv", ["q_sum", "q_weight"], ["q_conv"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["q_conv"], ["q_out"])]
    x = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 8, 8]) for n in ("left_in", "right_in")]
    g = helper.make_graph(nodes, "q", x, [helper.make_tensor_value_info("q_out", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_quantize_with_calibration_data(tmp_path):
    """quantize: 1 -> ember's profile + int8 compile; an obfuscated model's .npz keys follow its renaming."""
    rng = np.random.default_rng(5)
    for i in range(4):
        np.savez(tmp_path / f"calib{i}.npz", **{n: rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
                                                 for n in ("left_in", "right_in")})
    model = _two_input_model(tmp_path / "two.onnx")
    yml = tmp_path / "q.yml"
    yml.write_text(f"""library_name: qkit
target_abis: host
models:
  twoin:
    model_file_path: two.onnx
    model_sha256_checksum: {_sha(model)}
    input_tensors: left_in,right_in
    input_shapes: ["1,3,8,8", "1,3,8,8"]
    output_tensors: q_out
    obfuscate: 1
    quantize: 1
    calibration_data: [calib0.npz, calib1.npz, calib2.npz, calib3.npz]
""")
    res = ember("deploy", str(yml), "-o", str(tmp_path / "out"), "--validate")
    assert res.returncode == 0, res.stderr
    row = next(ln for ln in res.stdout.splitlines() if ln.startswith("twoin (model_0)"))
    assert "PASS" in row and ">= 0.99)" in row, res.stdout
    manifest = json.loads((tmp_path / "out" / "host" / "model_0.json").read_text())
    assert manifest["options"]["quantize"] == "int8" and manifest["ops"].get("QConv") == 1
    assert not any(b"left_in" in f.read_bytes() for f in (tmp_path / "out" / "host").iterdir())


def test_other_files_in_the_output_are_not_overwritten(models, tmp_path):
    (tmp_path / "out" / "host").mkdir(parents=True)
    (tmp_path / "out" / "host" / "notes.txt").write_text("mine")
    line = one_error_line(ember("deploy", str(_write_yml(models)), "-o", str(tmp_path / "out")))
    assert "out/host: not empty and not an earlier `ember deploy` of vision-kit" in line
    assert (tmp_path / "out" / "host" / "notes.txt").read_text() == "mine"
