"""Offline vectors for recall's ranking by meaning: whole words, then word pieces, nothing fetched.

``encode(texts)`` gives each text the mean of its content words' vectors, as a unit vector, so that
"brought home from the rescue" lands near "adopted from the animal shelter" without an embedding
service. The vectors ship beside this module in ``word_vectors.bin`` (about 22,000 words, 256
dimensions, int8 with a scale per word, 5.8 MB), distilled from all-MiniLM-L6-v2 (Apache-2.0) by
``benchmarks/make_word_vectors.py``. Recall ranks the newest ``REACH`` messages by them, then
ranks the best again by these joined to their word pieces' vectors (``piece_vectors``,
``joined``), so that a name, a number or a word the table lacks counts too: the pieces cost
more to make, and only the best need them. They are weaker than a sentence model's, so recall
gives their ranking ``WEIGHT`` of a provider's in the fusion. ``MODEL`` is their name wherever
an embedding model is named (``Agent(embedding_model=...)``); it is the default.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nbmemory.models.llm import WORDS_MODEL
from nbmemory.terms import STOPWORDS

if TYPE_CHECKING:
    import numpy as np

MODEL = WORDS_MODEL
WEIGHT = 0.3
"""What a place in the ranking by these vectors adds to a message's fused score, against 1 for
a provider's sentence embeddings (benchmarks/retrieval.py: more weight loses updated facts)."""
FLOOR = 0.1
"""The cosine a text needs to be ranked at all: unrelated sentences meet at about 0 ± 0.1
(benchmarks/retrieval.py: a higher floor loses questions that ask two things)."""
PIECES = 0.5
"""The share of a joined cosine that the word pieces' vectors give, the whole words' the rest
(human_recall.py: without the pieces, less evidence is found, open-ended questions' most;
retrieval.py: the pieces alone lose questions in other words)."""
REACH = 4_096
"""The newest messages recall ranks by these vectors (older ones by words alone; those recall
never returns do not count), so that a recall costs the same on any history: the vectors are
made in each process (about 12 µs a message of 200 characters, 1 KiB of RAM), never stored,
since they cost less to make than to read."""
PATH = Path(__file__).parent / "word_vectors.bin"
"""The vectors, beside this module."""
_MAGIC = b"nbmemory-word-vectors 1"
_WORD = re.compile(r"[a-z]+")
_lock = threading.Lock()
_loaded: tuple[dict[str, int], np.ndarray] | None = None


def write(path: Path, words: Sequence[str], vectors: np.ndarray) -> None:
    """Store ``vectors`` (one row per word) as int8 rows with a float32 scale each."""
    import numpy as np

    scales = (np.abs(vectors).max(1) / 127).astype(np.float32)
    scales[scales == 0] = 1.0
    rows = np.round(vectors / scales[:, None]).astype(np.int8)
    listed = "\n".join(words).encode()
    head = b"%s %d %d %d\n" % (_MAGIC, len(words), vectors.shape[1], len(listed))
    path.write_bytes(head + listed + scales.tobytes() + rows.tobytes())


def _read(path: Path) -> tuple[dict[str, int], np.ndarray]:
    import numpy as np

    data = path.read_bytes()
    head, _, rest = data.partition(b"\n")
    magic, count, dimensions, listed = head.rsplit(b" ", 3)
    if magic != _MAGIC:
        raise ValueError(f"{path} is not a word vector file")
    count, dimensions, listed = int(count), int(dimensions), int(listed)
    words = rest[:listed].decode().split("\n")
    if len(words) != count:
        raise ValueError(f"{path} lists {len(words)} words for {count} vectors")
    scales = np.frombuffer(rest, np.float32, count, listed)
    rows = np.frombuffer(rest, np.int8, count * dimensions, listed + 4 * count)
    matrix = rows.reshape(count, dimensions).astype(np.float32)
    matrix *= scales[:, None]  # in place: three times faster than int8 times float32
    return {word: n for n, word in enumerate(words)}, matrix


def _table() -> tuple[dict[str, int], np.ndarray]:
    """The row of each content word (stop words left out), and the vectors."""
    global _loaded
    with _lock:
        if _loaded is None:
            index, matrix = _read(PATH)
            for word in STOPWORDS:
                index.pop(word, None)
            _loaded = index, matrix
        return _loaded


def encode(texts: Sequence[str]) -> np.ndarray:
    """A unit vector per text (zeros for a text with no known content word), in order."""
    import numpy as np

    index, matrix = _table()
    found = np.zeros((len(texts), matrix.shape[1]), np.float32)
    for n, text in enumerate(texts):
        rows = [index[w] for w in _WORD.findall(text.lower()) if w in index]
        if rows:
            found[n] = matrix[rows].sum(0)
    lengths = np.linalg.norm(found, axis=1, keepdims=True)
    return found / np.where(lengths == 0, 1, lengths)


def joined(
    words: np.ndarray, pieces: np.ndarray, query_words: float, query_pieces: float
) -> np.ndarray:
    """The cosines of texts to a query by their words' and pieces' vectors joined (``PIECES``
    of it the pieces'), from the cosines by each: ``words`` and ``pieces``, 0 where a text has
    no such vector; ``query_words`` and ``query_pieces``: 1 if the query has one, else 0."""
    import numpy as np

    share = (1 - PIECES) * (words != 0) + PIECES * (pieces != 0)
    asked = (1 - PIECES) * query_words + PIECES * query_pieces
    lengths = np.sqrt(share * asked)
    return ((1 - PIECES) * words + PIECES * pieces) / np.where(lengths == 0, 1, lengths)
