"""Run a bundle compiled for wasm32 in wasmtime (the `wasmtime` pip package).

The driver (linux.driver_source, kind "wasm") exports the regions' addresses and an `ember_run`
function; wasm-ld (from zig) links it with NAME.o into a module that imports nothing, and wasmtime
runs it: weights and inputs are copied into linear memory, outputs read back.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ember.runtime.targets.linux import (
    DRIVER_CFLAGS,
    DRIVER_STATUS,
    ZIG,
    CrossRun,
    CrossRunError,
    build_tool,
    bundle_manifest,
    driver_source,
    input_bytes,
    split_outputs,
    weights_bytes,
    zig_flags,
)

WASM_STACK = 1 << 20  # bytes of wasm shadow stack (wasm-ld's default is 64 KiB)


def run_wasm(bundle_dir: Path, inputs: dict[str, np.ndarray], work: Path) -> dict[str, np.ndarray]:
    """Outputs (by model name) of the bundle in `bundle_dir`, compiled for wasm32, run in wasmtime."""
    return run_wasm_detailed(bundle_dir, inputs, work).outputs


def run_wasm_detailed(bundle_dir: Path, inputs: dict[str, np.ndarray], work: Path) -> CrossRun:
    import wasmtime

    bundle_dir = Path(bundle_dir).resolve()
    man = bundle_manifest(bundle_dir, "wasm32")
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    module_path = _link_wasm(bundle_dir, man, work)
    build_seconds = time.perf_counter() - start

    start = time.perf_counter()
    store = wasmtime.Store(wasmtime.Engine())
    module = wasmtime.Module(store.engine, module_path.read_bytes())
    if module.imports:
        names = [f"{i.module}.{i.name}" for i in module.imports]
        raise CrossRunError(f"the module imports {names}: NAME.o needs something the driver does not define")
    exports = wasmtime.Instance(store, module, []).exports(store)
    memory = exports["memory"]

    def call(fn: str, *args: int) -> int:
        return exports[fn](store, *args)

    call("ember_prepare")
    memory.write(store, weights_bytes(bundle_dir, man), call("ember_constant"))
    for i, data in enumerate(input_bytes(man, inputs)):
        assert call("ember_input_bytes", i) == len(data), "driver and NAME.json disagree"
        memory.write(store, data, call("ember_input", i))
    try:
        status = call("ember_run")
    except wasmtime.Trap as e:
        raise CrossRunError(f"wasm32: the bundle trapped: {e}") from None
    seconds = time.perf_counter() - start
    if status != 0:
        raise CrossRunError(f"wasm32: ember_run returned {status}: {DRIVER_STATUS.get(status, 'failed')}")
    blob = b""
    for i, e in enumerate(man["outputs"]):
        assert call("ember_output_bytes", i) == e["bytes"], "driver and NAME.json disagree"
        blob += bytes(memory.read(store, call("ember_output", i), call("ember_output", i) + e["bytes"]))
    return CrossRun(split_outputs(man, blob, "wasm32"), seconds, ["wasmtime"], build_seconds)


def _link_wasm(bundle_dir: Path, man: dict, work: Path) -> Path:
    name = man["name"]
    src = work / "driver.c"
    src.write_text(driver_source(man, "wasm"))
    obj = work / "driver.o"
    build_tool([*ZIG, "cc", *zig_flags(man), *DRIVER_CFLAGS, "-I", str(bundle_dir), "-c", str(src), "-o", str(obj)],
           work, "compiling the wasm32 driver")
    module = work / f"{name}.wasm"
    # --no-entry: a library-style module, called through its exports. --stack-first: the stack sits
    # below the data, so an overflow traps (out of bounds) instead of overwriting the regions.
    build_tool([*ZIG, "wasm-ld", "--no-entry", "--stack-first", "-z", f"stack-size={WASM_STACK}", str(obj),
            str(bundle_dir / f"{name}.o"), "-o", str(module)], work, "linking the wasm32 module")
    return module
