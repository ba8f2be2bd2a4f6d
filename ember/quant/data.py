"""Calibration inputs for `ember profile`: images (PNG/JPEG) and .npy/.npz arrays, or folders of them.

Images are preprocessed the way Glow's image loader does it: decoded as RGB (grayscale for a
1-channel input), resized to the input's spatial size (bilinear), scaled by `--image-mode`, channels
reordered by `--channel-order`, normalised per channel as (x - mean) / std (mean and std are in the
units after the image-mode scaling, in the model's channel order), and laid out as `--layout`.
Arrays are fed as they are: one sample of the input's shape (with or without the batch dimension),
a stack of samples along the batch dimension, or a stack whose new first axis counts samples.
Files are recognised by their content (the suffix only picks a folder's files), so every command that
reads data (`run`, `validate`, `profile`, `bench`) accepts the same files with the same one-line errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import EmberError, OptionError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
ARRAY_SUFFIXES = (".npy", ".npz")
_SUFFIXES = IMAGE_SUFFIXES + ARRAY_SUFFIXES
IMAGE_MODES = ("0to1", "neg1to1", "0to255", "neg128to127")
# Leading bytes of each kind of file ember reads as data (PIL decodes every image kind listed).
_MAGIC = ((b"\x93NUMPY", "npy"), (b"PK\x03\x04", "npz"), (b"PK\x05\x06", "npz"), (b"\x89PNG", "image"),
          (b"\xff\xd8\xff", "image"), (b"BM", "image"), (b"GIF8", "image"), (b"RIFF", "image"))
ACCEPTED = "a .npy/.npz array, an image (PNG, JPEG, BMP, GIF, WebP) or a folder of them"


class DataError(EmberError):
    """A calibration input cannot be read or does not fit the model's input."""


@dataclass(frozen=True)
class Preprocess:
    image_mode: str = "0to1"
    channel_order: str = "RGB"
    layout: str = "NCHW"
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.image_mode not in IMAGE_MODES:
            raise OptionError(f"--image-mode must be one of {', '.join(IMAGE_MODES)}, not '{self.image_mode}'")
        if self.channel_order not in ("RGB", "BGR"):
            raise OptionError(f"--channel-order must be RGB or BGR, not '{self.channel_order}'")
        if self.layout not in ("NCHW", "NHWC"):
            raise OptionError(f"--layout must be NCHW or NHWC, not '{self.layout}'")
        if any(s == 0 for s in self.std):
            raise OptionError("--std: a standard deviation of 0 divides by zero")

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["mean"], d["std"] = list(self.mean), list(self.std)
        return d


@dataclass(frozen=True)
class InputInfo:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


def parse_floats(text: str, option: str) -> tuple[float, ...]:
    """'0.485,0.456,0.406' -> floats (for --mean / --std)."""
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise OptionError(f"{option} {text}: expected comma-separated numbers, e.g. 0.485,0.456,0.406") from None


def collect_files(paths: list[str]) -> list[Path]:
    """Files named, and the supported files of folders named (sorted by name, not recursive)."""
    files: list[Path] = []
    for text in paths:
        p = Path(text)
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in _SUFFIXES)
            if not found:
                raise DataError(f"{p}: no image ({'/'.join(IMAGE_SUFFIXES)}) or array (.npy/.npz) files in this "
                                "folder")
            files += found
        elif not p.exists():
            raise DataError(f"{p}: no such file or folder")
        else:
            sniff(p)
            files.append(p)
    if not files:
        raise DataError("no calibration data given")
    return files


def sniff(path: Path) -> str:
    """'npy', 'npz' or 'image', from the file's first bytes; anything else is a one-line DataError."""
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror})") from None
    for magic, kind in _MAGIC:
        if head.startswith(magic) and (magic != b"RIFF" or head[8:12] == b"WEBP"):
            return kind
    what = "empty" if not head else "unknown content"
    raise DataError(f"{path}: not an image or array file ({what}); ember reads {ACCEPTED}")


def read_array(path: Path) -> np.ndarray | dict[str, np.ndarray]:
    """A .npy file's array, or a .npz file's arrays by key (never pickled objects)."""
    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.lib.npyio.NpzFile):
            with data:
                arrays = {k: data[k] for k in data.files}
            if not arrays:
                raise DataError(f"{path}: the .npz holds no arrays")
            return arrays
        return data
    except (OSError, ValueError, EOFError) as e:
        detail = str(e).strip().splitlines()[0] if str(e).strip() else "empty or truncated"
        if "pickle" in detail:
            detail = "it holds Python objects, not numbers"
        raise DataError(f"{path}: not a readable .npy/.npz file ({detail})") from None


