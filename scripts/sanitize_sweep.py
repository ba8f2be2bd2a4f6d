"""AddressSanitizer and UndefinedBehaviorSanitizer over the generated C of every counted ONNX node test.

For each node test ember compiles (tests/ops/node_suite.py), the bundle's NAME.c is built into the C driver
of tests/support/cdriver.py with -fsanitize=address,undefined (no recovery), run on the test's inputs,
and its outputs compared with the expected ones. Outcomes: clean (ran, sanitizers silent, outputs match),
mismatch (sanitizers silent, outputs differ), sanitizer (a report: the run failed with one), compile
(ember refused the model), error (anything else). Exit status 1 on any sanitizer report.

    python scripts/sanitize_sweep.py [--jobs 2] [--match REGEX] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_SANITIZER = re.compile(r"AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:|LeakSanitizer")


def sweep_one(name: str) -> tuple[str, str, str]:
    """(test name, outcome, detail)."""
    import onnx

    import ember
    from ember.errors import EmberError
    from ember.runtime.loader import element_inputs, sequence_outputs, trim_to_counts
    from tests.ops import node_suite
    from tests.support import cdriver

    with tempfile.TemporaryDirectory(prefix="ember-san-") as tmp:
        work = Path(tmp)
        try:
            model, feeds, out_names = node_suite.bake_shape_inputs(name)
            onnx.save(model, work / "model.onnx")
            bundle = ember.compile(work / "model.onnx", work / "out", opt_level=1,
                                   inputs=node_suite.compile_inputs(model, feeds))
        except EmberError as e:
            return name, "compile", str(e)
        try:
            got = trim_to_counts(cdriver.run(bundle.path, work / "drv", element_inputs(bundle.manifest, feeds),
                                             sanitize=True), bundle.outputs)
            got = sequence_outputs(bundle.manifest, got)
        except AssertionError as e:
            text = str(e)
            outcome = "sanitizer" if _SANITIZER.search(text) else "error"
            return name, outcome, text[-600:]
        why = node_suite.mismatch(name, got, out_names)
        if why:
            return name, "mismatch", why
    return name, "clean", ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--match", default="", help="only node tests whose name matches this regex")
    ap.add_argument("--json", type=Path, help="write every outcome here")
    args = ap.parse_args()
    from tests.ops import node_suite

    names = [n for n in node_suite.in_scope() if node_suite.exclusion_reason(n) is None
             and n not in node_suite.KNOWN_FAILURES and re.search(args.match, n)]
    results: list[tuple[str, str, str]] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for name, outcome, detail in pool.map(sweep_one, names, chunksize=4):
            results.append((name, outcome, detail))
            if outcome != "clean":
                print(f"{outcome:9s} {name}: {detail.splitlines()[-1] if detail else ''}", flush=True)
    counts = Counter(outcome for _, outcome, _ in results)
    print(json.dumps({k: counts.get(k, 0) for k in ("clean", "mismatch", "sanitizer", "compile", "error")}))
    if args.json:
        args.json.write_text(json.dumps([{"test": n, "outcome": o, "detail": d} for n, o, d in results], indent=1))
    return 1 if counts["sanitizer"] else 0


if __name__ == "__main__":
    sys.exit(main())
