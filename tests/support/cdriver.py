"""A C `main` for any bundle, built only from NAME.h's Glow API, compiled with the system `cc`.

This is how a firmware engineer uses a bundle, with no Python in the loop: three statically sized,
`GLOW_MEM_ALIGN`ed regions; the constant region filled from NAME.weights.txt (or, for models whose
weights are too big to compile as a C array in a test, read from NAME.weights.bin); inputs written
at `GLOW_GET_ADDR(mutableWeight, NAME_<input>)`; one call of the entry point; outputs written to
files named on the command line.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ember.codegen.library import assemble

SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g")
# A C array initializer this large takes the C compiler longer than the rest of a test.
INCLUDE_WEIGHTS_LIMIT = 4 << 20


def manifest(bundle: Path) -> dict:
    found = sorted(Path(bundle).glob("*.json"))
    assert found, f"{bundle}: no NAME.json"
    return json.loads(found[0].read_text())


def driver_source(man: dict, weights_from_file: bool) -> str:
    name = man["name"]
    up = name.upper()
    ins, outs = man["inputs"], man["outputs"]
    lines = [
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        f'#include "{name}.h"',
        "",
        "/* Statically allocated, aligned as the bundle asks (Glow's bundle guide). C has no empty",
        "   arrays, so a region of size 0 gets one byte. */",
        "#define REGION(size) ((size) > 0 ? (size) : 1)",
    ]
    if weights_from_file:
        lines.append(f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t constantWeight[REGION({up}_CONSTANT_MEM_SIZE)];")
    else:
        lines += [f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static const uint8_t constantWeightInit[] = {{",
                  f'#include "{name}.weights.txt"', "};"]
    lines += [
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t mutableWeight[REGION({up}_MUTABLE_MEM_SIZE)];",
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t activations[REGION({up}_ACTIVATIONS_MEM_SIZE)];",
        "",
        "static int io(const char *path, uint8_t *p, size_t n, int write) {",
        '    FILE *f = fopen(path, write ? "wb" : "rb");',
        "    size_t got;",
        '    if (!f) { fprintf(stderr, "cannot open %s\\n", path); return 1; }',
        "    got = write ? fwrite(p, 1, n, f) : fread(p, 1, n, f);",
        "    fclose(f);",
        '    if (got != n) { fprintf(stderr, "%s: %zu of %zu bytes\\n", path, got, n); return 1; }',
        "    return 0;",
        "}",
        "",
        "int main(int argc, char **argv) {",
        "    int rc;",
        f"    if (argc != {1 + int(weights_from_file) + len(ins) + len(outs)}) {{",
        '        fprintf(stderr, "usage: driver [WEIGHTS.bin] INPUT... OUTPUT...\\n");',
        "        return 2;",
        "    }",
    ]
    arg = 1
    if weights_from_file:
        lines.append(f"    if (io(argv[1], constantWeight, {up}_CONSTANT_MEM_SIZE, 0)) return 3;")
        arg += 1
        const = "constantWeight"
    else:
        # The weights array is const data; the entry point takes a plain pointer (Glow's signature).
        const = "(uint8_t *)constantWeightInit"
    for e in ins:
        lines.append(f"    if (io(argv[{arg}], GLOW_GET_ADDR(mutableWeight, {up}_{e['c_name']}), "
                     f"{e['bytes']}, 0)) return 3;")
        arg += 1
    lines.append(f"    rc = {name}({const}, mutableWeight, activations);")
    lines.append('    if (rc != 0) { fprintf(stderr, "entry point returned %d\\n", rc); return 4; }')
    for e in outs:
        lines.append(f"    if (io(argv[{arg}], GLOW_GET_ADDR(mutableWeight, {up}_{e['c_name']}), "
                     f"{e['bytes']}, 1)) return 3;")
        arg += 1
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def run_cmd(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))} exited {res.returncode}:\n{res.stderr[-4000:]}"
    return res


def build(bundle: Path, work: Path, sanitize: bool = False, weights_from_file: bool | None = None,
          opt: str | None = None, cflags: tuple[str, ...] = ()) -> tuple[Path, bool]:
    """Compile main.c + NAME.c into an executable; returns it and whether it reads weights.bin.

    `opt` defaults to -O0 when sanitizing: the instrumented build then compiles about four times faster
    (the int8 kernels' SIMD paths most), it runs the same code paths, and the test models are small."""
    opt = opt if opt is not None else ("-O0" if sanitize else "-O1")
    bundle = Path(bundle)
    man = manifest(bundle)
    if weights_from_file is None:
        weights_from_file = man["memory"]["constant"] > INCLUDE_WEIGHTS_LIMIT
    work.mkdir(parents=True, exist_ok=True)
    main_c = work / "main.c"
    main_c.write_text(driver_source(man, weights_from_file))
    exe = work / "driver"
    cmd = ["cc", "-std=c99", opt, *cflags, "-Wall", "-Wextra", "-Werror", "-I", str(bundle)]
    if sanitize:
        cmd += SANITIZE
    # The bundle's own source, so that it is instrumented too when sanitizing.
    cmd += [str(main_c), str(bundle / f"{man['name']}.c"), "-o", str(exe)]
    run_cmd(cmd)
    return exe, weights_from_file


def run(bundle: Path, work: Path, inputs: dict[str, np.ndarray], sanitize: bool = False,
        weights_from_file: bool | None = None, cflags: tuple[str, ...] = (), opt: str | None = None,
        ) -> dict[str, np.ndarray]:
    """Build the driver, run it on `inputs` (by model name), return the outputs by model name."""
    bundle = Path(bundle)
    man = manifest(bundle)
    exe, from_file = build(bundle, work, sanitize, weights_from_file, opt, cflags)
    args: list[str] = [str(exe)]
    if from_file:
        args.append(str(bundle / f"{man['name']}.weights.bin"))
    for i, e in enumerate(man["inputs"]):
        arr = np.array(inputs[e["name"]], dtype=np.dtype(_np_dtype(e["dtype"])), order="C")  # 0-d stays 0-d
        assert list(arr.shape) == e["shape"], f"input {e['name']}: shape {arr.shape} != {e['shape']}"
        p = work / f"in{i}.bin"
        p.write_bytes(arr.tobytes())
        args.append(str(p))
    outs = [work / f"out{i}.bin" for i in range(len(man["outputs"]))]
    args += map(str, outs)
    # detect_leaks=0: LeakSanitizer needs ptrace, which some sandboxes forbid; leaks are not the point.
    env = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0", "UBSAN_OPTIONS": "print_stacktrace=1",
           "PATH": "/usr/bin:/bin"}
    res = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, f"driver exited {res.returncode}:\n{res.stderr[-4000:]}"
    assert "runtime error" not in res.stderr, res.stderr[-4000:]  # UBSan, in case recovery was on
    result = {}
    for e, p in zip(man["outputs"], outs, strict=True):
        dt = np.dtype(_np_dtype(e["dtype"]))
        result[e["name"]] = np.frombuffer(p.read_bytes(), dt).reshape(e["shape"]).copy()
    return result


def _np_dtype(short: str) -> np.dtype:
    from ember.ir.dtypes import DType

    return np.dtype(DType.parse(short).np)


def compile_werror(bundle: Path, obj: Path) -> None:
    """NAME.c must compile warning-free as freestanding C99 (what a firmware build would use)."""
    man = manifest(bundle)
    run_cmd(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffreestanding", "-I", str(bundle),
             "-c", str(Path(bundle) / f"{man['name']}.c"), "-o", str(obj)])


def kernel_library(folder: Path, kernels: set[str], driver: str, opt: str = "-O2") -> ctypes.CDLL:
    """ember's C kernels `kernels` (with what they require) and the C `driver` calling them, built for this CPU
    as a shared library warning-free under -Wall -Wextra; skips the test where there is no C compiler."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    src, so = folder / "kernels.c", folder / "kernels.so"
    src.write_text("#include <stddef.h>\n#include <stdint.h>\n" + assemble(kernels) + driver)
    subprocess.run([cc, opt, "-march=native", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", str(src), "-o",
                    str(so)], check=True)
    return ctypes.CDLL(str(so))
