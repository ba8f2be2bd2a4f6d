"""OpDef: everything ember knows about one operator, in one record.

An operator lives in exactly one `ember/ops/<family>.py`: how to infer its output types, which inputs
must be compile-time constants, how to evaluate it on constants (numpy), and exactly one lowering: `expr`
(an elementwise expression that can be fused) or `lower` (a call into a C kernel from `codegen/kernels/`).
The IR knows no frontend: each frontend (ember/frontends/<format>/) maps its operators onto these,
rewriting every version-specific form into the one canonical form an OpDef documents.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ember.ir.dtypes import TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops.epilogue import Epilogue

if TYPE_CHECKING:
    import numpy as np

    from ember.codegen.emitter import ExprHandler, KernelEmitter
    from ember.ops.parallel import Split

InferFn = Callable[[Node], list[TensorType | None]]
EvaluateFn = Callable[[Node, list["np.ndarray | None"]], list["np.ndarray"]]
ExprFn = Callable[["ExprHandler", list[str], Node], str]
LowerFn = Callable[[Node, "KernelEmitter"], None]
NormalizeFn = Callable[[Node, Graph], None]


@dataclass(frozen=True)
class WeightLayout:
    """Where a weighted op keeps its weights: batch-norm folding rescales, quantization gives per-channel
    scales and weight compression widens along `out_axis`."""

    # The weight's axis that indexes output channels, given the node and its weight value.
    out_axis: Callable[[Node, Value], int]
    input: int = 1
    bias: int | None = 2
    # int8: scales per output channel unless --per-channel says otherwise (convolutions).
    per_channel_default: bool = False


@dataclass(frozen=True)
class SubgraphBinding:
    """How one subgraph of a control-flow node meets the node's values (memory/planner.py, codegen).

    `inputs[i]`: the node value (one of its inputs, or one of its outputs) whose buffer the subgraph's
    formal input i shares; None: the formal has a buffer of its own, which the node's lowering fills and
    which lives across the whole node. `outputs[i]`: the node output the subgraph's output i is computed
    straight into; None: a buffer of its own, living to the node's end (the lowering copies it on)."""

    graph: Graph
    inputs: list[Value | None]
    outputs: list[Value | None]


class Int8(Enum):
    """How an op takes part in int8 quantization (quant/quantize.py, passes/fold_qdq*.py)."""

    # int8 weights, int32 bias, one requantisation: QConv / QMatMul.
    LINEAR = "linear"
    # Only moves or selects values: the same op on the bytes, the input's scale and zero point.
    MOVE = "move"
    # Only selects values too (the input's parameters), but runs in float between DQ and Q.
    SELECT = "select"
    # An activation the quantizer wraps in QDQ: a 256-entry table (QLut), or the clamp of a requantisation
    # when it follows an integer Add or a weighted op (Relu, Clip).
    ACTIVATION = "activation"
    # A function of input 0 alone (other inputs compile-time constants): a 256-entry table (QLut) where
    # a QDQ model has it between DequantizeLinear and QuantizeLinear; ember's quantizer leaves it float.
    LUT = "lut"
    # Add / Sub / Mul: both operands rescaled in fixed point (QAdd / QMul); constant operands get their
    # own range.
    ARITH = "arith"
    # Concatenation: inputs of other scales go through a table first.
    CONCAT = "concat"
    # Averaging over windows or whole maps: QAvgPool / QMean.
    AVERAGE = "average"
    # Quantized around (QDQ on its input and output) but computed in float: no integer kernel yet.
    FLOAT = "float"


@dataclass
class OpDef:
    name: str
    # Output types from the input types, constant inputs and attributes (None for an absent output).
    infer: InferFn | None = None
    # numpy: the outputs for constant inputs (passes fold a node with all-constant inputs when given).
    evaluate: EvaluateFn | None = None
    # Computes constant outputs from static types alone (Shape, Size): folds even if inputs vary.
    fold: Callable[[Node], list[Any]] | None = None
    # Elementwise lowering: a C expression over the input element expressions (fusable).
    expr: ExprFn | None = None
    # Kernel lowering: emits the call(s) to C kernels through the KernelEmitter.
    lower: LowerFn | None = None
    # C kernel blocks the lowering may request (the registry test checks they exist).
    kernels: tuple[str, ...] = ()
    # Input slots whose values must be known at compile time (shapes, axes, pads, ...).
    shape_inputs: tuple[int, ...] = ()
    # Bytes of scratch memory the kernel needs, live only during the node.
    scratch: Callable[[Node], int] | None = None
    # Output 0 may overwrite an input's buffer when that input dies here and has the output's shape and element
    # size: True for any input (elementwise loops read element i before writing it), or the input slots whose
    # reads the kernel finishes before it writes over them (e.g. (0,): a row normalized after its statistics).
    inplace: bool | tuple[int, ...] = False
    # Output is the same bytes as input 0 (reshape-like): planned zero-copy.
    alias: bool = False
    # Streaming kernels: the byte offset, from input 0's first byte, at which output 0 may start when input 0
    # dies here, because the kernel chosen for this node writes each output byte only over input bytes it
    # has already read (None: no overlap). Sizes may differ; ember/ops/overlap.py states each variant's case.
    overlap: Callable[[Node], int | None] | None = None
    # Checks and rewrites the canonical node into what the lowering expects (once types are known).
    normalize: NormalizeFn | None = None
    # Free-form data for the lowering (e.g. which activation a fused node applies).
    data: dict[str, Any] = field(default_factory=dict)
    # An activation: what it is as a kernel epilogue (None where this node cannot be one, e.g. a Clip
    # with run-time bounds). See ember/ops/epilogue.py.
    epilogue: Callable[[Node], Epilogue | None] | None = None
    # Its kernel applies an activation epilogue to each output tile (attrs["_act"]).
    takes_epilogue: bool = False
    # A weighted op: where its weights and bias are.
    weights: WeightLayout | None = None
    # Floating-point work of one node (2 x multiply-accumulates; 0 for ops that are not counted).
    flops: Callable[[Node], int] | None = None
    # Its part in int8 quantization; None: it stays float and the quantizer leaves it alone.
    int8: Int8 | None = None
    # An op whose output sizes depend on values (NonZero, Unique, ...): its outputs have static upper
    # bounds, its last output is an int64 scalar count of the valid entries, and this maps each bounded
    # output's index to the axis the count applies to (ember/ops/counted.py).
    counted: Callable[[Node], dict[int, int]] | None = None
    # Control flow (ember/ops/control.py): the node's subgraphs and how they bind to its values.
    bindings: Callable[[Node], list[SubgraphBinding]] | None = None
    # Control flow: simplify the node in its graph once more is constant (inline an If whose condition is,
    # hand constant captured values to the subgraphs, drop captures no subgraph reads).
    simplify: Callable[[Node, Graph], None] | None = None
    # Multi-threaded bundles (ember/ops/parallel.py): how one call of the kernel divides into independent
    # calls over ranges of output channels or rows; None where this node does not divide.
    split: Callable[[Node], Split | None] | None = None

    def __post_init__(self) -> None:
        if (self.expr is None) == (self.lower is None) and self.name not in _NO_LOWERING:
            raise ValueError(f"OpDef {self.name}: exactly one of expr= or lower= must be given")


# Ops that never reach code generation: folded or removed by the frontend and passes.
_NO_LOWERING = {"Constant", "Shape", "Size", "ConstantOfShape", "Identity", "Dropout", "Range"}
