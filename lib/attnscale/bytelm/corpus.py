"""The corpus: the text files of Debian's ``fortunes`` and ``fortunes-min`` packages
(version 1:1.99.1-7.3, Debian main), concatenated in file-name order and stored
xz-compressed in ``chapters/data/fortunes/`` with their copyright file. Bytes are the
tokens (a vocabulary of 256, no tokenizer). The split is by byte offset: the first 90%
trains, the last 10% validates."""

from __future__ import annotations

import hashlib
import lzma
from functools import lru_cache
from pathlib import Path

import numpy as np

from .._paths import in_book

__all__ = ["CORPUS", "SHA256", "SIZE", "TRAIN_FRACTION", "load_bytes", "split"]

CORPUS = in_book("chapters/data/fortunes/fortunes.txt.xz")
#: SHA-256 of the uncompressed text
SHA256 = "fbc2d796dde8ea64a51345ce4c18ff486a778a2d2259603987073bedb3fc3cd7"
SIZE = 2576674
TRAIN_FRACTION = 0.9


@lru_cache(maxsize=2)
def _read(path: str) -> bytes:
    data = lzma.decompress(Path(path).read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    if path == str(CORPUS) and digest != SHA256:
        raise ValueError(f"path {path} holds text with SHA-256 {digest}, not the corpus's {SHA256}")
    return data


def load_bytes(path: Path | str = CORPUS) -> np.ndarray:
    """The corpus as uint8 bytes, checked against its SHA-256."""
    return np.frombuffer(_read(str(path)), dtype=np.uint8)


def split(data: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation): the first ``TRAIN_FRACTION`` of the bytes and the rest."""
    data = load_bytes() if data is None else data
    cut = int(TRAIN_FRACTION * data.shape[0])
    return data[:cut], data[cut:]
