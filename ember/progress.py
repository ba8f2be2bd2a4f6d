"""Progress bars for long work (profiling many files, compiling a big model, deploying several models):
tqdm's bar on a terminal, and nothing at all when stderr is not one (logs and pipes stay clean)."""

from __future__ import annotations

import sys
from typing import IO

from tqdm import tqdm


class Progress:
    """A bar counting `total` steps of `unit` (transient: it is erased when closed)."""

    def __init__(self, total: int, what: str, unit: str, stream: IO[str] | None = None, min_total: int = 1) -> None:
        self.stream = stream if stream is not None else sys.stderr
        live = total >= min_total and _isatty(self.stream)
        self.bar = tqdm(total=total, desc=what, unit=unit, file=self.stream, leave=False, disable=not live,
                        dynamic_ncols=True, mininterval=0.1)
        self.started = False

    @property
    def live(self) -> bool:
        return not self.bar.disable

    def update(self, done: int) -> None:
        """`done` steps are finished (absolute, not an increment)."""
        self.bar.update(done - self.bar.n)

    def step(self, label: str) -> None:
        """The next step starts (the one before it is done); `label` says what runs now, shown at once."""
        if self.started:
            self.bar.update(1)
        self.started = True
        self.bar.set_postfix_str(label)

    def close(self) -> None:
        self.bar.close()


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: no bar
        return False
