"""benchmarks/tflm_arena.py: TFLite Micro's arena as its own interpreter reports it, the figure bench_mcu.py
compares ember's RAM with. A parse that lost a line, or read the wrong stream, would misstate that comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro")
tflite = pytest.importorskip("tflite")

from benchmarks.tflm_arena import tflm_arena  # noqa: E402

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "tflite" / "conv_variants_int8.tflite"


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
