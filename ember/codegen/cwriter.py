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
    # C11 and C23 keywords, and the macros <stdbool.h>/<stdalign.h> spell them with.
    "_Alignas", "_Alignof", "_Atomic", "_Generic", "_Noreturn", "_Static_assert", "_Thread_local", "alignas",
    "alignof", "bool", "constexpr", "false", "nullptr", "static_assert", "thread_local", "true", "typeof",
    "typeof_unqual", "_BitInt", "_Decimal32", "_Decimal64", "_Decimal128", "asm", "NULL", "offsetof",
}

# Macros of <stdint.h>/<stddef.h> (which NAME.h and NAME.c include): a tensor's macro must not redefine one.
STD_MACROS = {
    *(f"{p}INT{k}{n}_{s}" for p in ("", "U") for k in ("", "_LEAST", "_FAST") for n in (8, 16, 32, 64)
      for s in ("MIN", "MAX", "C")),
    *(f"{p}{n}_{s}" for p in ("INT", "UINT") for n in ("PTR", "MAX") for s in ("MIN", "MAX", "C")),
    *(f"{n}_{s}" for n in ("PTRDIFF", "SIG_ATOMIC", "SIZE", "WCHAR", "WINT") for s in ("MIN", "MAX")),
}

# Prefixes of the macros and functions ember's own C uses (kernel library, profiling hooks, Glow's macros).
_OWN_PREFIXES = ("EMBER", "GLOW")
MAX_NAME_LENGTH = 64


def sanitize(name: str) -> str:
    """A valid C identifier from any string: only [A-Za-z0-9_], not starting with a digit, not a keyword."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not s or s[0].isdigit():
        s = "_" + s
    if s in _C_KEYWORDS:
        s += "_"
    return s


def network_name_problem(name: str) -> str | None:
    """Why `name` cannot be a network name (the entry point and the prefix of every macro), or None."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return "it must be a C identifier (letters, digits and _, not starting with a digit)"
    if len(name) > MAX_NAME_LENGTH:
        return f"it must be at most {MAX_NAME_LENGTH} characters"
    if name in _C_KEYWORDS or name.upper() in STD_MACROS:
        return "it is a C keyword or a name the C library reserves"
    if name.startswith("_") or name.endswith("_t"):
        return "names starting with _ or ending in _t are reserved by C"
    if any(name.upper() == p or name.upper().startswith(p + "_") for p in _OWN_PREFIXES):
        return "the prefixes ember_ and glow_ belong to ember's generated code"
    return None


class NameSupply:
    """Hands out unique, sanitized identifiers; `family` reserves an identifier together with the names
    derived from it (the header's NAME_x, NAME_x_SIZE, NAME_x_TYPE, ...) so no two families overlap."""

    def __init__(self, reserved: set[str] | None = None) -> None:
        self._used: set[str] = set(reserved or ())

    def fresh(self, base: str) -> str:
        return self.family(base)

    def family(self, base: str, prefix: str = "", suffixes: tuple[str, ...] = ()) -> str:
        """A fresh identifier `s` such that prefix+s and every prefix+s+suffix are unused; reserves them all."""
        s = sanitize(base)
        name, i = s, 1
        while any(f"{prefix}{name}{suf}" in self._used for suf in ("", *suffixes)):
            name = f"{s}_{i}"
            i += 1
        self._used.update(f"{prefix}{name}{suf}" for suf in ("", *suffixes))
        return name

    def reserve(self, names: set[str] | list[str]) -> None:
        self._used.update(names)


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
