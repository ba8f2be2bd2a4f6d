"""Each model of a deployment file: fetched (local paths and file:// URLs only), checksum-checked, its
tensors checked against the file, its outputs set to output_tensors, and, with obfuscate: 1, every name in
it (graph, nodes, tensors) replaced by a neutral one before ember sees it, so no name can reach the C,
the object, the headers or the manifests."""

from __future__ import annotations

import hashlib
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from ember.deploy.config import DeployError, DeployFile, ModelSpec


@dataclass
class Prepared:
    spec: ModelSpec
    name: str  # the C name and registry name: the model's key, or model_<i> when obfuscated
    path: Path  # the ONNX file ember compiles (the user's own, or a prepared copy)
    inputs: list[str]  # the compiled model's input names, in input_tensors order
    outputs: list[str]  # the compiled model's output names, in output_tensors order
    input_specs: dict[str, str] = field(default_factory=dict)  # name -> "DTYPE:SHAPE" (ember's --input)
    rename: dict[str, str] = field(default_factory=dict)  # original -> neutral names (obfuscate)
    reverse: dict[str, str] = field(default_factory=dict)  # neutral -> original, tensors and nodes (messages)


def model_path(dep: DeployFile, spec: ModelSpec) -> Path:
    """model_file_path as a local path: a path (relative to the deployment file) or a file:// URL."""
    text = spec.file
    where = f"{spec.where}.model_file_path"
    scheme = urllib.parse.urlparse(text).scheme.lower()
    if scheme in ("http", "https", "ftp"):
        raise DeployError(f"{where}: {text}: ember downloads nothing; download the file and give its local path")
    if scheme == "file":
        path = Path(urllib.request.url2pathname(urllib.parse.urlparse(text).path))
    elif scheme and len(scheme) > 1:
        raise DeployError(f"{where}: {text}: expected a local path or a file:// URL")
    else:
        path = dep.resolve(text)
    if not path.is_file():
        raise DeployError(f"{where}: {path}: no such file")
    return path


def check_sha256(path: Path, spec: ModelSpec) -> None:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != spec.sha256:
        raise DeployError(f"{spec.where}.model_sha256_checksum: does not match {path.name} of model '{spec.key}' "
                          f"(the file's sha256 is {h.hexdigest()})")


def prepare(dep: DeployFile, spec: ModelSpec, index: int, c_name: str, work: Path) -> Prepared:
    path = model_path(dep, spec)
    check_sha256(path, spec)
    try:
        model = onnx.load(str(path))
    except Exception as e:  # onnx raises DecodeError and others for a damaged file
        raise DeployError(f"{spec.where}.model_file_path: {path}: not an ONNX model ({str(e).splitlines()[0]})") \
            from None
    g = model.graph
    inits = {t.name for t in g.initializer} | {t.values.name for t in g.sparse_initializer}
    graph_inputs = [i.name for i in g.input if i.name not in inits]
    for n in spec.inputs:
        if n not in graph_inputs:
            raise DeployError(f"{spec.tensors_at}.input_tensors: '{n}' is not an input of the model "
                              f"(its inputs: {', '.join(graph_inputs)})")
    missing = [n for n in graph_inputs if n not in spec.inputs]
    if missing:
        raise DeployError(f"{spec.tensors_at}.input_tensors: the model's input '{missing[0]}' is not listed")
    changed = _set_outputs(model, spec)
    inputs, outputs = list(spec.inputs), list(spec.outputs)
    rename: dict[str, str] = {}
    reverse: dict[str, str] = {}
    name = c_name
    if spec.obfuscate:
        name = f"model_{index}"
        rename, reverse = _obfuscate(model, spec, name)
        inputs, outputs = [rename[n] for n in inputs], [rename[n] for n in outputs]
        changed = True
    types = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    specs = {}
    for j, (n, shape) in enumerate(zip(inputs, spec.input_shapes, strict=True)):
        dtype = spec.input_types[j] if spec.input_types else _np_name(types.get(n, 0))
        specs[n] = f"{dtype}:{'x'.join(map(str, shape))}"
    if changed:
        path = work / f"{name}.onnx"
        onnx.save(model, str(path))
    return Prepared(spec, name, path, inputs, outputs, specs, rename, reverse)


