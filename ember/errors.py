"""Typed errors. Every user mistake surfaces as one of these, with a one-line message."""

from __future__ import annotations


class EmberError(Exception):
    """Base of every error ember reports to a user (CLI: one line, exit code 1)."""


class ModelFormatError(EmberError):
    """The model file is missing, not ONNX, truncated or otherwise unreadable."""


class UnsupportedOperatorError(EmberError):
    """The model uses an operator (or an attribute value) ember cannot compile."""

    def __init__(self, op: str, node: str, detail: str = "", *, domain: str | None = None) -> None:
        # `domain`: the frontend's operator namespace, named when the frontend rejects an op it does not know.
        where = f" (domain '{domain}')" if domain is not None else ""
        msg = f"unsupported operator '{op}'{where} at node '{node}'"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)
        self.op, self.node, self.domain = op, node, domain


# Short alias used in the style guide.
UnsupportedOpError = UnsupportedOperatorError


class ShapeError(EmberError):
    """Shapes do not agree, or a dimension cannot be made static."""


class SymbolicDimensionError(ShapeError):
    """An input has a symbolic dimension that was not fixed with --define or --input."""


class OptionError(EmberError):
    """A command-line or compile() option is invalid."""


class ToolchainError(EmberError):
    """The C compiler is missing or failed on the generated code."""


class BundleError(EmberError):
    """A bundle directory is missing files or cannot be loaded or run."""


class ResourceLimitError(EmberError):
    """The bundle would need more memory than --max-memory or the target's address space allows."""


def warn(message: str) -> None:
    """A one-line warning on stderr: something the user should know that does not stop the compile."""
    import sys

    print(f"ember: warning: {message}", file=sys.stderr)
