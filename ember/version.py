"""The version of ember (NAME.json and the generated sources record it)."""

__version__ = "0.1.0"
