"""`--state io`: TFLite's recurrent state (LSTM, SVDF variable tensors) as bundle inputs and outputs, carried
by the caller. N streaming calls equal LiteRT's N invocations (which keep the variables) and, for the LSTM,
one run over the N chunks' whole sequence. Float outputs within 1e-5 of the largest reference value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from ember.errors import OptionError
from tests.frontends.tflite_support import FIXTURES, litert

LSTM_STATE = [{"input": "h_state", "output": "h_state_next", "reset": 0},
              {"input": "c_state", "output": "c_state_next", "reset": 0}]
STATES = {"svdf": [{"input": "state", "output": "state_next", "reset": 0}],
          "lstm_batch_major": LSTM_STATE, "lstm_time_major_cifg_peephole": LSTM_STATE}
CALLS = 4


def _close(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(ref).max())), err_msg=what)


@pytest.mark.parametrize("name", list(STATES))
def test_streaming_calls_equal_litert_invocations(name: str, tmp_path: Path) -> None:
    path = FIXTURES / f"{name}.tflite"
    bundle = ember.compile(path, tmp_path / "io", state="io", opt_level=1)
    m = bundle.manifest
    assert m["state"] == STATES[name]
    x_name, y_name = m["inputs"][0]["name"], m["outputs"][0]["name"]
    interp = litert(path)
    xd, yd = interp.get_input_details()[0], interp.get_output_details()[0]
    rng = np.random.default_rng(3)
    frames = [rng.uniform(-1, 1, xd["shape"]).astype(np.float32) for _ in range(CALLS)]
    state = {i["name"]: np.zeros(i["shape"], np.float32) for i in m["inputs"][1:]}  # the reset
    outs = []
    for k, x in enumerate(frames):
        interp.set_tensor(xd["index"], x)
        interp.invoke()  # LiteRT keeps its variable tensors from the previous invocation
        got = bundle.run({x_name: x, **state})
        _close(got[y_name], interp.get_tensor(yd["index"]), f"{name} call {k}")
        state = {s["input"]: got[s["output"]] for s in m["state"]}
        outs.append(got[y_name])
    # The state matters: a later call differs from the same frame run from the zero state.
    fresh = bundle.run({x_name: frames[-1], **{i["name"]: np.zeros(i["shape"], np.float32) for i in m["inputs"][1:]}})
    assert np.abs(fresh[y_name] - outs[-1]).max() > 1e-3
    if name.startswith("lstm"):  # the chunks' outputs are one run over the whole sequence
        axis = 0 if "time_major" in name else 1
        whole = np.concatenate(frames, axis)
        interp.resize_tensor_input(xd["index"], whole.shape)
        interp.allocate_tensors()
        interp.reset_all_variables()
        interp.set_tensor(xd["index"], whole)
        interp.invoke()
        _close(np.concatenate(outs, axis), interp.get_tensor(interp.get_output_details()[0]["index"]),
               f"{name} as one sequence")


def test_state_io_is_for_tflite_models(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(OptionError, match="--state io: only TFLite models keep recurrent state"):
        ember.compile(path, tmp_path / "out", state="io")
    with pytest.raises(OptionError, match="--state must be zero or io, not 'keep'"):
        ember.compile(FIXTURES / "svdf.tflite", tmp_path / "out", state="keep")


def test_cli_state_io(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ember.cli import main

    assert main(["compile", str(FIXTURES / "svdf.tflite"), "-o", str(tmp_path), "--state", "io", "-O1"]) == 0
    assert "recurrent state  : state <- state_next (carried by the caller: svdf_carry_state in svdf.h)" in \
        capsys.readouterr().out
    header = (tmp_path / "svdf.h").read_text()
    assert "static inline void svdf_reset_state(uint8_t *mutableWeight)" in header
    assert "static inline void svdf_carry_state(uint8_t *mutableWeight)" in header
