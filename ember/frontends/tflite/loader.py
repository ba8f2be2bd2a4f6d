"""Read a .tflite flatbuffer (the `tflite` package's generated reader) and build ember's IR from subgraph 0
(the subgraphs an IF or WHILE names become the subgraphs of ember's If and Loop: `run_subgraph`).

Inputs and outputs keep TFLite's layout (NHWC); converters put NCHW canonical operators between Transposes,
which passes/transposes.py cancels between layers. `Graph.layouts` records each I/O's layout for NAME.json.
Sparse constants are made dense (sparse.py), variable tensors start at zero (a bundle is stateless; with
`state_io`, --state io, they are inputs and their next values outputs), and
SPACE_TO_BATCH_ND -> convolution -> BATCH_TO_SPACE_ND chains convert as one dilated convolution (atrous.py).
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
import tflite

from ember.errors import ModelFormatError, OptionError, ShapeError, UnsupportedOperatorError
from ember.frontends.detect import TFLITE_IDENTIFIER
from ember.frontends.tflite.atrous import Atrous, find_atrous
from ember.frontends.tflite.context import OpContext, Quant, TensorInfo, add_node
from ember.frontends.tflite.ops import CONVERTERS, INT16_EXACT, builtin_name, options_of
from ember.frontends.tflite.sparse import densify
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value

_DTYPES = {
    tflite.TensorType.FLOAT32: DType.FLOAT32, tflite.TensorType.FLOAT16: DType.FLOAT16,
    tflite.TensorType.FLOAT64: DType.FLOAT64, tflite.TensorType.INT32: DType.INT32,
    tflite.TensorType.INT64: DType.INT64, tflite.TensorType.INT16: DType.INT16, tflite.TensorType.INT8: DType.INT8,
    tflite.TensorType.UINT8: DType.UINT8, tflite.TensorType.BOOL: DType.BOOL,
}


def read_tflite(path: str) -> bytes:
    if not os.path.exists(path):
        raise ModelFormatError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    if data[4:8] != TFLITE_IDENTIFIER:
        raise ModelFormatError(f"{path}: not a TFLite model (no 'TFL3' identifier)")
    return data


def load_tflite(data: bytes, name: str = "model", path: str = "model", state_io: bool = False,
                rounding: str = "litert") -> Graph:
    """The IR of subgraph 0 of the TFLite model in `data` (the whole file). `state_io`: subgraph 0's variable
    tensors (recurrent state) become graph inputs, and their values after the run graph outputs. `rounding`:
    whose integer arithmetic the quantized operators follow, LiteRT's or TFLite Micro's (frontends/tflite/
    context.py `rounding`)."""
    try:
        model = tflite.Model.GetRootAs(data, 0)
        builder = _Builder(model, data, name, path, state_io)
        builder.rounding = rounding
        return builder.build()
    except (struct.error, IndexError, ValueError, TypeError, AttributeError) as e:
        # flatbuffers reads past the end of a truncated file, or offsets that point nowhere.
        s = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelFormatError(f"{path}: malformed or truncated TFLite flatbuffer ({type(e).__name__}: {s})") from None


class _Builder:
    def __init__(self, model: Any, data: bytes, name: str, path: str, state_io: bool = False) -> None:
        self.model, self.data, self.path, self.state_io = model, data, path, state_io
        self.state_inputs: dict[int, Value] = {}  # subgraph 0's variable tensors as state inputs (state_io)
        self.resets: dict[int, int | float] = {}  # their reset values
        self.graph = Graph(name)
        self.values: dict[int, Value] = {}
        self.tensors: list[TensorInfo] = []
        self.index = 0  # the subgraph this builder converts
        self.active: tuple[int, ...] = (0,)  # the subgraphs being converted, outermost first
        self.rounding = "litert"  # whose requantisation quantized outputs are marked with (context.py)

    def build(self) -> Graph:
        m = self.model
        if m.SubgraphsLength() < 1:
            raise ModelFormatError(f"{self.path}: the TFLite model has no subgraph")
        sg = m.Subgraphs(0)
        self.tensors = [self._tensor(sg.Tensors(i), i) for i in range(sg.TensorsLength())]
        in_names, out_names = self._signature_names(sg)
        for ti in sg.InputsAsNumpy().tolist():
            t = self._tensor_at(ti, "graph input")
            name = in_names.get(ti, t.name)
            v = self.graph.value(name, TensorType(t.dtype, t.shape))
            self.values[ti] = v
            self.graph.inputs.append(v)
            self.graph.layouts[v.name] = _layout(t.shape)
        if self.state_io:
            self._state_inputs(sg)
        self._check_unsupported(sg)
        self._operators(sg)
        for ti in sg.OutputsAsNumpy().tolist():
            t = self._tensor_at(ti, "graph output")
            v = self.value_of(ti)
            name = out_names.get(ti, t.name)
            self.graph.outputs.append(v)
            self.graph.output_names.append(name)
            self.graph.layouts[name] = _layout(t.shape)
        self._state_outputs()
        return self.graph

    def _state_inputs(self, sg: Any) -> None:
        """Each variable tensor becomes an input holding the state before the run; its initial value (zero,
        its zero point, or the one value its buffer holds) is the reset value NAME.json states."""
        for ti in range(sg.TensorsLength()):
            if not sg.Tensors(ti).IsVariable() or ti in self.values:
                continue
            t = self.tensors[ti]
            init = t.data if t.data is not None else np.zeros(t.shape, t.dtype.np)
            reset = init.reshape(-1)[0].item() if init.size else 0
            if init.size and not np.all(init == init.reshape(-1)[0]):
                raise OptionError(f"--state io: variable tensor {ti} ('{t.name}') starts from values that differ "
                                  "from element to element; a state input resets to one number")
            v = self.graph.value(t.name, TensorType(t.dtype, t.shape))
            self.tensors[ti] = TensorInfo(t.name, t.dtype, t.shape, t.quant, None)  # read from the input
            self.values[ti] = self.state_inputs[ti] = v
            self.resets[ti] = reset
            self.graph.inputs.append(v)
            self.graph.layouts[v.name] = "ND"

    def _state_outputs(self) -> None:
        """The state after the run (what the last operator writing each variable left in it), as outputs
        named `<state input>_next`: the caller copies each onto its input before the next call."""
        taken = {v.name for v in self.graph.inputs} | set(self.graph.output_names)
        for ti, state_in in self.state_inputs.items():
            name = f"{state_in.name}_next"
            while name in taken:
                name += "_"
            taken.add(name)
            v = self.values[ti]
            if v is state_in:  # no operator writes it: the state passes through unchanged
                v = self.graph.value(name, v.type)
                add_node(self.graph, Node("Identity", self.graph.unique_name(f"{name}_Identity"), [state_in], [v]))
            self.graph.outputs.append(v)
            self.graph.output_names.append(name)
            self.graph.layouts[name] = "ND"
            self.graph.state_outputs[state_in.name] = (name, self.resets[ti])

    def write_state(self, index: int, v: Value) -> None:
        """An operator updated variable tensor `index` (LSTM, SVDF state) to `v`: later readers see it, and
        with state_io it is the state output."""
        self.values[index] = v

    def run_subgraph(self, index: int, graph: Graph, inputs: list[Value], what: str) -> list[Value]:
        """Converts subgraph `index` (of an IF, WHILE) into `graph`, its inputs bound to `inputs`; returns the
        values of its outputs."""
        m = self.model
        if not 0 < index < m.SubgraphsLength():
            raise ModelFormatError(f"{self.path}: {what} names subgraph {index}, but the model has "
                                   f"{m.SubgraphsLength()}")
        if index in self.active:
            raise UnsupportedOperatorError("subgraph", what, f"subgraph {index} calls itself (recursion)",
                                           domain="tflite")
        child = _Builder(m, self.data, self.graph.name, self.path)
        child.graph, child.index, child.active = graph, index, (*self.active, index)
        sg = m.Subgraphs(index)
        child.tensors = [child._tensor(sg.Tensors(i), i) for i in range(sg.TensorsLength())]
        formal = sg.InputsAsNumpy().tolist() if sg.InputsLength() else []
        if len(formal) != len(inputs):
            raise ModelFormatError(f"{self.path}: {what}: subgraph {index} takes {len(formal)} inputs, given "
                                   f"{len(inputs)}")
        for ti, v in zip(formal, inputs, strict=True):
            t = child._tensor_at(ti, f"subgraph {index}'s input")
            if t.shape != v.shape or t.dtype is not v.dtype:
                raise ShapeError(f"{what}: subgraph {index} input '{t.name}' is {t.dtype.short}{list(t.shape)}, given "
                                 f"{v.type}")
            child.values[ti] = v
        child._check_unsupported(sg)
        child._operators(sg)
        outs = sg.OutputsAsNumpy().tolist() if sg.OutputsLength() else []
        for ti in outs:
            child._tensor_at(ti, f"subgraph {index}'s output")
        return [child.value_of(ti) for ti in outs]

    # ---- tensors ------------------------------------------------------------------------------------
    def _tensor_at(self, index: int, what: str) -> TensorInfo:
        if not 0 <= index < len(self.tensors):
            raise ModelFormatError(f"{self.path}: {what} names tensor {index}, but subgraph {self.index} has "
                                   f"{len(self.tensors)} tensors")
        return self.tensors[index]

    def _tensor(self, t: Any, index: int) -> TensorInfo:
        name = (t.Name() or b"").decode("utf-8", "replace") or f"tensor_{index}"
        try:
            dtype = _DTYPES[t.Type()]
        except KeyError:
            kind = next((k for k, v in vars(tflite.TensorType).items() if v == t.Type()), str(t.Type()))
            raise ModelFormatError(f"{self.path}: tensor {index} ('{name}') has element type {kind}, which ember "
                                   "does not compile") from None
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        sig = t.ShapeSignatureAsNumpy() if t.ShapeSignatureLength() else None
        if sig is not None and any(int(d) < 0 for d in sig) and any(d <= 0 for d in shape):
            raise ShapeError(f"tensor {index} ('{name}') has a dynamic dimension; convert with a fixed input shape")
        quant = None
        q = t.Quantization()
        if q is not None and q.ScaleLength() > 0:
            scale = q.ScaleAsNumpy().astype(np.float32)
            zp = q.ZeroPointAsNumpy().astype(np.int64) if q.ZeroPointLength() else np.zeros(scale.shape, np.int64)
            quant = Quant(scale, zp, int(q.QuantizedDimension()) if scale.size > 1 else None)
        data = self._buffer(t.Buffer(), index, name, dtype, shape, t.Sparsity())
        if data is None and t.IsVariable():
            # A recurrent state (LSTM, SVDF) LiteRT keeps between invocations: a bundle is stateless, so each
            # run starts from the state's initial value, zero (its zero point when quantized).
            zp = int(quant.zero_point.reshape(-1)[0]) if quant is not None else 0
            data = np.full(shape, zp, dtype.np)
        return TensorInfo(name, dtype, shape, quant, data)

    def _buffer(self, bi: int, index: int, name: str, dtype: DType, shape: tuple[int, ...],
                sparsity: Any = None) -> np.ndarray | None:
        m = self.model
        if bi == 0:
            return None  # buffer 0 is the empty sentinel: a run-time tensor
        if not 0 <= bi < m.BuffersLength():
            raise ModelFormatError(f"{self.path}: tensor {index} ('{name}') names buffer {bi}, but the model has "
                                   f"{m.BuffersLength()} buffers")
        buf = m.Buffers(bi)
        offset = buf.Offset() if hasattr(buf, "Offset") else 0
        if offset > 1:  # models over 2 GB keep buffers after the flatbuffer, at (offset, size) in the file
            size = buf.Size()
            if offset + size > len(self.data):
                raise ModelFormatError(f"{self.path}: tensor {index} ('{name}') buffer {bi} lies past the file end")
            raw = np.frombuffer(self.data, np.uint8, size, offset)
        elif buf.DataLength() == 0:
            return None
        else:
            raw = buf.DataAsNumpy()
        if sparsity is not None:  # stored values of a sparse constant: dense from here on
            if raw.size % dtype.itemsize:
                raise ModelFormatError(f"{self.path}: tensor {index} ('{name}') has a sparse buffer of {raw.size} "
                                       f"bytes, not a multiple of {dtype.itemsize}")
            return densify(np.frombuffer(raw.tobytes(), dtype.np), shape, sparsity,
                           f"{self.path}: tensor {index} ('{name}')")
        n = int(np.prod(shape)) if shape else 1
        if raw.size != n * dtype.itemsize:
            raise ModelFormatError(f"{self.path}: tensor {index} ('{name}') of shape {list(shape)} has a buffer of "
                                   f"{raw.size} bytes, expected {n * dtype.itemsize}")
        return np.frombuffer(raw.tobytes(), dtype.np).reshape(shape)

    def _signature_names(self, sg: Any) -> tuple[dict[int, str], dict[int, str]]:
        """The serving signature's names for subgraph 0's inputs and outputs (what LiteRT's runner uses)."""
        ins: dict[int, str] = {}
        outs: dict[int, str] = {}
        for s in range(self.model.SignatureDefsLength()):
            sd = self.model.SignatureDefs(s)
            if sd.SubgraphIndex() != 0:
                continue
            for j in range(sd.InputsLength()):
                ins[sd.Inputs(j).TensorIndex()] = sd.Inputs(j).Name().decode("utf-8", "replace")
            for j in range(sd.OutputsLength()):
                outs[sd.Outputs(j).TensorIndex()] = sd.Outputs(j).Name().decode("utf-8", "replace")
            break
        return ins, outs

    # ---- values -------------------------------------------------------------------------------------
    def const_data(self, index: int) -> np.ndarray | None:
        t = self._tensor_at(index, "an operator")
        if t.data is not None:
            return t.data
        v = self.values.get(index)
        return v.const if v is not None and v.is_const else None

    def value_of(self, index: int) -> Value:
        v = self.values.get(index)
        if v is not None:
            return v
        t = self._tensor_at(index, "an operator")
        if t.data is None:
            raise ModelFormatError(f"{self.path}: tensor {index} ('{t.name}') is read before any operator writes it")
        v = self.graph.constant(t.name, t.data)
        self.values[index] = v
        return v

    def bind(self, index: int, v: Value) -> None:
        self.values[index] = v

    # ---- operators ----------------------------------------------------------------------------------
    def _opname(self, op: Any, i: int) -> str:
        oi = op.OpcodeIndex()
        if not 0 <= oi < self.model.OperatorCodesLength():
            raise ModelFormatError(f"{self.path}: operator {i} names opcode {oi}, but the model has "
                                   f"{self.model.OperatorCodesLength()}")
        return builtin_name(self.model.OperatorCodes(oi))

    def _check_unsupported(self, sg: Any) -> None:
        """One error naming the first operator ember cannot compile and listing the others (custom operators
        by their custom name), before any conversion work."""
        missing = []
        for i in range(sg.OperatorsLength()):
            name = self._opname(sg.Operators(i), i)
            if name not in CONVERTERS:
                missing.append((name, i))
        if not missing:
            return
        (name, i), rest = missing[0], missing[1:]
        custom = name.startswith("custom op ")
        detail = "a custom operator" if custom else "a TFLite builtin operator ember does not convert yet"
        if rest:
            detail += "; also " + ", ".join(f"{n} (operator {k})" for n, k in rest[:8])
            detail += f" and {len(rest) - 8} more" if len(rest) > 8 else ""
        where = f"operator {i}" if self.index == 0 else f"subgraph {self.index} operator {i}"
        raise UnsupportedOperatorError(name[len("custom op '"):-1] if custom else name, where, detail,
                                       domain="tflite custom" if custom else "tflite")

    def _operators(self, sg: Any) -> None:
        n = sg.OperatorsLength()
        names = [self._opname(sg.Operators(i), i) for i in range(n)]
        outs = set(sg.OutputsAsNumpy().tolist()) if sg.OutputsLength() else set()
        folds = find_atrous(sg, names, lambda t: self._tensor_at(t, "an operator").data, outs)
        skip = {f.s2b for f in folds.values()} | {f.b2s for f in folds.values()}
        for i in range(n):
            if i not in skip:
                self._operator(sg.Operators(i), i, folds.get(i))

    def _operator(self, op: Any, i: int, atrous: Atrous | None = None) -> None:
        name = self._opname(op, i)
        inputs = op.InputsAsNumpy().tolist() if op.InputsLength() else []
        outputs = op.OutputsAsNumpy().tolist() if op.OutputsLength() else []
        if atrous is not None:  # the convolution reads the space-to-batch's input, writes the batch-to-space's output
            sg_ops = self.model.Subgraphs(self.index)
            inputs[0] = int(sg_ops.Operators(atrous.s2b).Inputs(0))
            outputs = [int(sg_ops.Operators(atrous.b2s).Outputs(0))]
        for t in [*inputs, *outputs]:
            if t >= 0:
                self._tensor_at(t, f"operator {i} ({name})")
        ctx = OpContext(self, i, name, inputs, outputs, options_of(op, name))
        ctx.atrous = atrous
        ctx.intermediates = op.IntermediatesAsNumpy().tolist() if op.IntermediatesLength() else []
        if name not in INT16_EXACT:
            for t in [*inputs, *outputs]:
                info = self.tensors[t] if t >= 0 else None
                if info is not None and info.dtype is DType.INT16 and info.quant is not None and info.data is None:
                    raise ctx.unsupported(f"its int16 tensor '{info.name}': TFLite's 16x8 (int16 activation) "
                                          f"arithmetic for {name} is not implemented")
        try:
            CONVERTERS[name](ctx)
        except (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError) as e:
            # A malformed operator (an axis out of range, options of the wrong kind) no named check caught.
            s = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ShapeError(f"operator {i} ({name}): its options or input shapes do not fit "
                             f"({type(e).__name__}: {s})") from None
        for k, t in enumerate(outputs):
            if t >= 0 and t not in self.values:
                raise ModelFormatError(f"operator {i} ({name}): output {k} was not computed")


def _layout(shape: tuple[int, ...]) -> str:
    return "NHWC" if len(shape) == 4 else "ND"