def _np_name(elem_type: int) -> str:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        return "float32"


def _set_outputs(model: onnx.ModelProto, spec: ModelSpec) -> bool:
    """The graph's outputs become output_tensors, in that order (MACE may name intermediate tensors)."""
    g = model.graph
    current = {o.name: o for o in g.output}
    if [o.name for o in g.output] == spec.outputs:
        return False
    produced = {o for n in g.node for o in n.output}
    infos = {v.name: v for v in g.value_info}
    new = []
    for j, n in enumerate(spec.outputs):
        if n in current:
            new.append(current[n])
            continue
        if n not in produced:
            raise DeployError(f"{spec.tensors_at}.output_tensors: '{n}' is not a tensor of the model")
        if n not in infos:
            infos = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
        if n not in infos:
            raise DeployError(f"{spec.tensors_at}.output_tensors: the type of '{n}' is unknown "
                              "(run onnx shape inference on the model first)")
        shape = spec.output_shapes[j] if spec.output_shapes else None
        new.append(helper.make_tensor_value_info(n, infos[n].type.tensor_type.elem_type, shape))
    del g.output[:]
    g.output.extend(new)
    return True


def _obfuscate(model: onnx.ModelProto, spec: ModelSpec, name: str) -> tuple[dict[str, str], dict[str, str]]:
    """Every tensor, node and graph name replaced, one mapping across subgraphs (they read outer tensors);
    doc strings and metadata dropped. Inputs become input_<j> and outputs output_<j> (input_tensors order)."""
    g = model.graph
    rename = {n: f"input_{j}" for j, n in enumerate(spec.inputs)}
    rename.update({n: f"output_{j}" for j, n in enumerate(spec.outputs)})
    counter = [0, 0]
    nodes: dict[str, str] = {}

    def value(n: str) -> str:
        if not n:
            return n  # an omitted optional input stays omitted
        if n not in rename:
            rename[n] = f"t_{counter[0]}"
            counter[0] += 1
        return rename[n]

    def graph(gr: onnx.GraphProto, gname: str) -> None:
        gr.name, gr.doc_string = gname, ""
        for vi in (*gr.input, *gr.output, *gr.value_info):
            vi.name, vi.doc_string = value(vi.name), ""
        for t in gr.initializer:
            t.name, t.doc_string = value(t.name), ""
        for st in gr.sparse_initializer:
            st.values.name = value(st.values.name)
            st.indices.name = value(st.indices.name)
        for qa in gr.quantization_annotation:
            qa.tensor_name = value(qa.tensor_name)
        for k, node in enumerate(gr.node):
            nodes[f"n_{counter[1]}"] = node.name
            node.name, node.doc_string = f"n_{counter[1]}", ""
            counter[1] += 1
            node.input[:] = [value(x) for x in node.input]
            node.output[:] = [value(x) for x in node.output]
            for a in node.attribute:
                a.doc_string = ""
                if a.type == onnx.AttributeProto.GRAPH:
                    graph(a.g, f"{gname}_g{k}")
                for j, sub in enumerate(a.graphs):
                    graph(sub, f"{gname}_g{k}_{j}")

    graph(g, name)
    model.doc_string, model.producer_name, model.producer_version, model.domain = "", "", "", ""
    del model.metadata_props[:]
    if len(model.functions):
        raise DeployError(f"{spec.where}.obfuscate: the model has local functions; inline them first "
                          "(onnx.inliner.inline_local_functions)")
    return rename, {**{v: k for k, v in rename.items()}, **nodes, name: spec.key}
