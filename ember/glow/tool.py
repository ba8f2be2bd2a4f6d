"""What both tools share: the one-line error and note convention, and a scratch folder."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from ember.errors import EmberError


def note(prog: str, text: str) -> None:
    print(f"{prog}: note: {text}", file=sys.stderr)


def main_of(prog: str, run: Callable[[list[str]], int]) -> Callable[[list[str] | None], int]:
    def main(argv: list[str] | None = None) -> int:
        try:
            return int(run(list(sys.argv[1:] if argv is None else argv)))
        except KeyboardInterrupt:
            return 130
        except Exception as e:  # every error is one line, as ember's own command prints them
            print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
            return 1 if isinstance(e, EmberError) else 2

    return main


# ember's errors name ember's own options; a Glow user is told the Glow flag that does the same.
_SPELLINGS = [(re.compile(r"--define (\S+?)=VALUE"), r"-onnx-define-symbol=\1,VALUE"),
              (re.compile(r"--define\b"), "-onnx-define-symbol"), (re.compile(r"--input\b"), "-model-input"),
              (re.compile(r"--image-mode\b"), "-image-mode"),
              (re.compile(r"--channel-order\b"), "-image-channel-order"),
              (re.compile(r"--layout\b"), "-image-layout"), (re.compile(r"--profile\b"), "-load-profile"),
              (re.compile(r"--keep-float\b"), "-keep-original-precision-for-nodes"),
              (re.compile(r"--float-abi\b"), "-float-abi"), (re.compile(r"--name\b"), "-network-name"),
              (re.compile(r"--dump-graph\b"), "-dump-graph-DAG")]


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, EmberError):
        for pattern, glow in _SPELLINGS:
            text = pattern.sub(glow, text)
        return text
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or text}"
    return f"internal error: {type(e).__name__}: {text}"
