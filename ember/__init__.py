"""ember: an ahead-of-time compiler from ONNX models to freestanding C bundles."""

from ember.api import compile
from ember.runtime.loader import Bundle, load
from ember.version import __version__

__all__ = ["Bundle", "__version__", "compile", "load"]
