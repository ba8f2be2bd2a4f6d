"""What every target runner shares: its error type."""

from __future__ import annotations

from ember.errors import BundleError


class TargetError(BundleError, AssertionError):
    """Building or running a bundle on its target failed; the message says which step and shows the
    tool's output (several lines: the CLI shows the first and keeps the rest in the work folder).

    An AssertionError too, so that a test that runs a bundle on its target fails (not errors) when the
    run does."""
