"""`ember compile SAVED_MODEL_DIR -o OUT`: the directory converted by TFLiteConverter (ember[tf]). Without
tensorflow (CI) the command answers with the install hint in one line; the conversion itself is tested only
where tensorflow is importable."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ember import cli
from ember.runtime.loader import load

HINT = "ember: error: compiling a Keras model or a SavedModel needs tensorflow: pip install 'ember[tf]'\n"


def test_missing_tensorflow_is_one_line_with_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "saved_model.pb").write_bytes(b"")  # a SavedModel by its layout; never read without tensorflow
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # import tensorflow raises ImportError
    assert cli.main(["compile", str(sm), "-o", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == HINT
    assert not (tmp_path / "out").exists()


def test_a_directory_that_is_no_saved_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compile", str(tmp_path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ember: error: ") and err.count("\n") == 1
    assert "is a directory" in err and "SavedModel directory (one holding saved_model.pb)" in err


def test_saved_model_directory_on_the_command_line(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(4)
    w = tf.constant(rng.uniform(-0.5, 0.5, (3, 3, 2, 4)).astype(np.float32))
    d = tf.constant(rng.uniform(-0.5, 0.5, (4 * 16, 3)).astype(np.float32))

    class Net(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 4, 4, 2], tf.float32)])
        def serve(self, x):
            y = tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME"))
            return {"y": tf.matmul(tf.reshape(y, [1, -1]), d)}

    net = Net()
    tf.saved_model.save(net, str(tmp_path / "tiny_sm"), signatures={"serving_default": net.serve})
    assert cli.main(["compile", str(tmp_path / "tiny_sm"), "-o", str(tmp_path / "out"), "-O1"]) == 0
    bundle = load(tmp_path / "out")
    assert bundle.manifest["name"] == "tiny_sm"  # the directory's name
    x = rng.uniform(-1, 1, (1, 4, 4, 2)).astype(np.float32)
    want = net.serve(tf.constant(x))["y"].numpy()
    got = next(iter(bundle.run({bundle.manifest["inputs"][0]["name"]: x}).values()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
