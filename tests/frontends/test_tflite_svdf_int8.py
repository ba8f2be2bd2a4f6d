"""Full-integer SVDF (int8 input and output, int16 time weights and state, as keyword spotters ship it) on
TFLite's integer arithmetic: outputs bit-exact with LiteRT's reference kernels and with TFLite Micro's
interpreter, from the zero state and over a stream of calls that carry the state (`--state io`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.ops.svdf import quantize_multiplier
from ember.validate import validate
from tests.frontends.tflite_support import FIXTURES, litert

MODEL = FIXTURES / "svdf_int8.tflite"
OUT_ZP = 5  # the fixture's output zero point (scripts/tflite_handmade.py svdf_int8)


def _frames(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [rng.integers(-128, 128, (2, 8)).astype(np.int8) for _ in range(n)]


def test_quantize_multiplier_is_tflites() -> None:
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(0.75) == (1610612736, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    assert quantize_multiplier(2.0 ** -40) == (0, 0)  # below TFLite's smallest shift: zero
    assert quantize_multiplier(0.0) == (0, 0)


def test_svdf_int8_bit_exact_from_zero_state(tmp_path: Path) -> None:
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    bundle = ember.compile(MODEL, tmp_path, opt_level=1)
    assert bundle.manifest["ops"] == {"SvdfInteger": 1}  # integer end to end, no float SVDF
    interp = litert(MODEL)
    xd, yd = interp.get_input_details()[0], interp.get_output_details()[0]
    micro = runtime.Interpreter.from_file(str(MODEL))
    for x in _frames(3):
        interp.reset_all_variables()
        interp.set_tensor(xd["index"], x)
        interp.invoke()
        ref = interp.get_tensor(yd["index"])
        micro.reset()
        micro.set_input(x, 0)
        micro.invoke()
        got = bundle.run({"x": x})["y"]
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(got, micro.get_output(0))


def test_svdf_int8_streaming_bit_exact(tmp_path: Path) -> None:
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    bundle = ember.compile(MODEL, tmp_path, state="io", opt_level=1)
    assert bundle.manifest["state"] == [{"input": "state", "output": "state_next", "reset": 0}]
    interp = litert(MODEL)
    xd, yd = interp.get_input_details()[0], interp.get_output_details()[0]
    micro = runtime.Interpreter.from_file(str(MODEL))
    state = np.zeros((2, 40), np.int16)  # the reset: the state's zero point
    outs = []
    for k, x in enumerate(_frames(8)):
        interp.set_tensor(xd["index"], x)
        interp.invoke()
        micro.set_input(x, 0)
        micro.invoke()
        got = bundle.run({"x": x, "state": state})
        np.testing.assert_array_equal(got["y"], interp.get_tensor(yd["index"]), err_msg=f"call {k}")
        np.testing.assert_array_equal(got["y"], micro.get_output(0), err_msg=f"call {k} (TFLite Micro)")
        nxt = got["state_next"]
        assert nxt.dtype == np.int16 and nxt.shape == (2, 40)
        # Each filter's row (memory 5) moved left one step, as TFLite Micro keeps it; the newest value last.
        np.testing.assert_array_equal(nxt.reshape(2, 8, 5)[:, :, :4], state.reshape(2, 8, 5)[:, :, 1:])
        state = nxt
        outs.append(got["y"])
    # The fixture's RELU is not applied (TFLite's integer SVDF ignores it): outputs below the zero point.
    assert (np.array(outs) < OUT_ZP).any()
    # `ember validate` feeds the state its reset value and compares y with LiteRT's first invocation.
    result = validate(str(MODEL), str(tmp_path), [], seed=0)
    assert result["ok"] and [o["output"] for o in result["outputs"]] == ["y"]
    assert result["outputs"][0]["max_abs_error"] == 0


def test_svdf_int8_state_with_zero_point_matches_tflite_micro(tmp_path: Path) -> None:
    """TFLite Micro's variant with int8 time weights and an int8 state whose zero point is -7 (LiteRT's
    kernel reads every state as int16, so TFLite Micro alone is the reference): the reset state is the zero
    point, and a stream of calls stays bit-exact."""
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    model = FIXTURES / "svdf_int8_state8.tflite"
    bundle = ember.compile(model, tmp_path, state="io", opt_level=1)
    assert bundle.manifest["state"] == [{"input": "state", "output": "state_next", "reset": -7}]
    micro = runtime.Interpreter.from_file(str(model))
    state = np.full((2, 40), -7, np.int8)
    for k, x in enumerate(_frames(6)):
        micro.set_input(x, 0)
        micro.invoke()
        got = bundle.run({"x": x, "state": state})
        np.testing.assert_array_equal(got["y"], micro.get_output(0), err_msg=f"call {k}")
        state = got["state_next"]
        assert state.dtype == np.int8


_STREAM_MAIN = r"""
#include <stdio.h>
#include "svdf_int8_state8.h"
static const int8_t frames[%(n)d][16] = {%(frames)s};
static uint8_t weights[SVDF_INT8_STATE8_CONSTANT_MEM_SIZE + 1] GLOW_MEM_ALIGN(SVDF_INT8_STATE8_MEM_ALIGN);
static uint8_t mut[SVDF_INT8_STATE8_MUTABLE_MEM_SIZE] GLOW_MEM_ALIGN(SVDF_INT8_STATE8_MEM_ALIGN);
static uint8_t act[SVDF_INT8_STATE8_ACTIVATIONS_MEM_SIZE + 1] GLOW_MEM_ALIGN(SVDF_INT8_STATE8_MEM_ALIGN);
int main(int argc, char **argv) {
    FILE *f = fopen(argv[argc - 1], "rb");
    int k, i;
    if (!f || fread(weights, 1, SVDF_INT8_STATE8_CONSTANT_MEM_SIZE, f) != SVDF_INT8_STATE8_CONSTANT_MEM_SIZE) return 2;
    fclose(f);
    svdf_int8_state8_reset_state(mut);
    for (k = 0; k < %(n)d; ++k) {
        for (i = 0; i < 16; ++i) ((int8_t *)GLOW_GET_ADDR(mut, SVDF_INT8_STATE8_x))[i] = frames[k][i];
        if (svdf_int8_state8(weights, mut, act) != 0) return 3;
        svdf_int8_state8_carry_state(mut);
        const int8_t *y = (const int8_t *)GLOW_GET_ADDR(mut, SVDF_INT8_STATE8_y);
        for (i = 0; i < SVDF_INT8_STATE8_y_SIZE; ++i) printf("%%d ", y[i]);
        printf("\n");
    }
    return 0;
}
"""


def test_header_state_helpers_stream_in_c(tmp_path: Path) -> None:
    """NAME.h's reset/carry helpers (--state io): a C program that resets once and carries the state after
    each call prints TFLite Micro's outputs; the header compiles warning-free."""
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    if shutil.which("cc") is None:
        pytest.skip("needs the host C compiler")
    model = FIXTURES / "svdf_int8_state8.tflite"
    ember.compile(model, tmp_path / "b", state="io", opt_level=1)
    frames = _frames(5)
    rows = ", ".join("{" + ", ".join(str(int(v)) for v in x.ravel()) + "}" for x in frames)
    main = tmp_path / "main.c"
    main.write_text(_STREAM_MAIN % {"n": len(frames), "frames": rows})
    exe = tmp_path / "stream"
    subprocess.run(["cc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(tmp_path / "b"), str(main),
                    str(tmp_path / "b" / "svdf_int8_state8.o"), "-o", str(exe)], check=True, timeout=120)
    out = subprocess.run([str(exe), str(tmp_path / "b" / "svdf_int8_state8.weights.bin")], check=True,
                         capture_output=True, text=True, timeout=60).stdout.splitlines()
    micro = runtime.Interpreter.from_file(str(model))
    for k, x in enumerate(frames):
        micro.set_input(x, 0)
        micro.invoke()
        assert [int(v) for v in out[k].split()] == micro.get_output(0).ravel().tolist(), f"call {k}"
