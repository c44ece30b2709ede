"""Offline vectors of word pieces: any word has one, names, numbers and made-up words included.

``encode(texts)`` gives each text the mean of its pieces' vectors, as a unit vector. The pieces
and their vectors are WordLlama's (``wordllama`` on PyPI, MIT): a Llama tokenizer's 32,000 pieces
with 256-dimension vectors trained so that the mean of a sentence's pieces lands near sentences
that mean the same. The package ships them in its wheel; they are read from its folder, without
importing it (it would fetch its tokenizer from the network), so nothing is downloaded at run
time. Recall ranks the best matches of the whole-word vectors again with these joined to them
(``embeddings``, ``word_vectors.joined``): the whole words know fewer words. Where no wheel of
it is built (a platform or a Python it has none for), it is not installed, and the whole words'
vectors rank alone.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

PACKAGE = "wordllama"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
VECTORS = "weights/l2_supercat_256.safetensors"
"""Where the wheel keeps the two files (wordllama 0.4)."""
TENSOR = "embedding.weight"
_lock = threading.Lock()
_loaded: tuple[Any, np.ndarray] | None = None


def installed() -> bool:
    """Whether the package is installed (without importing it)."""
    return _loaded is not None or importlib.util.find_spec(PACKAGE) is not None


def folder() -> Path:
    """The installed package's folder; ``FileNotFoundError`` if it is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"the word pieces' vectors need {PACKAGE}: pip install {PACKAGE}")
    return Path(spec.origin).parent


def _found(root: Path, name: str) -> Path:
    if not (root / name).is_file():
        raise FileNotFoundError(f"{root} holds no {name}: reinstall {PACKAGE}")
    return root / name


def _vectors(path: Path) -> np.ndarray:
    """The pieces' vectors of a safetensors file (8-byte header length, JSON header, raw
    data), mapped, not read: only the rows a text uses are ever loaded."""
    import numpy as np

    try:
        with path.open("rb") as file:
            (length,) = struct.unpack("<Q", file.read(8))
            entry = json.loads(file.read(min(length, 2**20)))[TENSOR]
        dtype = np.dtype({"F16": np.float16, "F32": np.float32}[entry["dtype"]])
        (rows, dimensions), (start, end) = entry["shape"], entry["data_offsets"]
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} holds no table of vectors: {exc!r}") from exc
    if end - start != rows * dimensions * dtype.itemsize or 8 + length + end > path.stat().st_size:
        raise ValueError(f"{path} is cut short or damaged")
    return np.memmap(path, dtype, "r", 8 + length + start, (rows, dimensions))


def _table() -> tuple[Any, np.ndarray]:
    """The tokenizer and the pieces' vectors, read once per process."""
    global _loaded
    with _lock:
        if _loaded is None:
            from tokenizers import Tokenizer

            root = folder()
            pieces, vectors = _found(root, TOKENIZER), _found(root, VECTORS)
            try:
                tokenizer = Tokenizer.from_file(str(pieces))
            except Exception as exc:  # the tokenizers library's own error
                raise ValueError(f"{pieces} is damaged: {exc}") from exc
            matrix = _vectors(vectors)
            if tokenizer.get_vocab_size() > len(matrix):
                raise ValueError(f"{PACKAGE}'s tokenizer has pieces its vectors lack")
            tokenizer.no_padding()
            tokenizer.no_truncation()
            _loaded = tokenizer, matrix
        return _loaded


def encode(texts: Sequence[str]) -> np.ndarray:
    """A unit vector per text (zeros for an empty text), in order.

    Raises:
        OSError: ``wordllama`` is not installed, or its files are missing.
        ValueError: Its files are damaged.
    """
    import numpy as np

    tokenizer, matrix = _table()
    found = np.zeros((len(texts), matrix.shape[1]), np.float32)
    for n, encoded in enumerate(tokenizer.encode_batch(list(texts), add_special_tokens=False)):
        if encoded.ids:
            found[n] = matrix[encoded.ids].sum(0, dtype=np.float32)
    lengths = np.linalg.norm(found, axis=1, keepdims=True)
    return found / np.where(lengths == 0, 1, lengths)
