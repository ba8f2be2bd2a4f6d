"""Typed errors. Every user mistake surfaces as one of these, with a one-line message."""

from __future__ import annotations


class EmberError(Exception):
    """Base of every error ember reports to a user (CLI: one line, exit code 1)."""


class ModelFormatError(EmberError):
    """The model file is missing, not ONNX, truncated or otherwise unreadable."""


class UnsupportedOperatorError(EmberError):
    """The model uses an operator (or an attribute value) ember cannot compile."""

    def __init__(self, op: str, node: str, domain: str = "", detail: str = "") -> None:
        dom = domain if domain else "ai.onnx"
        msg = f"unsupported operator '{op}' (domain '{dom}') at node '{node}'"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)
        self.op, self.node, self.domain = op, node, dom


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
