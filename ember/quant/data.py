"""Calibration inputs for `ember profile`: images (PNG/JPEG) and .npy/.npz arrays, or folders of them.

Images are preprocessed the way Glow's image loader does it: decoded as RGB (grayscale for a
1-channel input), resized to the input's spatial size (bilinear), scaled by `--image-mode`, channels
reordered by `--channel-order`, normalised per channel as (x - mean) / std (mean and std are in the
units after the image-mode scaling, in the model's channel order), and laid out as `--layout`.
Arrays are fed as they are: one sample of the input's shape (with or without the batch dimension)
or a stack of samples along the batch dimension.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import EmberError, OptionError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
ARRAY_SUFFIXES = (".npy", ".npz")
_SUFFIXES = IMAGE_SUFFIXES + ARRAY_SUFFIXES
IMAGE_MODES = ("0to1", "neg1to1", "0to255", "neg128to127")


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
                raise DataError(f"{p}: no .png/.jpg/.jpeg/.npy/.npz files in this folder")
            files += found
        elif not p.exists():
            raise DataError(f"{p}: no such file or folder")
        elif p.suffix.lower() not in _SUFFIXES:
            raise DataError(f"{p}: not an image (.png/.jpg/.jpeg) or array (.npy/.npz) file")
        else:
            files.append(p)
    if not files:
        raise DataError("no calibration data given")
    return files


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
    raise DataError(f"{where}: shape {list(arr.shape)} does not fit input '{info.name}' {list(shape)} "
                    "(one sample, or a stack of samples along the batch dimension)")


class DataSource:
    """Feeds for the model, file by file: `samples()` yields (files done, {input name: array})."""

    def __init__(self, files: list[Path], inputs: list[InputInfo], prep: Preprocess, select: str | None) -> None:
        self.files, self.inputs, self.prep = files, {i.name: i for i in inputs}, prep
        names = ", ".join(self.inputs)
        if select is not None and select not in self.inputs:
            raise DataError(f"--input {select}: the model has no input of that name (inputs: {names})")
        self.target = select if select is not None else (inputs[0].name if len(inputs) == 1 else None)
        needs_target = any(f.suffix.lower() != ".npz" for f in files)
        if needs_target and len(inputs) > 1:
            if self.target is None:
                raise DataError(f"the model has {len(inputs)} inputs ({names}): images and .npy files feed one; "
                                "name it with --input NAME, or give .npz files keyed by input name")
            raise DataError(f"images and .npy files feed input '{self.target}' only; inputs "
                            f"{', '.join(n for n in self.inputs if n != self.target)} need data too: "
                            "give .npz files keyed by input name")
        self.skipped = 0

    def __len__(self) -> int:
        return len(self.files)

    def samples(self) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        pending: list[np.ndarray] = []  # images waiting to fill a batch of more than one
        for done, path in enumerate(self.files, 1):
            suffix = path.suffix.lower()
            if suffix in IMAGE_SUFFIXES:
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

    def _arrays(self, path: Path) -> dict[str, np.ndarray]:
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise DataError(f"{path}: not a readable {path.suffix} file ({str(e).splitlines()[0]})") from None
        if not isinstance(data, np.lib.npyio.NpzFile):
            assert self.target is not None
            return {self.target: self._fit(data, self.target, str(path))}
        with data:
            keys = list(data.files)
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
        if arr.dtype.kind not in "fiub":
            raise DataError(f"{where}: dtype {arr.dtype} cannot feed input '{name}'")
        return _cast(_samples_of(arr, info, where), info)
