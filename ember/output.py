"""Where a bundle's files go: only its own are ever written, replaced or removed.

A bundle named NAME is NAME.c, .h, .o, .weights.bin, .weights.txt and .json, plus the NAME.<hash>.so the
runtime links. Anything else in the output directory is left byte-identical; a file of those names that
is not part of an earlier bundle NAME (recognised by its NAME.json) is refused rather than overwritten.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ember.errors import OptionError

# The files of a bundle named NAME; the runtime adds NAME.<12 hex digits>.so, its linked library.
BUNDLE_SUFFIXES = (".c", ".h", ".o", ".weights.bin", ".weights.txt", ".json")
_LIBRARY = re.compile(r"\.[0-9a-f]{12}\.so")


def bundle_files(out: Path, name: str) -> list[Path]:
    """The files of bundle `name` present in `out` (its own, by name: nothing else there)."""
    if not out.is_dir():
        return []
    found = [out / f"{name}{s}" for s in BUNDLE_SUFFIXES if (out / f"{name}{s}").exists()]
    found += sorted(f for f in out.glob(f"{name}.*.so") if _LIBRARY.fullmatch(f.name[len(name):]))
    return found


def is_own_manifest(path: Path, name: str) -> bool:
    """Whether `path` is the NAME.json of an ember bundle named `name`."""
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(m, dict) and m.get("name") == name and "ember_version" in m


def claim(out: Path, name: str) -> list[Path]:
    """The files of a previous bundle `name` in `out` that this build replaces; refuses anyone else's."""
    existing = bundle_files(out, name)
    if not existing:
        return []
    if not is_own_manifest(out / f"{name}.json", name):
        raise OptionError(f"{existing[0]}: already exists and is not part of an ember bundle named '{name}' "
                          f"(no {name}.json of one); choose another --name or output directory")
    for f in existing:
        if not f.is_file() or f.is_symlink():
            raise OptionError(f"{f}: not a regular file; ember will not replace it")
    return existing


def replace_bundle(tmp: Path, out: Path, name: str, previous: list[Path]) -> None:
    """Rename the new files over the old bundle's (one rename each), NAME.json last; then drop the old
    bundle's linked libraries, which were linked from the old NAME.o."""
    new = sorted(tmp.iterdir(), key=lambda f: f.name == f"{name}.json")
    for f in new:
        os.replace(f, out / f.name)
    for f in previous:
        if f.name not in {g.name for g in new} and f.exists():
            f.unlink()


def make_dirs(out: Path) -> Path | None:
    """Create `out` (and missing parents); returns the topmost folder created, or None if `out` existed."""
    top = None
    for d in (out, *out.parents):
        if d.exists():
            break
        top = d
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OptionError(f"{out}: cannot create the output directory ({e.strerror})") from None
    return top


def remove_empty_dirs(out: Path, top: Path) -> None:
    """Undo make_dirs after a failed build: remove the folders it created, if still empty."""
    d = out
    while True:
        try:
            d.rmdir()
        except OSError:
            return
        if d == top:
            return
        d = d.parent


def check_writable_file(path: str, flag: str) -> None:
    """An output file's folder must exist: checked before the work, not after it."""
    p = Path(path)
    if not path or p.is_dir():
        raise OptionError(f"{flag} {path!r}: expected a file path")
    if not p.parent.is_dir():
        raise OptionError(f"{flag} {path}: no such directory {p.parent}")
