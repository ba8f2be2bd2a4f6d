"""Full-integer LSTM (a Keras LSTM converted with TFLITE_BUILTINS_INT8: int8 input, output and weights, int16
cell state) on TFLite's integer arithmetic (ember/ops/lstm_int.py): outputs bit-exact with LiteRT's reference
kernel by default and with TFLite Micro's under --tflite-rounding micro (the two interpreters' LSTMs differ by
one in some outputs), from the zero state and over calls that carry the state (`--state io`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.errors import UnsupportedOperatorError
from ember.validate import validate
from tests.frontends.tflite_support import FIXTURES, litert
from tests.support import cdriver

KERAS = ["lstm_int8", "lstm_int8_time_major"]  # batch-major [1, 8, 12] -> 16 units; time-major [5, 2, 6] -> 8


def _inputs(shape: tuple[int, ...], n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(n)]


def _litert_fresh(interp, x: np.ndarray) -> np.ndarray:
    """LiteRT's output from the reset state (a bundle's default)."""
    interp.reset_all_variables()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


@pytest.mark.parametrize("name", KERAS)
def test_lstm_int8_bit_exact_with_litert_and_tflite_micro(name: str, tmp_path: Path) -> None:
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    model = FIXTURES / f"{name}.tflite"
    bundle = ember.compile(model, tmp_path / "litert", opt_level=1)
    assert bundle.manifest["ops"] == {"LstmInteger": 1}  # integer end to end, no float LSTM
    micro_bundle = ember.compile(model, tmp_path / "micro", opt_level=1, tflite_rounding="micro")
    interp = litert(model)
    micro = runtime.Interpreter.from_file(str(model))
    shape = tuple(interp.get_input_details()[0]["shape"])
    outs = []
    for k, x in enumerate(_inputs(shape, 4, 5)):
        got = bundle.run({"x": x})["output_0"]
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, _litert_fresh(interp, x), err_msg=f"input {k} (LiteRT)")
        micro.reset()
        micro.set_input(x, 0)
        micro.invoke()
        np.testing.assert_array_equal(micro_bundle.run({"x": x})["output_0"], micro.get_output(0),
                                      err_msg=f"input {k} (TFLite Micro)")
        outs.append(got)
    assert len(np.unique(np.array(outs))) > 40  # the cells work in range, not saturated


def test_lstm_int8_cifg_peephole_bit_exact_with_litert(tmp_path: Path) -> None:
    """The time-major fixture made CIFG (no input gate) with peephole weights on the forget and output gates
    (scripts/tflite_handmade.py): LiteRT runs it; TFLite Micro has neither form, so that is refused."""
    model = FIXTURES / "lstm_int8_cifg_peephole.tflite"
    bundle = ember.compile(model, tmp_path, opt_level=1)
    interp = litert(model)
    plain = litert(FIXTURES / "lstm_int8_time_major.tflite")
    for k, x in enumerate(_inputs((5, 2, 6), 4, 6)):
        got = bundle.run({"x": x})["output_0"]
        np.testing.assert_array_equal(got, _litert_fresh(interp, x), err_msg=f"input {k}")
        assert (got != _litert_fresh(plain, x)).any()  # the variant computes something else
    with pytest.raises(UnsupportedOperatorError) as e:
        ember.compile(model, tmp_path / "micro", tflite_rounding="micro")
    msg = str(e.value)
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in msg and "TFLite Micro's LSTM has no CIFG form" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("rounding", ["litert", "micro"])
def test_lstm_int8_streaming_equals_interpreter_invocations(rounding: str, tmp_path: Path) -> None:
    """--state io: the hidden (int8, reset to its zero point) and cell (int16) states are inputs and outputs;
    three calls carrying them equal three invocations of the interpreter whose arithmetic the bundle follows
    (LiteRT's, or TFLite Micro's under --tflite-rounding micro), without a reset between them."""
    model = FIXTURES / "lstm_int8_time_major.tflite"
    if rounding == "micro":
        runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
        micro = runtime.Interpreter.from_file(str(model))
        micro.reset()

        def invoke(x: np.ndarray) -> np.ndarray:
            micro.set_input(x, 0)
            micro.invoke()
            return micro.get_output(0)
    else:
        interp = litert(model)
        interp.reset_all_variables()
        xd, yd = interp.get_input_details()[0], interp.get_output_details()[0]

        def invoke(x: np.ndarray) -> np.ndarray:
            interp.set_tensor(xd["index"], x)
            interp.invoke()
            return interp.get_tensor(yd["index"])
    bundle = ember.compile(model, tmp_path, state="io", opt_level=1, tflite_rounding=rounding)
    states = bundle.manifest["state"]
    assert [s["output"] for s in states] == [s["input"] + "_next" for s in states]
    by_input = {i["name"]: i for i in bundle.manifest["inputs"]}
    feed = {s["input"]: np.full(by_input[s["input"]]["shape"], s["reset"], by_input[s["input"]]["dtype"])
            for s in states}
    assert sorted(str(v.dtype) for v in feed.values()) == ["int16", "int8"]
    reset = dict(feed)
    for k, x in enumerate(_inputs((5, 2, 6), 3, 7)):
        want = invoke(x)
        got = bundle.run({"x": x, **feed})
        np.testing.assert_array_equal(got["output_0"], want, err_msg=f"call {k} ({rounding})")
        hidden = got[states[0]["output"]]
        # the hidden state is the last step's output
        np.testing.assert_array_equal(hidden, got["output_0"][-1].reshape(hidden.shape))
        if k:  # the carried state changes what the interpreter's later invocations give
            assert (want != bundle.run({"x": x, **reset})["output_0"]).any(), f"call {k}"
        feed = {s["input"]: got[s["output"]] for s in states}
    assert (feed[states[1]["input"]] != 0).any()


def test_lstm_int8_validates_against_litert(tmp_path: Path) -> None:
    """`ember validate` feeds random int8 inputs to the bundle and LiteRT (from the reset state)."""
    ember.compile(FIXTURES / "lstm_int8.tflite", tmp_path, opt_level=1)
    result = validate(str(FIXTURES / "lstm_int8.tflite"), str(tmp_path), [], seed=0)
    assert result["ok"] and result["outputs"][0]["max_abs_error"] == 0


@pytest.mark.parametrize("name, rounding", [("lstm_int8_cifg_peephole", "litert"), ("lstm_int8_time_major", "micro")])
def test_lstm_int8_c_is_clean_under_sanitizers(name: str, rounding: str, tmp_path: Path) -> None:
    """NAME.c compiles warning-free as freestanding C99, and an ASan/UBSan build given states over their
    whole range (saturating and wrapping sums) gives the host bundle's outputs."""
    if shutil.which("cc") is None:
        pytest.skip("needs the host C compiler")
    bundle = ember.compile(FIXTURES / f"{name}.tflite", tmp_path / "b", state="io", opt_level=1,
                           tflite_rounding=rounding)
    cdriver.compile_werror(bundle.path, tmp_path / "bundle.o")
    rng = np.random.default_rng(8)
    feed = {i["name"]: rng.integers(np.iinfo(i["dtype"]).min, np.iinfo(i["dtype"]).max + 1, i["shape"])
            .astype(i["dtype"]) for i in bundle.manifest["inputs"]}
    want = bundle.run(feed)
    got = cdriver.run(bundle.path, tmp_path / "asan", feed, sanitize=True)
    for k, v in want.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)