def input_samples(paths: Iterable[Path], info: InputInfo, prep: Preprocess,
                  convert: bool = True) -> Iterator[np.ndarray]:
    """The samples (each of `info`'s shape) that files feed one input: an image is one batch item, an
    array one sample or a stack of them. `convert=False` keeps arrays' own dtype (run and validate check
    it against the bundle's); images are always converted."""
    pending: list[np.ndarray] = []
    batch = info.shape[0] if len(info.shape) == 4 else 1
    for path in paths:
        kind = sniff(path)
        if kind == "image":
            pending.append(load_image(path, info, prep))
            if len(pending) == batch:
                yield np.stack(pending).reshape(info.shape)
                pending = []
            continue
        data = read_array(path)
        label = str(path)
        if isinstance(data, dict):
            key = info.name if info.name in data else next(iter(data)) if len(data) == 1 else None
            if key is None:
                raise DataError(f"{path}: no array '{info.name}' (keys: {', '.join(data)})")
            data, label = data[key], f"{path}[{key}]"
        yield from _check_kind(_samples_of(data, info, label), info, label, convert)
    if pending:
        raise DataError(f"{len(pending)} image(s) left over: input '{info.name}' takes {batch} per sample")


def _check_kind(stack: np.ndarray, info: InputInfo, where: str, convert: bool) -> np.ndarray:
    if stack.dtype.kind not in "fiub":
        raise DataError(f"{where}: dtype {stack.dtype} cannot feed input '{info.name}'")
    return _cast(stack, info) if convert else stack


