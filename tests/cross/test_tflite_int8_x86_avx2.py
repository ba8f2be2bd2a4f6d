"""An int8 TFLite model compiled for the x86_64 target with an AVX2 CPU: zig's clang builds the AVX2 integer kernels
(qgemm.c's float requantisation, quant.c's TFLite one, qdwconv.c's depthwise kernel), which once used GCC-only
builtins (`__builtin_ia32_pmaxsd256`) and did not compile there. Run natively, the bundle gives the host build's
bits (both are TFLite's exact arithmetic)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ember
from tests.cross import require_tools
from tests.support import crossrun

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tflite" / "mobilenet_like_int8.tflite"


def test_int8_tflite_for_x86_64_haswell_matches_the_host_bit_for_bit(tmp_path: Path) -> None:
    require_tools("x86_64", crossrun.missing_tools("x86_64"))
    host = ember.compile(FIXTURE, tmp_path / "host")
    x86 = ember.compile(FIXTURE, tmp_path / "x86", target="x86_64", cpu="haswell")
    rng = np.random.default_rng(3)
    feeds = {e["name"]: rng.integers(-128, 128, e["shape"]).astype(e["dtype"]) for e in host.manifest["inputs"]}
    want = host.run(feeds)
    got = crossrun.run_linux(x86.path, "x86_64", feeds, tmp_path / "run")
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        assert len(np.unique(w)) > 1, name  # not a constant output, which any build would match
        np.testing.assert_array_equal(got[name], w, err_msg=name)
