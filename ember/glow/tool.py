"""What both tools share: the one-line error and note convention, and a scratch folder."""

from __future__ import annotations

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


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, EmberError):
        return text
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or text}"
    return f"internal error: {type(e).__name__}: {text}"
