"""ember: an ahead-of-time compiler from ONNX models to freestanding C bundles."""

__version__ = "0.1.0"

from ember.api import compile  # noqa: E402
from ember.runtime.loader import Bundle, load  # noqa: E402

__all__ = ["Bundle", "__version__", "compile", "load"]
