"""fuse_decomposed_norms and fuse_skip_norm: encoder layers as exporters write them without LayerNormalization
and Gelu operators become SkipLayerNormalization and Gelu nodes, and still match onnxruntime."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.passes.pipeline import Purpose
from tests.support.models import assert_close, onnxruntime_outputs

RNG = np.random.default_rng(3)
D, FF = 32, 64


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def op(self, op: str, ins: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def linear(self, x: str, cin: int, cout: int, name: str, bias_first: bool = False) -> str:
        w = self.const(f"{name}_w", RNG.standard_normal((cin, cout)) / math.sqrt(cin))
        b = self.const(f"{name}_b", RNG.standard_normal(cout) * 0.1)
        m = self.op("MatMul", [x, w], f"{name}_mm")
        return self.op("Add", [b, m] if bias_first else [m, b], f"{name}_out")

    def layer_norm(self, x: str, name: str, square: str = "Pow", affine: bool = True) -> str:
        """torch.onnx's (opset < 17) decomposed LayerNorm over the last axis."""
        mean = self.op("ReduceMean", [x], f"{name}_mean", axes=[-1])
        d = self.op("Sub", [x, mean], f"{name}_d")
        sq = (self.op("Pow", [d, self.const(f"{name}_two", 2.0)], f"{name}_sq") if square == "Pow"
              else self.op("Mul", [d, d], f"{name}_sq"))
        var = self.op("ReduceMean", [sq], f"{name}_var", axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.const(f"{name}_eps", 1e-5)], f"{name}_ve")], f"{name}_std")
        n = self.op("Div", [d, std], f"{name}_n")
        if not affine:
            return n
        g = self.op("Mul", [n, self.const(f"{name}_g", 1 + 0.1 * RNG.standard_normal(D))], f"{name}_gn")
        return self.op("Add", [g, self.const(f"{name}_b", 0.1 * RNG.standard_normal(D))], f"{name}_out")

    def gelu_erf(self, x: str, name: str) -> str:
        """Hugging Face's x * 0.5 * (1 + erf(x / sqrt(2)))."""
        half = self.op("Mul", [x, self.const(f"{name}_half", 0.5)], f"{name}_h")
        e = self.op("Erf", [self.op("Div", [x, self.const(f"{name}_s2", math.sqrt(2))], f"{name}_u")], f"{name}_e")
        t = self.op("Add", [e, self.const(f"{name}_one", 1.0)], f"{name}_t")
        return self.op("Mul", [half, t], f"{name}_out")

    def gelu_tanh(self, x: str, name: str) -> str:
        """torch.onnx's GELU(approximate='tanh'): (x * 0.5) * (1 + tanh(c (x + 0.044715 x^3)))."""
        cube = self.op("Pow", [x, self.const(f"{name}_three", 3.0)], f"{name}_c")
        k = self.op("Mul", [cube, self.const(f"{name}_k", 0.044715)], f"{name}_k3")
        inner = self.op("Add", [x, k], f"{name}_in")
        s = self.op("Mul", [self.const(f"{name}_beta", math.sqrt(2 / math.pi)), inner], f"{name}_s")
        t = self.op("Add", [self.op("Tanh", [s], f"{name}_th"), self.const(f"{name}_one", 1.0)], f"{name}_t")
        return self.op("Mul", [t, self.op("Mul", [x, self.const(f"{name}_half", 0.5)], f"{name}_h")], f"{name}_out")

    def model(self, path: Path, outputs: list[str], seq: int = 6) -> Path:
        g = helper.make_graph(self.nodes, "encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                    [2, seq, D])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              self.inits)
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
        return path


def _post_norm(path: Path) -> Path:
    """A BERT layer (post-norm): LN(x + attn-ish projection), LN(h + FFN(h)); the second LN without affine."""
    b = _Builder()
    h = b.layer_norm(b.op("Add", [b.linear("x", D, D, "proj"), "x"], "res1"), "ln1")
    f = b.linear(b.gelu_erf(b.linear(h, D, FF, "fc1"), "gelu"), FF, D, "fc2", bias_first=True)
    b.layer_norm(b.op("Add", [h, f], "res2"), "ln2", square="Mul", affine=False)
    b.nodes[-1].output[0] = "y"
    return b.model(path, ["y"])


def _pre_norm(path: Path) -> Path:
    """A ViT layer (pre-norm): s = x + proj(LN(x)); y = s + FFN(LN(s)): the sum `s` is read twice."""
    b = _Builder()
    s = b.op("Add", ["x", b.linear(b.layer_norm("x", "ln1"), D, D, "proj")], "s")
    f = b.linear(b.gelu_tanh(b.linear(b.layer_norm(s, "ln2"), D, FF, "fc1"), "gelu"), FF, D, "fc2")
    b.op("Add", [s, f], "y")
    return b.model(path, ["y", "s"])


def _ops(path: Path, purpose: Purpose = Purpose.BUNDLE) -> dict[str, int]:
    """Node counts after the passes; FLOAT stops before elementwise fusion takes the Gelu into its loop."""
    graph, _, _ = build_graph(str(path), CompileOptions(), purpose, check=True)
    return graph.op_counts()


def _check(path: Path, tmp_path: Path) -> None:
    feeds = {"x": RNG.standard_normal((2, 6, D)).astype(np.float32)}
    got = ember.compile(path, tmp_path / "out").run(feeds)
    ref = onnxruntime_outputs(path, feeds)
    assert set(got) == set(ref)
    for name, r in ref.items():
        assert_close(got[name], r, name)


def test_post_norm_layer_fuses_into_skip_layernorms_and_gelu(tmp_path: Path) -> None:
    path = _post_norm(tmp_path / "post.onnx")
    ops = _ops(path, Purpose.FLOAT)
    assert ops["LayerNormalization"] == 2 and ops["Gelu"] == 1, ops
    assert not {"ReduceMean", "Erf", "Sqrt", "Sub", "Div"} & set(ops), ops
    ops = _ops(path)
    assert ops["SkipLayerNormalization"] == 2 and "LayerNormalization" not in ops, ops
    _check(path, tmp_path)


def test_pre_norm_layer_keeps_the_residual_sum_it_reads_again(tmp_path: Path) -> None:
    path = _pre_norm(tmp_path / "pre.onnx")
    ops = _ops(path, Purpose.FLOAT)
    assert ops["LayerNormalization"] == 2 and ops["Gelu"] == 1, ops
    assert not {"ReduceMean", "Tanh", "Pow"} & set(ops), ops
    graph, _, _ = build_graph(str(path), CompileOptions(), check=True)
    # ln1 reads the input alone (a LayerNorm); ln2 the residual sum s, which it also writes out.
    assert graph.op_counts()["LayerNormalization"] == 1 and graph.op_counts()["SkipLayerNormalization"] == 1
    skip = next(n for n in graph.nodes if n.op == "SkipLayerNormalization")
    assert skip.outputs[3] is not None and skip.outputs[3].name == "s"
    _check(path, tmp_path)


def test_a_varying_epsilon_is_no_layernorm_and_a_per_row_scale_stays_outside_it(tmp_path: Path) -> None:
    b = _Builder()
    b.layer_norm("x", "ln")
    b.nodes[-1].output[0] = "y"
    # eps that varies per row is no LayerNorm epsilon
    b.inits = [numpy_helper.from_array(RNG.uniform(1e-5, 1e-3, (2, 6, 1)).astype(np.float32), i.name)
               if i.name == "ln_eps" else i for i in b.inits]
    path = b.model(tmp_path / "eps.onnx", ["y"])
    assert "LayerNormalization" not in _ops(path, Purpose.FLOAT)
    _check(path, tmp_path / "eps")
    # a scale that varies along the outer axes is no LayerNorm gamma: the LayerNorm ends before it
    b.inits = [numpy_helper.from_array(np.float32(1e-5), i.name) if i.name == "ln_eps" else
               numpy_helper.from_array(RNG.standard_normal((6, D)).astype(np.float32), i.name) if i.name == "ln_g"
               else i for i in b.inits]
    path = b.model(tmp_path / "gamma.onnx", ["y"])
    assert _ops(path, Purpose.FLOAT) == {"LayerNormalization": 1, "Mul": 1, "Add": 1}
    _check(path, tmp_path / "gamma")


def test_skip_layernorm_keeps_mean_and_inv_std_outputs(tmp_path: Path) -> None:
    """A residual Add into an opset-17 LayerNormalization whose Mean and InvStdDev are graph outputs too."""
    b = _Builder()
    b.op("Add", ["x", b.linear("x", D, D, "proj")], "s")
    b.nodes.append(helper.make_node("LayerNormalization", ["s", b.const("g", RNG.standard_normal(D))],
                                    ["y", "mean", "inv"], epsilon=1e-3))
    path = b.model(tmp_path / "ln.onnx", ["y", "mean", "inv"])
    assert _ops(path) == {"MatMul": 1, "SkipLayerNormalization": 1}
    _check(path, tmp_path)


def _conv_silu(path: Path, gate: str, also_output: bool = False) -> Path:
    """Conv -> x * gate(x), as torch.onnx writes SiLU (Sigmoid) and HardSwish (HardSigmoid) before opset 14/24."""
    w = numpy_helper.from_array((RNG.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w")
    attrs = {"alpha": 1 / 6, "beta": 0.5} if gate == "HardSigmoid" else {}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node(gate, ["c"], ["g"], **attrs),
             helper.make_node("Mul", ["g", "c"], ["y"])]
    outs = ["y", "g"] if also_output else ["y"]
    g = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_silu_and_hardswish_written_out_fuse_into_the_convolution(tmp_path: Path) -> None:
    for gate in ("Sigmoid", "HardSigmoid"):
        path = _conv_silu(tmp_path / f"{gate}.onnx", gate)
        ops = _ops(path)
        assert len(ops) == 1 and next(iter(ops)).startswith("Conv"), ops  # the activation is its epilogue now
        feeds = {"x": RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)}
        got = ember.compile(path, tmp_path / f"{gate}_out").run(feeds)
        assert_close(got["y"], onnxruntime_outputs(path, feeds)["y"], gate)


def test_a_gate_read_elsewhere_stays_a_gate(tmp_path: Path) -> None:
    path = _conv_silu(tmp_path / "m.onnx", "Sigmoid", also_output=True)
    assert "Swish" not in _ops(path, Purpose.FLOAT)
    feeds = {"x": RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    got = ember.compile(path, tmp_path / "out").run(feeds)
    for name, r in onnxruntime_outputs(path, feeds).items():
        assert_close(got[name], r, name)
