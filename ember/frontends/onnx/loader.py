"""Load an ONNX model into ember's IR: fix input shapes, fold shape computations, inline constant Ifs, and
turn If / Loop / Scan with run-time control into the IR's control-flow nodes (ember/ops/control.py)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper

from ember.errors import ModelFormatError, ShapeError, SymbolicDimensionError, UnsupportedOperatorError
from ember.frontends.onnx.check import check_model, check_types, file_passes_checker
from ember.frontends.onnx.control import ControlFlowBuilder, NotConstant
from ember.frontends.onnx.dtypes import dtype_from_onnx
from ember.frontends.onnx.lean import LeanModel, NotLean, read_lean
from ember.frontends.onnx.ops import AdaptContext, lookup
from ember.frontends.onnx.protos import attr_to_python, evaluate_with_onnx, text
from ember.frontends.onnx.sequence import SEQUENCE_OPS, Opt, Seq, SequenceBuilder, elem_dtype, is_structured
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.counted import expose_counts
from ember.ops.widen import needs_widening, widen

# Ops whose value changes run to run: never folded even with constant inputs.
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"}


@dataclass
class InputSpec:
    dtype: DType | None
    shape: tuple[int, ...] | None


@dataclass
class LoadOptions:
    defines: dict[str, int] = field(default_factory=dict)
    inputs: dict[str, InputSpec] = field(default_factory=dict)
    # Graph inputs frozen to constants (--const): they become initializers, so what they decide folds.
    consts: dict[str, np.ndarray] = field(default_factory=dict)


def read_model(path: str) -> onnx.ModelProto:
    if not os.path.exists(path):
        raise ModelFormatError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ModelFormatError(f"{path}: is a directory, expected an .onnx file")
    try:
        model = onnx.load(path, load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as e:
        raise ModelFormatError(f"{path}: not a valid ONNX model ({type(e).__name__}: {_first_line(e)})") from None
    return _with_external_data(model, path)


def _with_external_data(model: onnx.ModelProto, path: str) -> onnx.ModelProto:
    if not model.HasField("graph") or (len(model.graph.node) == 0 and len(model.graph.output) == 0):
        raise ModelFormatError(f"{path}: not a valid ONNX model (no graph)")
    try:
        onnx.external_data_helper.load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))
    except (OSError, ValueError, onnx.checker.ValidationError) as e:
        raise ModelFormatError(f"{path}: cannot read external data ({_first_line(e)})") from None
    return model


def _read_lean(path: str) -> LeanModel | None:
    """The model with its initializers' bytes left in the file until each becomes an array (lean.py);
    None when the file is not in a form that reader takes (read_model then reads it and names problems)."""
    try:
        source = read_lean(path)
    except (NotLean, OSError):
        return None
    _with_external_data(source.model, path)
    return source


def _is_element_of(name: str, inp: onnx.ValueInfoProto) -> bool:
    """`name` is NAME_<k>, an element of sequence input NAME (or of an optional sequence)."""
    tp = inp.type.optional_type.elem_type if inp.type.HasField("optional_type") else inp.type
    head, _, k = name.rpartition("_")
    return tp.HasField("sequence_type") and head == inp.name and k.isdigit()


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def load_onnx(model: onnx.ModelProto | str, options: LoadOptions | None = None, name: str = "model") -> Graph:
    """The model (a proto, or a file path) as IR. Given a path, the ONNX checker reads the file itself
    (its C++ side, which lets go of the GIL) while Python reads and builds the model beside it, and the
    initializers' bytes stay in the file until each becomes an array (lean.py), so compiling holds the
    weights about once, not three times. A model the checker rejects is read again the usual way, and
    check_model names the problem (not whatever building it met first)."""
    opts = options if options is not None else LoadOptions()
    if not isinstance(model, str):
        return _load(model, opts, name, None, checked=False)
    with ThreadPoolExecutor(1, thread_name_prefix="ember-onnx-checker") as pool:
        verdict = pool.submit(file_passes_checker, model)
        source = _read_lean(model)
        try:
            graph = _load(source.model, opts, name, source, checked=True) if source is not None else None
        except Exception:
            if verdict.result():
                raise
            graph = None
        checked = verdict.result()
    if graph is not None and checked:
        return graph
    # Not in the form the lean reader takes, or the checker complains: parsed the usual way (check_model
    # then runs the checker on the proto, which names the problem).
    return _load(read_model(model), opts, name, None, checked)


def _load(model: onnx.ModelProto, opts: LoadOptions, name: str, source: LeanModel | None, checked: bool) -> Graph:
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset == 0 and not any(o.domain in ("ai.onnx.ml", "com.microsoft") for o in model.opset_import):
        raise ModelFormatError("model imports no ai.onnx opset")  # an ai.onnx.ml model may import only its own
    check_model(model, run_checker=not checked)
    graph = _Builder(model, opts, name, opset, source).build()
    check_types(model, graph, inputs_overridden=any(s.dtype is not None for s in opts.inputs.values()))
    return graph


class _Builder(ControlFlowBuilder, SequenceBuilder):
    def __init__(self, model: onnx.ModelProto, opts: LoadOptions, name: str, opset: int,
                 source: LeanModel | None = None) -> None:
        self.model, self.opts, self.opset = model, opts, opset
        self.source = source  # where the initializers' bytes are, when the proto does not hold them
        self.graph = Graph(name)
        self.domains = {o.domain if o.domain != "ai.onnx" else "": o.version for o in model.opset_import}

    def build(self) -> Graph:
        g = self.model.graph
        env: dict[str, Value] = {}
        for i, init in enumerate(g.initializer):
            try:
                arr = self.source.initializer_array(i) if self.source else numpy_helper.to_array(init)
            except Exception as e:
                raise ModelFormatError(f"initializer '{init.name}': {_first_line(e)}") from None
            env[init.name] = self._constant(init.name, arr, init.data_type, f"initializer '{init.name}'")
        unknown = set(self.opts.inputs) - {i.name for i in g.input} - {
            n for n in self.opts.inputs for i in g.input if _is_element_of(n, i)}
        if unknown:
            raise ShapeError(f"--input names unknown input(s): {', '.join(sorted(unknown))}")
        unknown = set(self.opts.consts) - {i.name for i in g.input if i.name not in env}
        if unknown:
            raise ShapeError(f"--const names unknown input(s): {', '.join(sorted(unknown))}")
        for inp in g.input:
            if inp.name in env:
                continue  # initializer listed as input (old exporters)
            if inp.type.HasField("sequence_type") or inp.type.HasField("optional_type"):
                env[inp.name] = self._structured_input(inp)
                continue
            if inp.name in self.opts.consts:
                env[inp.name] = self.graph.constant(inp.name, self._const_input(inp, self.opts.consts[inp.name]))
                continue
            v = self.graph.value(inp.name, self._input_type(inp))
            env[inp.name] = v
            self.graph.inputs.append(v)
        self._nodes(g.node, env)
        for out in g.output:
            if out.name not in env:
                raise ModelFormatError(f"graph output '{out.name}' is not produced by any node")
            if is_structured(env[out.name]):
                self._structured_output(out.name, env[out.name])
                continue
            self.graph.outputs.append(env[out.name])
            self.graph.output_names.append(out.name)
        expose_counts(self.graph)
        return self.graph

    def _structured_input(self, inp: onnx.ValueInfoProto) -> Seq | Opt:
        """A sequence input: one tensor input per element, their shapes given by --input NAME_0, NAME_1, ...
        An optional input is compiled present (a model that needs it absent is given without it)."""
        tp, optional = inp.type, inp.type.HasField("optional_type")
        if optional:
            tp = tp.optional_type.elem_type
        if tp.HasField("tensor_type"):
            v = self.graph.value(inp.name, self._input_type(onnx.helper.make_value_info(inp.name, tp)))
            self.graph.inputs.append(v)
            return Opt(v)
        if not tp.HasField("sequence_type"):
            raise UnsupportedOperatorError("input", inp.name, "only tensors, sequences and optionals are supported")
        dtype = elem_dtype(tp, f"input '{inp.name}'")
        count = 0
        while f"{inp.name}_{count}" in self.opts.inputs:
            count += 1
        if count == 0:
            raise SymbolicDimensionError(f"input '{inp.name}' is a sequence: give its length and element shapes "
                                         f"with --input {inp.name}_0:{dtype.short}:D0xD1x... --input "
                                         f"{inp.name}_1:... (one per element)")
        items = []
        for k in range(count):
            t = self._input_type(onnx.helper.make_value_info(f"{inp.name}_{k}", tp.sequence_type.elem_type))
            items.append(self.graph.value(f"{inp.name}_{k}", t))
        self.graph.inputs.extend(items)
        self.graph.sequence_inputs[inp.name] = [v.name for v in items]
        seq = Seq(tuple(items), dtype)
        return Opt(seq) if optional else seq

    def _structured_output(self, name: str, x: Seq | Opt) -> None:
        """A sequence output as one tensor output per element (NAME_0, NAME_1, ...); a present optional as
        what it holds. An absent one has no tensor to give: refused."""
        if isinstance(x, Opt):
            if x.value is None:
                raise UnsupportedOperatorError("output", name, "it is an empty optional (known at compile time); "
                                               "a bundle's outputs are tensors that always exist")
            x = x.value
        if isinstance(x, Value):
            self.graph.outputs.append(x)
            self.graph.output_names.append(name)
            return
        names = []
        for k, v in enumerate(x.items):
            if any(v is u for u in (*self.graph.inputs, *self.graph.outputs)):  # its own buffer per output
                copy = self.graph.value(f"{name}_{k}", v.type)
                self._add(Node("Identity", self.graph.unique_name(f"{name}_copy{k}"), [v], [copy]))
                v = copy
            self.graph.outputs.append(v)
            self.graph.output_names.append(f"{name}_{k}")
            names.append(f"{name}_{k}")
        self.graph.sequence_outputs[name] = names

    def _constant(self, name: str, arr: np.ndarray, elem_type: int, where: str) -> Value:
        try:
            dtype_from_onnx(elem_type)
        except KeyError as e:
            raise UnsupportedOperatorError("Constant", where, str(e).strip("'\"")) from None
        return self.graph.constant(name, np.array(arr, order="C"))

    def _const_input(self, inp: onnx.ValueInfoProto, arr: np.ndarray) -> np.ndarray:
        """A --const value as the declared input's type: same element count (a number or a flat list is
        reshaped), values representable in its element type. Symbolic dimensions take the value's."""
        try:
            want = self._input_type(inp)
        except SymbolicDimensionError:
            dims = inp.type.tensor_type.shape.dim
            if len(dims) != arr.ndim or any(d.HasField("dim_value") and d.dim_value != n
                                            for d, n in zip(dims, arr.shape, strict=True)):
                raise ShapeError(f"--const {inp.name}: a value of shape {list(arr.shape)} does not fit input "
                                 f"'{inp.name}' (declared with {len(dims)} dimension(s))") from None
            want = TensorType(dtype_from_onnx(inp.type.tensor_type.elem_type), tuple(arr.shape))
        if arr.shape != want.shape and not (arr.ndim <= 1 and arr.size == want.numel):
            raise ShapeError(f"--const {inp.name}: a value of shape {list(arr.shape)} does not fit input "
                             f"'{inp.name}' of type {want}")
        src = arr.reshape(want.shape)
        with np.errstate(all="ignore"):
            cast = src.astype(want.dtype.np)
            if want.dtype.np.kind == "f":
                bad = np.isfinite(src.astype(np.float64)) & ~np.isfinite(cast.astype(np.float64))
            else:
                bad = cast.astype(np.float64) != src.astype(np.float64)
        if bad.any():
            raise ShapeError(f"--const {inp.name}: the value {src[bad].reshape(-1)[0].item()!r} is not "
                             f"representable in input '{inp.name}''s element type {want.dtype.short}")
        return cast

    def _input_type(self, inp: onnx.ValueInfoProto) -> TensorType:
        spec = self.opts.inputs.get(inp.name)
        tt = inp.type.tensor_type
        if not inp.type.HasField("tensor_type"):
            raise UnsupportedOperatorError("input", inp.name, "only tensor inputs are supported")
        try:
            dtype = spec.dtype if spec and spec.dtype else dtype_from_onnx(tt.elem_type)
        except KeyError as e:
            raise ModelFormatError(f"input '{inp.name}': {str(e).strip(chr(39))}") from None
        if spec and spec.shape is not None:
            return TensorType(dtype, spec.shape)
        if not tt.HasField("shape"):
            raise SymbolicDimensionError(
                f"input '{inp.name}' has no shape; give one with --input {inp.name}:{dtype.short}:D0xD1x..."
            )
        dims = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(d.dim_value)
            elif d.HasField("dim_param") and d.dim_param in self.opts.defines:
                dims.append(self.opts.defines[d.dim_param])
            elif d.HasField("dim_param") and d.dim_param:
                raise SymbolicDimensionError(
                    f"input '{inp.name}' dimension {i} is the symbol '{d.dim_param}'; "
                    f"fix it with --define {d.dim_param}=VALUE"
                )
            else:
                raise SymbolicDimensionError(
                    f"input '{inp.name}' dimension {i} is unknown; give the shape with "
                    f"--input {inp.name}:{dtype.short}:D0xD1x..."
                )
        return TensorType(dtype, tuple(dims))

    # nodes ------------------------------------------------------------------
    def _nodes(self, nodes: list[onnx.NodeProto], env: dict[str, Value]) -> None:
        for index, np_node in enumerate(nodes):
            label = text(np_node.name) or f"{text(np_node.op_type)}_{index}"
            if np_node.domain in ("", "ai.onnx") and np_node.op_type in ("If", "Loop", "Scan"):
                self.control_flow(np_node, label, env)
                continue
            structured = [n for n in np_node.input if n and n in env and is_structured(env[n])]
            if np_node.domain in ("", "ai.onnx") and (np_node.op_type in SEQUENCE_OPS
                                                       or (np_node.op_type == "Identity" and structured)):
                self.sequence_node(np_node, label, env)
                continue
            if structured:
                raise UnsupportedOperatorError(np_node.op_type, label, f"its input '{structured[0]}' is a sequence "
                                               "or optional, which only sequence operators take",
                                               domain=np_node.domain or "ai.onnx")
            inputs: list[Value | None] = []
            for name in np_node.input:
                if name == "":
                    inputs.append(None)
                elif name not in env:
                    raise ModelFormatError(f"node '{label}' ({np_node.op_type}) reads undefined tensor '{name}'")
                else:
                    inputs.append(env[name])
            outputs = self._make_node(np_node, label, inputs)
            for name, v in zip(np_node.output, outputs, strict=True):
                if v is not None:
                    env[name] = v

    def _make_node(self, np_node: onnx.NodeProto, label: str, inputs: list[Value | None]) -> list[Value | None]:
        """The IR node(s) of one ONNX node; returns the values of its outputs."""
        domain = "" if np_node.domain in ("", "ai.onnx") else np_node.domain
        entry = lookup(np_node.op_type, domain)
        if entry is None or not entry.ir:
            raise UnsupportedOperatorError(np_node.op_type, label, entry.refusal if entry else "",
                                           domain=domain or "ai.onnx")
        version = self.domains.get(domain, 0)
        if version < entry.since:
            raise UnsupportedOperatorError(np_node.op_type, label, f"opset {version} is older than the oldest "
                                           f"supported ({entry.since})", domain=domain or "ai.onnx")
        if not domain and onnx.defs.has(np_node.op_type) and not onnx.defs.has(np_node.op_type, version):
            raise UnsupportedOperatorError(np_node.op_type, label, f"it is not defined at opset {version}, the "
                                           "model's (it came in a later opset)", domain="ai.onnx")
        opdef = registry.get(entry.ir)
        attrs = {a.name: attr_to_python(a) for a in np_node.attribute}
        outputs: list[Value | None] = [
            self.graph.value(o, TensorType(DType.FLOAT32, ())) if o else None for o in np_node.output
        ]
        node = Node(entry.ir, label, inputs, outputs, attrs)
        for o in outputs:
            if o is not None:
                o.producer = node
        folded = self._try_fold(np_node, node, opdef)
        if folded is not None:
            for v, arr in zip(outputs, folded, strict=False):
                if v is not None:
                    v.const = np.array(arr, order="C")  # keeps 0-d scalars 0-d
                    try:
                        dtype = DType.from_numpy(v.const.dtype)
                    except KeyError:  # strings, complex numbers: no tensor type of ember's
                        kind = "string" if v.const.dtype.kind in "OSU" else str(v.const.dtype)
                        raise UnsupportedOperatorError(np_node.op_type, label, f"'{v.name}' is a {kind} tensor, "
                                                       "which ember does not compile", domain=domain or "ai.onnx"
                                                       ) from None
                    v.type = TensorType(dtype, tuple(v.const.shape))
                    v.producer = None
            return outputs
        nodes = entry.adapt(node, AdaptContext(self.graph, version)) if entry.adapt is not None else [node]
        for n in nodes:
            self._add(n)
        return outputs

    def _add(self, node: Node) -> None:
        """Types a canonical node's outputs with its OpDef's `infer`, normalizes it, and appends it."""
        opdef = registry.get(node.op)
        for i in opdef.shape_inputs:
            v = node.input(i)
            if v is not None and not v.is_const:
                raise NotConstant(
                    f"node '{node.name}' ({node.op}): input {i} ('{v.name}') must be a compile-time constant "
                    "(it sets a shape); fix the input shapes with --define/--input"
                )
        assert opdef.infer is not None, f"{node.op} has no infer"
        narrowing: list[Node] = []
        try:
            self._infer_or_widen(node, opdef)
            if needs_widening(node):  # bfloat16, float8, int4 ... computed in float32 between Casts
                widening, narrowing = widen(self.graph, node)
                for cast in widening:
                    self._add(cast)
                self._infer(node, opdef)
            if opdef.normalize is not None:
                opdef.normalize(node, self.graph)
        except (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError) as e:
            # A malformed model (an attribute list too short, an axis out of range) that no named check caught.
            raise ShapeError(f"node '{node.name}' ({node.op}): its attributes or input shapes do not fit "
                             f"({type(e).__name__}: {_first_line(e)})") from None
        self.graph.add_node(node)
        for cast in narrowing:
            self._add(cast)

    def _infer_or_widen(self, node: Node, opdef) -> None:
        """Types the node's outputs. An op whose `infer` refuses a storage type (Celu on bfloat16) gets its
        inputs widened first; its outputs of the widened type then take the storage type back, so that the
        caller's widening adds the narrowing Casts."""
        try:
            self._infer(node, opdef)
            return
        except (UnsupportedOperatorError, ShapeError):
            stored = [v.dtype for v in node.inputs if v is not None and v.dtype.is_storage_only]
            if not stored:
                raise
        widening, _ = widen(self.graph, node)
        for cast in widening:
            self._add(cast)
        self._infer(node, opdef)
        for v in node.outputs:
            if v is not None and v.dtype is stored[0].widened:
                v.type = TensorType(stored[0], v.shape)

    @staticmethod
    def _infer(node: Node, opdef) -> None:
        assert opdef.infer is not None
        for v, t in zip(node.outputs, opdef.infer(node), strict=False):
            if v is not None and t is not None:
                v.type = t
                v.producer = node

    def _try_fold(self, np_node: onnx.NodeProto, node: Node, opdef) -> list[np.ndarray] | None:
        if opdef.fold is not None:
            res = opdef.fold(node)
            if res is not None:
                return res
        # `fold_late` ops (DequantizeLinear of int8 weights) stay nodes: a pass turns them into integer kernels.
        # Operators outside ONNX (com.microsoft) fold after their adapter rewrote them, in the passes.
        consts = [v.const if v is not None else None for v in node.inputs]
        if np_node.op_type == "CastLike" and len(node.inputs) == 2 and node.inputs[1] is not None:
            # Only the target's element type matters: a constant cast like a run-time tensor folds.
            consts[1] = np.zeros((0,), node.inputs[1].dtype.np)
        if (np_node.op_type in _NONDETERMINISTIC or opdef.data.get("fold_late") or not onnx.defs.has(np_node.op_type)
                or np_node.domain not in ("", "ai.onnx")
                or any(v is not None and c is None for v, c in zip(node.inputs, consts, strict=True))):
            return None
        try:
            return evaluate_with_onnx(np_node, self.domains, consts)
        except Exception as e:  # the reference implementation raises many exception types
            # onnx's reference has gaps (GatherElements with indices shorter than the data along a
            # non-gathered axis, as transformers' BERT export writes): ember's own numpy evaluation decides.
            if opdef.evaluate is not None:
                try:
                    return [np.asarray(r) for r in opdef.evaluate(node, consts)]
                except Exception:  # noqa: BLE001 - the reference's message is the one to show
                    pass
            raise ShapeError(f"node '{node.name}' ({node.op}): constant folding failed: {_first_line(e)}") from None
