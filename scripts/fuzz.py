"""Mutation fuzzing of ember's front half: ONNX protobuf -> load -> passes -> memory plan -> C text.

Seeds are the small test models (LeNet of examples/make_lenet.py, the MLP and Constant-node CNN of
tests/support/models.py). Each mutant gets one to three structural mutations (op types, tensor names,
attributes, initializers, shapes, element types, opsets, outputs) or byte flips, and runs in a forked
child with a time limit. Outcomes: ok, error (a clean EmberError), traceback (any other exception: a
bug), timeout, crash (the child died). `--full` goes on through the C compiler and runs each bundle
that compiles in a C driver built with -Wall -Wextra -Werror and ASan+UBSan, on random inputs: a
sanitizer report is `sanitizer`, a driver that fails to build or run is `cfail`. Exit status 1 on any
outcome that is a bug (timeouts are reported only).

    python scripts/fuzz.py --iterations 500 --seed 1 --save /tmp/crashers
    python scripts/fuzz.py --iterations 2000 --seed 3 --full --timeout 120
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import multiprocessing as mp
import random
import resource
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import onnx
from onnx import AttributeProto, TensorProto

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OPS = ["Relu", "Add", "Mul", "Conv", "MaxPool", "Gemm", "MatMul", "Softmax", "Flatten", "Reshape", "Transpose",
       "Concat", "Sigmoid", "Identity", "AveragePool", "GlobalAveragePool", "Squeeze", "Unsqueeze", "Slice",
       "ReduceMean", "Cast", "Gather", "Pad", "Clip", "BatchNormalization", "Split", "Where", "NoSuchOp"]
INTS = [0, 1, 2, 3, -1, -2, 7, 1 << 20, -(1 << 31), (1 << 62)]
DIMS = [0, 1, 2, 3, 5, 64, 1 << 31, -1]
ELEM_TYPES = [TensorProto.UNDEFINED, TensorProto.FLOAT, TensorProto.INT8, TensorProto.INT64, TensorProto.BOOL,
              TensorProto.FLOAT16, TensorProto.STRING, TensorProto.COMPLEX64, 99]


def seed_models() -> list[tuple[str, onnx.ModelProto]]:
    spec = importlib.util.spec_from_file_location("make_lenet", ROOT / "examples" / "make_lenet.py")
    assert spec is not None and spec.loader is not None
    lenet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lenet)
    from tests.support import models

    seeds = [("lenet", lenet.lenet())]
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in (("mlp", models._mlp), ("constant_nodes", models._constant_nodes)):
            path = Path(tmp) / f"{name}.onnx"
            build(path)
            seeds.append((name, onnx.load(str(path))))
    return seeds


# ---- mutations: each changes the model in place and says what it did ----

def _node(r: random.Random, m: onnx.ModelProto) -> onnx.NodeProto | None:
    return r.choice(m.graph.node) if m.graph.node else None


def m_op_type(r: random.Random, m: onnx.ModelProto) -> str:
    n = _node(r, m)
    if n is None:
        return "no node"
    old, n.op_type = n.op_type, r.choice(OPS)
    return f"op {old} -> {n.op_type}"


def m_drop_node(r: random.Random, m: onnx.ModelProto) -> str:
    if not m.graph.node:
        return "no node"
    i = r.randrange(len(m.graph.node))
    del m.graph.node[i]
    return f"drop node {i}"


def m_duplicate_node(r: random.Random, m: onnx.ModelProto) -> str:
    n = _node(r, m)
    if n is None:
        return "no node"
    twin = copy.deepcopy(n)
    if r.random() < 0.8:  # a second branch reading the same inputs, graph still valid; else a second writer
        for k, o in enumerate(twin.output):
            twin.output[k] = f"{o}_twin" if o else o
    m.graph.node.insert(list(m.graph.node).index(n) + 1, twin)
    return f"duplicate {n.op_type}"


def _names(m: onnx.ModelProto) -> list[str]:
    return [i.name for i in m.graph.input] + [t.name for t in m.graph.initializer] + [
        o for n in m.graph.node for o in n.output] + ["", "nowhere"]


def m_rewire(r: random.Random, m: onnx.ModelProto) -> str:
    n = _node(r, m)
    if n is None:
        return "no node"
    names = _names(m)
    io = n.input if (r.random() < 0.6 and n.input) or not n.output else n.output
    if not io:
        io.append(r.choice(names))
        return f"{n.op_type}: add an input"
    k = r.randrange(len(io))
    io[k] = r.choice(names)
    if r.random() < 0.2:
        del io[k:]
    return f"{n.op_type}: rewire {k} -> {io[k] if k < len(io) else 'truncated'}"


def m_attribute(r: random.Random, m: onnx.ModelProto) -> str:
    n = _node(r, m)
    if n is None:
        return "no node"
    if n.attribute and r.random() < 0.8:
        a = r.choice(n.attribute)
        choice = r.randrange(6)
        if choice == 0:
            n.attribute.remove(a)
            return f"{n.op_type}: drop attribute {a.name}"
        if choice == 1 and a.type == AttributeProto.INTS:
            del a.ints[:]
            return f"{n.op_type}: empty {a.name}"
        if choice == 2 and a.type == AttributeProto.INTS:
            a.ints.extend(r.choice(INTS) for _ in range(r.randrange(1, 4)))
            return f"{n.op_type}: longer {a.name}"
        if choice == 3 and a.type in (AttributeProto.INT, AttributeProto.INTS):
            if a.type == AttributeProto.INT:
                a.i = r.choice(INTS)
            elif a.ints:
                a.ints[r.randrange(len(a.ints))] = r.choice(INTS)
            return f"{n.op_type}: {a.name} value"
        if choice == 4 and a.type == AttributeProto.TENSOR:
            a.t.data_type = r.choice(ELEM_TYPES)
            return f"{n.op_type}: {a.name} tensor type {a.t.data_type}"
        a.type = r.choice([AttributeProto.INT, AttributeProto.FLOAT, AttributeProto.INTS, AttributeProto.STRING,
                           AttributeProto.TENSOR, AttributeProto.UNDEFINED])
        return f"{n.op_type}: {a.name} type {a.type}"
    name = r.choice(["axis", "perm", "pads", "kernel_shape", "strides", "value", "to", "alpha", "group"])
    a = n.attribute.add(name=name)
    kind = r.randrange(3)
    if kind == 0:
        a.type, a.i = AttributeProto.INT, r.choice(INTS)
    elif kind == 1:
        a.type = AttributeProto.INTS
        a.ints.extend(r.choice(INTS) for _ in range(r.randrange(0, 5)))
    else:
        a.type = AttributeProto.TENSOR
        a.t.dims.extend([r.choice([0, 1, 2])])
        a.t.data_type = r.choice(ELEM_TYPES)
    return f"{n.op_type}: add attribute {name}"


def m_initializer(r: random.Random, m: onnx.ModelProto) -> str:
    inits = m.graph.initializer
    if not inits:
        return "no initializer"
    t = r.choice(inits)
    choice = r.randrange(4)
    if choice == 0 and t.dims:
        t.dims[r.randrange(len(t.dims))] = r.choice(DIMS)
        return f"init {t.name} dims {list(t.dims)}"
    if choice == 1:
        t.data_type = r.choice(ELEM_TYPES)
        return f"init {t.name} type {t.data_type}"
    if choice == 2 and t.raw_data:
        t.raw_data = t.raw_data[: r.randrange(len(t.raw_data))]
        return f"init {t.name} truncated"
    del t.dims[:]
    return f"init {t.name} scalar"


def m_graph_io(r: random.Random, m: onnx.ModelProto) -> str:
    g = m.graph
    choice = r.randrange(5)
    vis = list(g.input) + list(g.output)
    vi = r.choice(vis) if vis else None
    if choice == 0 and vi is not None and vi.type.tensor_type.shape.dim:
        d = r.choice(vi.type.tensor_type.shape.dim)
        if r.random() < 0.3:
            d.dim_param = "n"
        else:
            d.dim_value = r.choice(DIMS)
        return f"{vi.name} dim"
    if choice == 1 and vi is not None:
        vi.type.tensor_type.elem_type = r.choice(ELEM_TYPES)
        return f"{vi.name} elem type {vi.type.tensor_type.elem_type}"
    if choice == 2 and g.output:
        del g.output[r.randrange(len(g.output))]
        return "drop an output"
    if choice == 3:
        o = g.output.add()
        o.CopyFrom(onnx.helper.make_tensor_value_info(r.choice(_names(m)) or "z", TensorProto.FLOAT, [1]))
        return "add an output"
    for o in m.opset_import:
        o.version = r.choice([1, 6, 7, 11, 13, 17, 21, 99])
    return f"opset {[o.version for o in m.opset_import]}"


MUTATIONS: list[Callable[[random.Random, onnx.ModelProto], str]] = [
    m_op_type, m_drop_node, m_duplicate_node, m_rewire, m_attribute, m_attribute, m_initializer, m_graph_io]


def mutant(r: random.Random, seeds: list[tuple[str, onnx.ModelProto]]) -> tuple[bytes, str]:
    name, seed = r.choice(seeds)
    m = copy.deepcopy(seed)
    what = [name]
    for _ in range(r.randint(1, 3)):
        what.append(r.choice(MUTATIONS)(r, m))
    data = bytearray(m.SerializeToString())
    if r.random() < 0.1:  # byte flips: the protobuf decoder's turn
        for _ in range(r.randint(1, 8)):
            data[r.randrange(len(data))] = r.randrange(256)
        what.append("byte flips")
    return bytes(data), "; ".join(what)


# ---- running one mutant ----

# Outcomes that are bugs (a timeout may be a slow machine: reported, not failed on).
BAD = ("traceback", "crash", "timeout", "sanitizer", "cfail")


def compile_front(path: str) -> None:
    """What `ember compile` does before the C compiler: load, passes, limits, memory plan, C text."""
    from ember.config import CompileOptions
    from ember.driver import lower

    lower(path, CompileOptions())


_SANITIZER = ("AddressSanitizer", "UndefinedBehaviorSanitizer", "runtime error:", "LeakSanitizer")


def compile_full(path: str, workdir: Path) -> None:
    """The whole `ember compile` (C compiler included), then the bundle's C built into the C driver of
    tests/support/cdriver.py with -Wall -Wextra -Werror and ASan+UBSan and run on random inputs."""
    import ember
    from ember.runtime.inputs import random_inputs
    from tests.support import cdriver

    bundle = ember.compile(path, workdir / "out")
    cdriver.run(bundle.path, workdir / "drv", random_inputs(bundle, seed=0), sanitize=True)


def _child(path: str, conn, memory_limit: int | None, full: bool) -> None:
    from ember.errors import EmberError

    if memory_limit is not None:  # not with sanitizers: ASan reserves terabytes of address space
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    try:
        if full:
            compile_full(path, Path(path).parent / "full")
        else:
            compile_front(path)
        conn.send(("ok", ""))
    except EmberError as e:
        conn.send(("error", f"{type(e).__name__}: {e}"))
    except AssertionError as e:
        # cdriver: the C driver did not build or run. A sanitizer report, or generated C that fails to
        # compile cleanly: both are bugs.
        text = str(e)
        conn.send(("sanitizer" if any(s in text for s in _SANITIZER) else "cfail", text[-3000:]))
    except BaseException as e:  # noqa: BLE001 - classifying every other exception is the point
        conn.send(("traceback", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def run_one(data: bytes, timeout: float, workdir: Path, memory_limit: int | None = 4 << 30,
            full: bool = False) -> tuple[str, str]:
    path = workdir / "fuzz.onnx"
    path.write_bytes(data)
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(str(path), child, None if full else memory_limit, full))
    p.start()
    child.close()
    if not parent.poll(timeout):
        p.kill()
        p.join()
        return ("timeout", f"over {timeout} s") if p.exitcode in (None, -9) else ("crash", f"exit {p.exitcode}")
    try:
        outcome = parent.recv()
    except EOFError:
        outcome = ("crash", "the child died without a result")
    p.join()
    return outcome


def fuzz(iterations: int, seed: int, timeout: float, save: Path | None, verbose: bool = False,
         full: bool = False) -> Counter:
    import ember.api  # noqa: F401 - imported once here, inherited by every forked child

    r = random.Random(seed)
    seeds = seed_models()
    counts: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(iterations):
            data, what = mutant(r, seeds)
            outcome, detail = run_one(data, timeout, Path(tmp), full=full)
            counts[outcome] += 1
            if outcome in BAD:
                first = detail.splitlines()[0] if detail else ""
                print(f"#{i} {outcome}: {what}: {first}", file=sys.stderr)
                if save is not None:
                    save.mkdir(parents=True, exist_ok=True)
                    (save / f"{outcome}_{seed}_{i}.onnx").write_bytes(data)
                    (save / f"{outcome}_{seed}_{i}.txt").write_text(f"{what}\n{detail}\n")
            elif verbose:
                print(f"#{i} {outcome}: {what}: {detail[:160]}")
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per mutant")
    ap.add_argument("--save", type=Path, help="keep mutants that gave a traceback, crash or timeout here")
    ap.add_argument("--verbose", action="store_true", help="print every outcome")
    ap.add_argument("--full", action="store_true",
                    help="the whole compile with the C compiler, and a run under ASan+UBSan of each bundle")
    args = ap.parse_args()
    counts = fuzz(args.iterations, args.seed, args.timeout, args.save, args.verbose, args.full)
    print(json.dumps({k: counts.get(k, 0) for k in ("ok", "error", *BAD)}))
    return 1 if any(counts[k] for k in BAD if k != "timeout") else 0


if __name__ == "__main__":
    sys.exit(main())
