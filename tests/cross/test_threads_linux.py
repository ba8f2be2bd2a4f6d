"""A multi-threaded bundle (--threads) compiled for a Linux cross target: its NAME.o linked with musl's POSIX
threads (zig cc -static -pthread) into tests/bundle/pool_main.c, run under qemu-user: its pool, two application
threads running it at once, a shutdown and restart; the outputs equal the host bundle's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

import ember
from ember.runtime.targets import linux
from tests.bundle.test_threads import _convnet, _input
from tests.cross import require_tools
from tests.support.models import assert_close

HERE = Path(__file__).parent


def test_threaded_bundle_under_qemu_aarch64(tmp_path: Path) -> None:
    require_tools("aarch64", linux.missing_tools("aarch64"))
    model = _convnet(tmp_path / "convnet.onnx")
    host = ember.compile(model, tmp_path / "host")
    bundle = ember.compile(model, tmp_path / "aarch64", target="aarch64", threads=2)
    main = tmp_path / "main.c"
    main.write_text((HERE.parent / "bundle" / "pool_main.c").read_text().replace("@name@", "convnet")
                    .replace("@NAME@", "CONVNET"))
    exe = tmp_path / "app"
    build = subprocess.run([*linux.ZIG, "cc", "-target", "aarch64-linux-musl", "-std=c99", "-O1", "-static",
                            "-I", str(bundle.path), str(main), str(bundle.path / "convnet.o"), "-pthread", "-o",
                            str(exe)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    qemu = linux.QEMU["aarch64"]
    args = [shutil.which(qemu) or f"{qemu}-static", str(exe), str(bundle.path / "convnet.weights.bin")]
    xs = [_input(41), _input(42)]
    for i, x in enumerate(xs):
        (tmp_path / f"in{i}.bin").write_bytes(x["input"].tobytes())
        args.append(str(tmp_path / f"in{i}.bin"))
    args += [str(tmp_path / "out0.bin"), str(tmp_path / "out1.bin")]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "mismatches: 0 0" in res.stdout, f"{res.stdout}\n{res.stderr[-2000:]}"
    for i, x in enumerate(xs):
        want = host.run(x)["output"]
        got = np.frombuffer((tmp_path / f"out{i}.bin").read_bytes(), np.float32).reshape(want.shape)
        assert_close(got, want, f"aarch64 run {i}")
