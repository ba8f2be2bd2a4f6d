"""Glow bundle API compatibility: hand-written C applications compiled against NAME.h and NAME.o.

The C sources beside this file are what an NXP eIQ / Glow user writes; only the network name is
substituted (`@name@`, `@NAME@`). They are built with the system `cc` and their results compared
with onnxruntime.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.support import cdriver
from tests.support.cache import ArtifactCache
from tests.support.models import assert_close, onnxruntime_outputs, random_inputs

HERE = Path(__file__).parent
CFLAGS = ["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror"]


def _source(template: str, name: str, dest: Path) -> Path:
    text = (HERE / template).read_text().replace("@name@", name).replace("@NAME@", name.upper())
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def _lenet_input(artifacts: ArtifactCache, seed: int) -> tuple[Path, dict[str, np.ndarray]]:
    path = artifacts.model("lenet")
    return path, random_inputs(path, None, seed)


@pytest.mark.parametrize("reloc", ["pic", "static"])
def test_glow_example_application_prints_onnxruntime_top1(artifacts: ArtifactCache, tmp_path: Path,
                                                          reloc: str) -> None:
    bundle = artifacts.bundle("lenet", reloc=reloc)
    assert bundle.name == "lenet"
    main = _source("glow_main.c", "lenet", tmp_path / "main.c")
    exe = tmp_path / "app"
    # A non-PIC object goes into a non-PIE executable, as on a microcontroller.
    link = ["-no-pie"] if reloc == "static" else []
    cdriver.run_cmd(["cc", *CFLAGS, *link, "-I", str(bundle.path), str(main), str(bundle.path / "lenet.o"),
                     "-o", str(exe)])
    for seed in range(3):
        path, x = _lenet_input(artifacts, seed)
        img = tmp_path / f"img{seed}.f32"
        img.write_bytes(x["input"].astype("<f4").tobytes())
        out = cdriver.run_cmd([str(exe), str(img)]).stdout
        m = re.search(r"Top1 class = (\d+)", out)
        assert m, out
        ref = onnxruntime_outputs(path, x)["output"]
        assert int(m.group(1)) == int(np.argmax(ref)), f"seed {seed}: printed {out!r}, onnxruntime {ref}"
        conf = float(re.search(r"Confidence = (\S+)", out).group(1))
        assert abs(conf - float(ref.max())) <= 1e-4 * float(ref.max() - ref.min()) + 1e-6


def test_dynamic_api_finds_tensors_by_name(artifacts: ArtifactCache, tmp_path: Path) -> None:
    bundle = artifacts.bundle("lenet", api="dynamic")
    header = (bundle.path / "lenet.h").read_text()
    assert "extern BundleConfig lenet_config;" in header and "SymbolTableEntry" in header
    main = _source("dynamic_main.c", "lenet", tmp_path / "main.c")
    exe = tmp_path / "app"
    cdriver.run_cmd(["cc", *CFLAGS, "-I", str(bundle.path), str(main), str(bundle.path / "lenet.o"),
                     "-o", str(exe)])
    path, x = _lenet_input(artifacts, 11)
    (tmp_path / "in.bin").write_bytes(x["input"].tobytes())
    res = cdriver.run_cmd([str(exe), str(bundle.path / "lenet.weights.bin"), "input", str(tmp_path / "in.bin"),
                           "output", str(tmp_path / "out.bin")])
    man = bundle.manifest
    assert f"input at {man['inputs'][0]['offset']} (784 elements)" in res.stdout, res.stdout
    assert f"output at {man['outputs'][0]['offset']} (10 elements)" in res.stdout, res.stdout
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.float32).reshape(1, 10)
    assert_close(got, onnxruntime_outputs(path, x)["output"], "dynamic API output")
    # An unknown name is reported by the application, not a crash.
    bad = subprocess.run([str(exe), str(bundle.path / "lenet.weights.bin"), "nope", str(tmp_path / "in.bin"),
                          "output", str(tmp_path / "o.bin")], capture_output=True, text=True)
    assert bad.returncode == 5, bad.stderr


def test_two_threads_share_one_bundle(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """Re-entrant entry point: no global mutable state. Built with ThreadSanitizer (bundle included)."""
    bundle = artifacts.bundle("lenet")
    main = _source("threads_main.c", "lenet", tmp_path / "main.c")
    exe = tmp_path / "app"
    cdriver.run_cmd(["cc", *CFLAGS, "-g", "-fsanitize=thread", "-pthread", "-I", str(bundle.path), str(main),
                     str(bundle.path / "lenet.c"), "-o", str(exe)])
    path, x0 = _lenet_input(artifacts, 21)
    _, x1 = _lenet_input(artifacts, 22)
    args = [str(exe), str(bundle.path / "lenet.weights.bin")]
    for i, x in enumerate((x0, x1)):
        (tmp_path / f"in{i}.bin").write_bytes(x["input"].tobytes())
        args.append(str(tmp_path / f"in{i}.bin"))
    args += [str(tmp_path / "out0.bin"), str(tmp_path / "out1.bin")]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout}\n{res.stderr[-4000:]}"
    assert "mismatches: 0 0" in res.stdout
    for i, x in enumerate((x0, x1)):
        got = np.frombuffer((tmp_path / f"out{i}.bin").read_bytes(), np.float32).reshape(1, 10)
        assert_close(got, onnxruntime_outputs(path, x)["output"], f"thread {i}")



def _with_injected_line(bundle_dir: Path, dest: Path, name: str, c_line: str, file_scope: str = "") -> Path:
    """A copy of a bundle whose entry point runs one extra C statement before returning."""
    shutil.copytree(bundle_dir, dest)
    src = dest / f"{name}.c"
    text = src.read_text()
    entry = text.index(f"int {name}(uint8_t *constantWeight")
    end = text.rindex("return 0;")
    src.write_text(text[:entry] + file_scope + text[entry:end] + c_line + "\n    " + text[end:])
    return dest


def test_thread_harness_catches_global_state(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """The re-entrancy check can fail: a bundle with one global counter is reported by TSan."""
    bundle = artifacts.bundle("lenet")
    bad = _with_injected_line(bundle.path, tmp_path / "bad", "lenet", "calls++;", "static int calls;\n")
    main = _source("threads_main.c", "lenet", tmp_path / "main.c")
    exe = tmp_path / "app"
    cdriver.run_cmd(["cc", *CFLAGS, "-g", "-fsanitize=thread", "-pthread", "-I", str(bad), str(main),
                     str(bad / "lenet.c"), "-o", str(exe)])
    _, x = _lenet_input(artifacts, 0)
    (tmp_path / "in.bin").write_bytes(x["input"].tobytes())
    res = subprocess.run([str(exe), str(bad / "lenet.weights.bin"), str(tmp_path / "in.bin"), str(tmp_path / "in.bin"),
                          str(tmp_path / "o0.bin"), str(tmp_path / "o1.bin")], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode != 0 and "data race" in res.stderr, res.stderr[-2000:]


def test_sanitizer_driver_catches_out_of_bounds(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """The sanitizer runs can fail: one byte written past the activation region is an ASan error."""
    bundle = artifacts.bundle("lenet")
    bad = _with_injected_line(bundle.path, tmp_path / "bad", "lenet",
                              "activations[LENET_ACTIVATIONS_MEM_SIZE] = 1;")
    _, x = _lenet_input(artifacts, 0)
    with pytest.raises(AssertionError, match="AddressSanitizer"):
        cdriver.run(bad, tmp_path / "drv", x, sanitize=True)

@pytest.mark.parametrize("api", ["static", "dynamic"])
def test_object_has_no_undefined_symbols(artifacts: ArtifactCache, api: str) -> None:
    """Freestanding: the object needs nothing from libc or libm (not even memcpy/memset)."""
    assert shutil.which("nm"), "nm (binutils) is needed by this test"
    bundle = artifacts.bundle("lenet", api=api)
    res = cdriver.run_cmd(["nm", "-u", str(bundle.path / "lenet.o")])
    assert res.stdout.strip() == "", f"undefined symbols in lenet.o:\n{res.stdout}"
    defined = cdriver.run_cmd(["nm", "-g", "--defined-only", str(bundle.path / "lenet.o")]).stdout.split()
    # Exported: the entry point (and, for the dynamic API, its config); kernels stay static.
    exported = sorted(defined[2::3])
    assert exported == (["lenet", "lenet_config"] if api == "dynamic" else ["lenet"]), exported


def test_header_is_self_contained_c_and_cxx(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """NAME.h compiles alone, as strict C99 (-pedantic) and as C++ (Glow users include it from C++)."""
    bundle = artifacts.bundle("lenet", api="dynamic")
    src = tmp_path / "h.c"
    src.write_text('#include "lenet.h"\nint dummy(void) { return LENET_MEM_ALIGN; }\n')
    cdriver.run_cmd(["cc", *CFLAGS, "-pedantic", "-I", str(bundle.path), "-c", str(src), "-o", str(tmp_path / "h.o")])
    if shutil.which("c++"):
        cpp = tmp_path / "h.cpp"
        cpp.write_text(src.read_text())
        cdriver.run_cmd(["c++", "-Wall", "-Wextra", "-Werror", "-I", str(bundle.path), "-c", str(cpp),
                         "-o", str(tmp_path / "hpp.o")])

