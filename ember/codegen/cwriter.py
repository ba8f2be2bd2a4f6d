"""The one way C text is produced: an indented buffer with braces, plus identifier sanitizing."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager

_C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    "_Bool", "_Complex", "_Imaginary", "main",
}


def sanitize(name: str) -> str:
    """A valid C identifier from any string: only [A-Za-z0-9_], not starting with a digit, not a keyword."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not s or s[0].isdigit():
        s = "_" + s
    if s in _C_KEYWORDS:
        s += "_"
    return s


class NameSupply:
    """Hands out unique, sanitized identifiers."""

    def __init__(self, reserved: set[str] | None = None) -> None:
        self._used: set[str] = set(reserved or ())

    def fresh(self, base: str) -> str:
        s = sanitize(base)
        name, i = s, 1
        while name in self._used:
            name = f"{s}_{i}"
            i += 1
        self._used.add(name)
        return name


def c_comment(text: str) -> str:
    """Text from a model made safe inside /* */ (no comment terminator, no line breaks)."""
    return re.sub(r"[^\x20-\x7e]", "?", text).replace("*/", "* /").replace("/*", "/ *")


def c_string(text: str) -> str:
    """A C string literal holding `text` (printable ASCII kept, everything else escaped)."""
    out = []
    for ch in text.encode("utf-8"):
        c = chr(ch)
        if c in '"\\?':
            out.append("\\" + c)
        elif 0x20 <= ch < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{ch:03o}")
    return '"' + "".join(out) + '"'


def c_float(x: float, ctype: str = "float") -> str:
    """An exact C literal for a float/double value (hex float; inf/nan through builtins)."""
    suffix = "f" if ctype == "float" else ""
    if math.isnan(x):
        return "__builtin_nanf(\"\")" if ctype == "float" else "__builtin_nan(\"\")"
    if math.isinf(x):
        inf = "__builtin_inff()" if ctype == "float" else "__builtin_inf()"
        return inf if x > 0 else f"(-{inf})"
    return f"{float(x).hex()}{suffix}".replace("0x0.0p+0", "0x0p+0")


def c_int(x: int, ctype: str) -> str:
    if ctype in ("int64_t",):
        if x == -(2**63):
            return "(-INT64_C(9223372036854775807) - 1)"
        return f"INT64_C({x})"
    if ctype == "uint64_t":
        return f"UINT64_C({x})"
    if ctype == "int32_t" and x == -(2**31):
        return "(-2147483647 - 1)"
    if ctype == "uint32_t":
        return f"{x}u"
    return str(x)


class CWriter:
    def __init__(self) -> None:
        self._lines: list[str] = []
        self._indent = 0

    def line(self, text: str = "") -> None:
        self._lines.append(("    " * self._indent + text) if text else "")

    def lines(self, text: str) -> None:
        for ln in text.splitlines():
            self.line(ln)

    def raw(self, text: str) -> None:
        """Append pre-formatted C (kernel library blocks) without re-indenting."""
        self._lines.extend(text.rstrip("\n").splitlines())

    def open(self, header: str = "") -> None:
        self.line(f"{header} {{".strip())
        self._indent += 1

    def close(self, trailer: str = "") -> None:
        self._indent -= 1
        self.line("}" + trailer)

    @contextmanager
    def block(self, header: str = "", trailer: str = "") -> Iterator[None]:
        self.open(header)
        try:
            yield
        finally:
            self.close(trailer)

    def getvalue(self) -> str:
        return "\n".join(self._lines) + "\n"
