"""LSTM, GRU and RNN against onnxruntime: PyTorch exports, and hand-built nodes covering the attributes
PyTorch never exports (sequence_lens, peepholes, clip, input_forget, linear_before_reset=0, layout=1,
other activations, absent optional outputs), with weights as initializers (packed at compile time) and
as graph inputs (packed at run time)."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.errors import ShapeError, UnsupportedOperatorError
from tests.support.models import OPSET, assert_close, onnxruntime_outputs

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _compare(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tmp_path: Path, rel: float = 1e-4) -> None:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    ref = onnxruntime_outputs(path, feeds)
    got = ember.compile(path, tmp_path / "out").run(feeds)
    assert set(got) == set(ref)
    for name, r in ref.items():
        assert_close(got[name], r, name, rel)


# ----------------------------------------------------------------------------- PyTorch
def _torch_model(kind: str, bidirectional: bool, batch_first: bool, **kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = getattr(torch.nn, kind)(12, 20, num_layers=2, bidirectional=bidirectional, batch_first=batch_first, **kw)

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = layer

        def forward(self, x):
            y, state = self.rnn(x)
            return (y, *state) if isinstance(state, tuple) else (y, state)

    return torch, Wrap().eval()


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_torch_lstm_gru(kind: str, bidirectional: bool, batch_first: bool, tmp_path: Path) -> None:
    torch, model = _torch_model(kind, bidirectional, batch_first)
    shape = (3, 7, 12) if batch_first else (7, 3, 12)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    names = ["y", "h", "c"] if kind == "LSTM" else ["y", "h"]
    path = tmp_path / "torch.onnx"
    with torch.no_grad():
        torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=names, opset_version=OPSET,
                          dynamo=False)
    m = onnx.load(path)
    assert kind in {n.op_type for n in m.graph.node}  # the exporter kept the layer as one ONNX node
    _compare(m, {"x": x.numpy()}, tmp_path)


def test_torch_rnn_relu(tmp_path: Path) -> None:
    torch, model = _torch_model("RNN", True, False, nonlinearity="relu")
    x = torch.randn(9, 2, 12, generator=torch.Generator().manual_seed(2))
    path = tmp_path / "torch.onnx"
    with torch.no_grad():
        torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y", "h"], opset_version=OPSET,
                          dynamo=False)
    _compare(onnx.load(path), {"x": x.numpy()}, tmp_path)


# ----------------------------------------------------------------------------- hand-built nodes
def _node_model(op: str, *, seq: int = 6, batch: int = 3, inp: int = 5, hidden: int = 7,
                direction: str = "forward", layout: int = 0, const: bool = True, bias: bool = True,
                lens: list[int] | None = None, initial: bool = False, peepholes: bool = False,
                outputs: tuple[str, ...] | None = None, **attrs) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One recurrent node; weights as initializers (`const`) or graph inputs, X and the states inputs."""
    rng = np.random.default_rng(zlib.crc32(repr((op, seq, batch, hidden, direction)).encode()))
    dirs, g = (2 if direction == "bidirectional" else 1), GATES[op]

    def rand(*shape: int, scale: float = 0.4) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def batch_first(a: np.ndarray) -> np.ndarray:  # layout 1: X and the states batch first (same values)
        return np.ascontiguousarray(a.transpose(1, 0, 2)) if layout else a

    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    feeds = {"X": batch_first(rand(seq, batch, inp, scale=1.0))}
    weights = {"W": rand(dirs, g * hidden, inp), "R": rand(dirs, g * hidden, hidden)}
    names = ["X", "W", "R", "", "", ""] + (["", ""] if op == "LSTM" else [])
    if bias:
        weights["B"] = rand(dirs, 2 * g * hidden)
        names[3] = "B"
    if lens is not None:
        feeds["sequence_lens"] = np.array(lens, np.int32)
        names[4] = "sequence_lens"
    if initial:
        feeds["initial_h"] = batch_first(rand(dirs, batch, hidden, scale=1.0))
        names[5] = "initial_h"
        if op == "LSTM":
            feeds["initial_c"] = batch_first(rand(dirs, batch, hidden, scale=1.0))
            names[6] = "initial_c"
    if peepholes:
        weights["P"] = rand(dirs, 3 * hidden)
        names[7] = "P"
    while names and not names[-1]:
        names.pop()
    outs = outputs if outputs is not None else (("Y", "Y_h", "Y_c") if op == "LSTM" else ("Y", "Y_h"))
    node = helper.make_node(op, names, list(outs), name=f"{op.lower()}_node", hidden_size=hidden,
                            direction=direction, layout=layout, **attrs)
    inits = [numpy_helper.from_array(v, k) for k, v in weights.items()] if const else []
    if not const:
        feeds.update(weights)
    ins = [helper.make_tensor_value_info(k, TensorProto.INT32 if k == "sequence_lens" else TensorProto.FLOAT,
                                         list(v.shape)) for k, v in feeds.items()]
    shapes = {"Y": (batch, seq, dirs, hidden) if layout else (seq, dirs, batch, hidden), "Y_h": state, "Y_c": state}
    out_vi = [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(shapes[o])) for o in outs if o]
    graph = helper.make_graph([node], "recurrent", ins, out_vi, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model, feeds


CASES = {
    # sequence_lens with unequal lengths (one entry empty), both directions, initial states.
    "lstm_lens_bidir": ("LSTM", dict(direction="bidirectional", lens=[6, 2, 0], initial=True)),
    "gru_lens_reverse": ("GRU", dict(direction="reverse", lens=[3, 6, 1], initial=True)),
    "rnn_lens_bidir": ("RNN", dict(direction="bidirectional", lens=[1, 4, 6])),
    "lstm_peepholes_clip": ("LSTM", dict(peepholes=True, clip=0.7, initial=True, lens=[6, 4, 5])),
    "lstm_input_forget": ("LSTM", dict(input_forget=1, peepholes=True, direction="bidirectional")),
    "gru_lbr0_bidir": ("GRU", dict(direction="bidirectional", linear_before_reset=0, initial=True, clip=1.5)),
    "gru_lbr1_bidir": ("GRU", dict(direction="bidirectional", linear_before_reset=1, initial=True, lens=[6, 2, 5])),
    "lstm_layout1": ("LSTM", dict(layout=1, direction="bidirectional", initial=True, lens=[2, 6, 4])),
    "gru_layout1": ("GRU", dict(layout=1, initial=True, linear_before_reset=1)),
    "rnn_layout1": ("RNN", dict(layout=1, direction="reverse", initial=True)),
    # Wider than a panel (hidden 37 = 3 panels with padding), no bias.
    "lstm_wide_nobias": ("LSTM", dict(hidden=37, inp=20, bias=False, batch=1)),
    "gru_wide": ("GRU", dict(hidden=32, inp=9, batch=2, linear_before_reset=0)),
    # More batch entries than one pass over R serves (4 rows): a group of 4, then the rest; unequal lengths.
    "lstm_batch6_lens": ("LSTM", dict(batch=6, lens=[6, 1, 0, 4, 6, 3], direction="bidirectional", initial=True)),
    "gru_batch5_lbr0": ("GRU", dict(batch=5, hidden=20, lens=[2, 6, 6, 0, 5], linear_before_reset=0)),
    # Other activations (onnxruntime's LSTM and GRU take Sigmoid, Tanh and Relu).
    "lstm_acts": ("LSTM", dict(activations=["Tanh", "Relu", "Sigmoid", "Sigmoid", "Tanh", "Relu"],
                               direction="bidirectional", clip=3.0)),
    "gru_acts": ("GRU", dict(activations=["Tanh", "Relu"], linear_before_reset=0)),
    # Absent optional outputs.
    "lstm_only_yc": ("LSTM", dict(outputs=("", "", "Y_c"), lens=[6, 3, 1])),
    "lstm_only_y": ("LSTM", dict(outputs=("Y",), direction="reverse")),
    "gru_only_yh": ("GRU", dict(outputs=("", "Y_h"), direction="bidirectional")),
    "rnn_only_y": ("RNN", dict(outputs=("Y",), initial=True)),
}


@pytest.mark.parametrize("const", [True, False], ids=["packed", "runtime"])
@pytest.mark.parametrize("case", list(CASES))
def test_node_attributes(case: str, const: bool, tmp_path: Path) -> None:
    op, kw = CASES[case]
    model, feeds = _node_model(op, const=const, **kw)
    if not kw.get("layout"):
        _compare(model, feeds, tmp_path)
        return
    # onnxruntime refuses layout 1: the reference is the same node in layout 0, its outputs made batch first.
    ref_model, ref_feeds = _node_model(op, const=const, **{**kw, "layout": 0})
    onnx.save(ref_model, tmp_path / "ref.onnx")
    ref = onnxruntime_outputs(tmp_path / "ref.onnx", ref_feeds)
    onnx.save(model, tmp_path / "model.onnx")
    got = ember.compile(tmp_path / "model.onnx", tmp_path / "out").run(feeds)
    for name, r in ref.items():
        assert_close(got[name], r.transpose(2, 0, 1, 3) if name == "Y" else r.transpose(1, 0, 2), name)


# Every activation RNN takes, with alpha / beta given (Affine, ScaledTanh, HardSigmoid consume both).
ACTIVATIONS = [
    ("Relu", [], []), ("Tanh", [], []), ("Sigmoid", [], []), ("Affine", [0.7], [0.2]), ("LeakyRelu", [0.3], []),
    ("ThresholdedRelu", [0.25], []), ("ScaledTanh", [1.3], [0.6]), ("HardSigmoid", [0.3], [0.4]),
    ("Elu", [0.8], []), ("Softsign", [], []), ("Softplus", [], []),
]


def test_rnn_every_activation(tmp_path: Path) -> None:
    """Both directions of a bidirectional RNN per model: each activation once, alpha / beta consumed in order."""
    for i in range(0, len(ACTIVATIONS), 2):
        pair = ACTIVATIONS[i:i + 2] if i + 1 < len(ACTIVATIONS) else [ACTIVATIONS[i], ACTIVATIONS[0]]
        names = [p[0] for p in pair]
        alphas = [a for p in pair for a in p[1]]
        betas = [b for p in pair for b in p[2]]
        kw = {"activation_alpha": alphas} if alphas else {}
        if betas:
            kw["activation_beta"] = betas
        model, feeds = _node_model("RNN", direction="bidirectional", activations=names, initial=True,
                                   hidden=5, seq=4, **kw)
        _compare(model, feeds, tmp_path / names[0])


def test_default_alpha(tmp_path: Path) -> None:
    """Activations without alpha / beta take the ONNX operators' defaults (LeakyRelu 0.01, HardSigmoid 0.2/0.5)."""
    model, feeds = _node_model("RNN", direction="bidirectional", activations=["LeakyRelu", "HardSigmoid"])
    _compare(model, feeds, tmp_path)


def test_unknown_activation_is_refused(tmp_path: Path) -> None:
    model, _ = _node_model("GRU", activations=["Sigmoid", "Gelu"])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(UnsupportedOperatorError, match="gru_node.*activation 'Gelu'"):
        ember.compile(path, tmp_path / "out")


def test_wrong_weight_shape_is_refused(tmp_path: Path) -> None:
    model, _ = _node_model("LSTM")
    w = model.graph.initializer[0]
    w.CopyFrom(numpy_helper.from_array(np.zeros((1, 27, 5), np.float32), "W"))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(ShapeError, match="lstm_node.*W has shape \\[1, 27, 5\\], expected \\[1, 28, 5\\]"):
        ember.compile(path, tmp_path / "out")
