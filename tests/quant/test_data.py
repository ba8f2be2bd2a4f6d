"""Calibration inputs: images through every preprocessing option, arrays, folders, and the errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from ember.errors import OptionError
from ember.quant.data import DataError, DataSource, InputInfo, Preprocess, collect_files, load_image

RGB = InputInfo("x", (1, 3, 4, 5), np.dtype(np.float32))  # H=4, W=5


def _pixels(h: int = 4, w: int = 5) -> np.ndarray:
    """Distinct values per channel, so that channel order and layout mistakes show."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([10 * y + x, 100 + 10 * y + x, 200 + y + x], axis=-1).astype(np.uint8)


def _png(path: Path, pixels: np.ndarray) -> Path:
    Image.fromarray(pixels).save(path)
    return path


@pytest.mark.parametrize("mode,expect", [
    ("0to1", lambda p: p / 255.0), ("neg1to1", lambda p: p / 127.5 - 1.0),
    ("0to255", lambda p: p), ("neg128to127", lambda p: p - 128.0),
])
def test_image_modes(tmp_path: Path, mode: str, expect) -> None:
    px = _pixels()
    x = load_image(_png(tmp_path / "a.png", px), RGB, Preprocess(image_mode=mode))
    assert x.shape == (3, 4, 5) and x.dtype == np.float32
    np.testing.assert_allclose(x, expect(px.astype(np.float32)).transpose(2, 0, 1), rtol=1e-6, atol=1e-6)


def test_bgr_nhwc_mean_std(tmp_path: Path) -> None:
    px = _pixels().astype(np.float32)
    nhwc = InputInfo("x", (1, 4, 5, 3), np.dtype(np.float32))
    prep = Preprocess(image_mode="0to255", channel_order="BGR", layout="NHWC", mean=(1.0, 2.0, 3.0),
                      std=(2.0, 4.0, 8.0))
    x = load_image(_png(tmp_path / "a.png", px.astype(np.uint8)), nhwc, prep)
    want = (px[..., ::-1] - np.array([1, 2, 3], np.float32)) / np.array([2, 4, 8], np.float32)
    np.testing.assert_allclose(x, want, rtol=1e-6)


def test_resize_and_grayscale(tmp_path: Path) -> None:
    big = np.full((40, 50, 3), 200, np.uint8)
    big[..., 0] = 50  # R=50, G=B=200: grayscale L = 0.299 R + 0.587 G + 0.114 B
    gray = InputInfo("x", (1, 1, 4, 5), np.dtype(np.float32))
    x = load_image(_png(tmp_path / "big.png", big), gray, Preprocess(image_mode="0to255"))
    assert x.shape == (1, 4, 5)
    np.testing.assert_allclose(x, 0.299 * 50 + 0.587 * 200 + 0.114 * 200, atol=1.0)
    x = load_image(_png(tmp_path / "big.png", big), RGB, Preprocess(image_mode="0to255"))
    np.testing.assert_allclose(x[:, 0, 0], [50, 200, 200], atol=1.0)


def test_jpeg_and_folder_sorted(tmp_path: Path) -> None:
    folder = tmp_path / "imgs"
    folder.mkdir()
    for name, value in (("b.jpg", 100), ("a.png", 10), ("c.jpeg", 200)):
        Image.fromarray(np.full((4, 5, 3), value, np.uint8)).save(folder / name)
    (folder / "notes.txt").write_text("ignored")
    files = collect_files([str(folder)])
    assert [f.name for f in files] == ["a.png", "b.jpg", "c.jpeg"]
    src = DataSource(files, [RGB], Preprocess(image_mode="0to255"), None)
    means = [float(feed["x"].mean()) for _, feed in src.samples()]
    assert means == pytest.approx([10, 100, 200], abs=2.0)  # JPEG is lossy


def test_arrays_npy_stack_and_npz_keys(tmp_path: Path) -> None:
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    np.save(tmp_path / "stack.npy", a)  # two samples along the batch dimension
    np.save(tmp_path / "one.npy", a[0])  # one sample without the batch dimension
    np.savez(tmp_path / "pair.npz", x=a[:1], y=np.ones((1, 2), np.float32))
    feeds = [f["x"] for _, f in DataSource(collect_files([str(tmp_path / "stack.npy"), str(tmp_path / "one.npy")]),
                                           [RGB], Preprocess(), None).samples()]
    assert len(feeds) == 3 and all(f.shape == (1, 3, 4, 5) for f in feeds)
    np.testing.assert_array_equal(feeds[1], a[1:2])
    two = [RGB, InputInfo("y", (1, 2), np.dtype(np.float32))]
    (feed,) = [f for _, f in DataSource(collect_files([str(tmp_path / "pair.npz")]), two, Preprocess(), None).samples()]
    assert set(feed) == {"x", "y"}


def test_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png")
    with pytest.raises(DataError, match=r"bad\.png: cannot read the image"):
        load_image(bad, RGB, Preprocess())
    np.save(tmp_path / "wrong.npy", np.zeros((3, 7, 7), np.float32))
    src = DataSource([tmp_path / "wrong.npy"], [RGB], Preprocess(), None)
    with pytest.raises(DataError, match=r"wrong\.npy: shape \[3, 7, 7\] does not fit input 'x' \[1, 3, 4, 5\]"):
        list(src.samples())
    with pytest.raises(DataError, match=r"--input nope: the model has no input of that name \(inputs: x\)"):
        DataSource([tmp_path / "wrong.npy"], [RGB], Preprocess(), "nope")
    two = [RGB, InputInfo("y", (1, 2), np.dtype(np.float32))]
    with pytest.raises(DataError, match=r"2 inputs \(x, y\).*--input NAME"):
        DataSource([tmp_path / "wrong.npy"], two, Preprocess(), None)
    np.savez(tmp_path / "half.npz", x=np.zeros((1, 3, 4, 5), np.float32))
    with pytest.raises(DataError, match=r"half\.npz: no array for input 'y'"):
        list(DataSource([tmp_path / "half.npz"], two, Preprocess(), None).samples())
    with pytest.raises(DataError, match=r"missing\.png: no such file"):
        collect_files([str(tmp_path / "missing.png")])
    with pytest.raises(DataError, match=r"notes\.txt: not an image"):
        (tmp_path / "notes.txt").write_text("x")
        collect_files([str(tmp_path / "notes.txt")])
    with pytest.raises(OptionError, match="--mean has 2 values; input 'x' has 3 channel"):
        load_image(_png(tmp_path / "a.png", _pixels()), RGB, Preprocess(mean=(1.0, 2.0)))
    with pytest.raises(OptionError, match="--image-mode must be one of"):
        Preprocess(image_mode="0to2")
