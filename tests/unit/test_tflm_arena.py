"""benchmarks/tflm_arena.py: TFLite Micro's arena as its own interpreter reports it, the figure bench_mcu.py
compares ember's RAM with. A parse that lost a line, or read the wrong stream, would misstate that comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro")
tflite = pytest.importorskip("tflite")

from benchmarks.tflm_arena import Arena, measure, tflm_arena  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
MODEL = FIXTURES / "conv_variants_int8.tflite"


def _io_bytes(path: Path) -> int:
    m = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    g = m.Subgraphs(0)
    sizes = {0: 4, 2: 4, 3: 1, 9: 1}
    return sum(int(np.prod(g.Tensors(t).ShapeAsNumpy())) * sizes[g.Tensors(t).Type()]
               for t in [*g.InputsAsNumpy(), *g.OutputsAsNumpy()])


def test_arena_is_head_plus_tail_and_holds_the_io_tensors() -> None:
    a = tflm_arena(MODEL)
    assert a.total == a.head + a.tail
    assert a.tail > 0  # persistent structures: at least one per operator
    assert a.head >= _io_bytes(MODEL)  # TFLM's planned part holds the model's input and output tensors


def test_an_arena_smaller_than_the_total_does_not_allocate() -> None:
    from tflite_micro.python.tflite_micro import runtime

    total = tflm_arena(MODEL).total
    with pytest.raises(RuntimeError):
        runtime.Interpreter.from_file(str(MODEL), arena_size=total - 256)


def test_measured_in_a_child_process_as_in_this_one() -> None:
    assert measure(MODEL) == tflm_arena(MODEL)


def test_an_abort_in_tflm_costs_one_measurement_with_a_one_line_reason(tmp_path: Path) -> None:
    """The VWW failure of bench_mcu.py: TFLM's int8 Softmax CHECK-fails (SIGABRT) on an input scale under
    2^-26. Here the fixture's Softmax input scale is patched to 7.8e-9; measuring it in this process would
    kill pytest."""
    data = bytearray((FIXTURES / "op_softmax_int8.tflite").read_bytes())
    g = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    softmax_in = g.Operators(g.OperatorsLength() - 1).Inputs(0)
    old = np.float32(g.Tensors(softmax_in).Quantization().Scale(0)).tobytes()
    assert data.count(old) == 1
    at = data.index(old)
    data[at:at + 4] = np.float32(7.8e-9).tobytes()
    bad = tmp_path / "softmax_scale.tflite"
    bad.write_bytes(data)
    reason = measure(bad)
    assert isinstance(reason, str) and "\n" not in reason
    assert "SIGABRT" in reason and "softmax_scale.tflite" in reason
    assert isinstance(measure(MODEL), Arena)  # and the next measurement is unaffected