def load_image(path: Path, info: InputInfo, prep: Preprocess) -> np.ndarray:
    """One image as one batch item of `info` (its shape without the batch dimension)."""
    try:
        from PIL import Image
    except ImportError:
        raise DataError("reading images needs Pillow: pip install Pillow") from None
    channels, height, width = _image_geometry(info, prep)
    try:
        with Image.open(path) as im:
            im = im.convert("L" if channels == 1 else "RGB")
            if im.size != (width, height):
                im = im.resize((width, height), Image.Resampling.BILINEAR)
            x = np.asarray(im, dtype=np.float32)
    except (OSError, ValueError, Image.DecompressionBombError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DataError(f"{path}: cannot read the image ({reason})") from None
    x = x.reshape(height, width, channels)
    x = {"0to1": x / 255.0, "neg1to1": x / 127.5 - 1.0, "0to255": x, "neg128to127": x - 128.0}[prep.image_mode]
    if prep.channel_order == "BGR":
        x = x[..., ::-1]
    for option, values in (("--mean", prep.mean), ("--std", prep.std)):
        if values and len(values) not in (1, channels):
            raise OptionError(f"{option} has {len(values)} values; input '{info.name}' has {channels} channel(s)")
    if prep.mean:
        x = x - np.asarray(prep.mean, np.float32)
    if prep.std:
        x = x / np.asarray(prep.std, np.float32)
    if prep.layout == "NCHW":
        x = x.transpose(2, 0, 1)
    return _cast(np.ascontiguousarray(x, dtype=np.float32), info)


def _image_geometry(info: InputInfo, prep: Preprocess) -> tuple[int, int, int]:
    dims = info.shape[1:] if len(info.shape) == 4 else info.shape
    if len(dims) == 3:
        c, h, w = dims if prep.layout == "NCHW" else (dims[2], dims[0], dims[1])
        if c in (1, 3):
            return c, h, w
    raise DataError(f"input '{info.name}' has shape {list(info.shape)}: images need a {prep.layout} input "
                    "with 1 or 3 channels (see --layout)")


def _cast(x: np.ndarray, info: InputInfo) -> np.ndarray:
    if info.dtype.kind in "iu":
        lim = np.iinfo(info.dtype)
        return np.clip(np.rint(x), lim.min, lim.max).astype(info.dtype)
    return x.astype(info.dtype, copy=False)


def _samples_of(arr: np.ndarray, info: InputInfo, where: str) -> np.ndarray:
    """An array as a stack [K, *input shape] of K samples."""
    shape = info.shape
    if tuple(arr.shape) == shape:
        return arr.reshape(1, *shape)
    if shape and shape[0] == 1 and tuple(arr.shape) == shape[1:]:
        return arr.reshape(1, *shape)
    if shape and arr.ndim == len(shape) and tuple(arr.shape[1:]) == shape[1:] and arr.shape[0] % shape[0] == 0:
        return arr.reshape(-1, *shape)
    if arr.ndim == len(shape) + 1 and tuple(arr.shape[1:]) == shape:  # [samples, *input shape]
        return arr
    raise DataError(f"{where}: shape {list(arr.shape)} does not fit input '{info.name}' {list(shape)} "
                    "(one sample, or a stack of samples along a new first axis or the batch dimension)")


class DataSource:
    """Feeds for the model, file by file: `samples()` yields (files done, {input name: array}).

    Either `files` (images and .npy files feed one input, `select` or the only one; .npz files keyed by
    input name feed several) or `named` ({input: its files}, from `--input NAME=FILE`: every input named)."""

    def __init__(self, files: list[Path], inputs: list[InputInfo], prep: Preprocess, select: str | None,
                 named: dict[str, list[Path]] | None = None) -> None:
        self.files, self.inputs, self.prep, self.named = files, {i.name: i for i in inputs}, prep, named or {}
        names = ", ".join(self.inputs)
        for name in [select, *self.named]:
            if name is not None and name not in self.inputs:
                raise DataError(f"--input {name}: the model has no input of that name (inputs: {names})")
        if self.named:
            missing = [n for n in self.inputs if n not in self.named]
            if missing:
                raise DataError(f"input '{missing[0]}' needs data too: add --input {missing[0]}=FILE")
            self.files = self.named[next(iter(self.named))]
        self.target = select if select is not None else (inputs[0].name if len(inputs) == 1 else None)
        needs_target = any(f.suffix.lower() != ".npz" for f in files)
        if needs_target and len(inputs) > 1 and not self.named:
            if self.target is None:
                raise DataError(f"the model has {len(inputs)} inputs ({names}): images and .npy files feed one; "
                                "name it with --input NAME=FILE, or give .npz files keyed by input name")
            raise DataError(f"images and .npy files feed input '{self.target}' only; inputs "
                            f"{', '.join(n for n in self.inputs if n != self.target)} need data too: "
                            "give --input NAME=FILE for each, or .npz files keyed by input name")
        self.skipped = 0

    def __len__(self) -> int:
        return len(self.files)

    def samples(self) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        if self.named:
            yield from self._named_samples()
            return
        pending: list[np.ndarray] = []  # images waiting to fill a batch of more than one
        for done, path in enumerate(self.files, 1):
            kind = sniff(path)
            if kind == "image":
                assert self.target is not None
                info = self.inputs[self.target]
                pending.append(load_image(path, info, self.prep))
                batch = info.shape[0] if len(info.shape) == 4 else 1
                if len(pending) == batch:
                    yield done, {info.name: np.stack(pending).reshape(info.shape)}
                    pending = []
                continue
            stacks = self._arrays(path)
            counts = {k: len(v) for k, v in stacks.items()}
            if len(set(counts.values())) > 1:
                raise DataError(f"{path}: arrays hold different numbers of samples ({counts})")
            for i in range(next(iter(counts.values()))):
                yield done, {k: v[i] for k, v in stacks.items()}
        self.skipped = len(pending)

    def _named_samples(self) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """Each input's own files in step: the n-th sample of every input makes the n-th feed."""
        first = next(iter(self.named))
        done = [0]

        def counted(paths: list[Path]) -> Iterator[Path]:
            for path in paths:
                yield path
                done[0] += 1

        streams = {n: input_samples(counted(p) if n == first else p, self.inputs[n], self.prep)
                   for n, p in self.named.items()}
        count = 0
        while True:
            feed = {n: next(s, None) for n, s in streams.items()}
            ended = [n for n, a in feed.items() if a is None]
            if len(ended) == len(feed):
                return
            if ended:
                raise DataError(f"input '{ended[0]}' has {count} sample(s), fewer than the other inputs' data")
            count += 1
            yield max(done[0], 1), feed  # type: ignore[misc]

    def _arrays(self, path: Path) -> dict[str, np.ndarray]:
        data = read_array(path)
        if not isinstance(data, dict):
            assert self.target is not None
            return {self.target: self._fit(data, self.target, str(path))}
        keys = list(data)
        known = [k for k in keys if k in self.inputs]
        if not known and len(keys) == 1 and self.target is not None:
            return {self.target: self._fit(data[keys[0]], self.target, f"{path}[{keys[0]}]")}
        extra = [k for k in keys if k not in self.inputs]
        if extra:
            raise DataError(f"{path}: array '{extra[0]}' is not an input of the model "
                            f"(inputs: {', '.join(self.inputs)})")
        missing = [n for n in self.inputs if n not in keys]
        if missing:
            raise DataError(f"{path}: no array for input '{missing[0]}' (keys: {', '.join(keys) or 'none'})")
        return {k: self._fit(data[k], k, f"{path}[{k}]") for k in keys}

    def _fit(self, arr: np.ndarray, name: str, where: str) -> np.ndarray:
        info = self.inputs[name]
        return _check_kind(_samples_of(arr, info, where), info, where, True)
