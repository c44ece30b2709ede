"""The word pieces' vectors: a name, a number or a word the whole-word table lacks still has a
meaning recall can rank by, read from the installed wordllama wheel, nothing downloaded."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from nbmemory import Agent
from nbmemory.errors import MemoryWarning
from nbmemory.recall import embeddings, piece_vectors, recall, word_vectors
from support import told

FACT = "The k8s cluster moves to 1.30 next week."
OTHERS = [
    "I brought home a new lamp for the living room.",
    "My brother is coming home for the holidays.",
    "The weather is nice today.",
    "I finally signed up for cello lessons.",
]
ASKED = "When is the Kubernetes upgrade?"


def ops() -> Agent:
    return told(Agent("Ops", persistent_memory=True), [FACT, *OTHERS])


def test_every_text_but_an_empty_one_gets_a_unit_vector_in_order():
    texts = ["k8s 1.30", "", "zzzq xqj", "Priya", FACT]
    found = piece_vectors.encode(texts)
    assert found.shape == (5, 256) and found.dtype == np.float32
    assert np.allclose(np.linalg.norm(found, axis=1), [1, 0, 1, 1, 1], atol=1e-5)
    assert np.array_equal(found, piece_vectors.encode(texts))


def test_a_word_the_table_lacks_is_found_by_its_pieces(on_store, monkeypatch):
    agent = ops()
    docs = agent.short_memory.docs
    assert recall(docs, ASKED, semantic=None) == []  # no word in common
    assert recall(docs, ASKED, semantic=agent.semantic_index())[0].text == FACT
    monkeypatch.setattr(word_vectors, "PIECES", 0.0)  # the whole words' vectors alone
    again = Agent("Ops", persistent_memory=True).semantic_index()
    assert recall(docs, ASKED, semantic=again)[0].text != FACT


def test_with_its_files_missing_or_damaged_recall_is_by_words_with_one_warning(
    tmp_path, monkeypatch
):
    docs = ops().short_memory.docs
    installed = piece_vectors.folder()
    damaged = tmp_path / "wordllama"
    shutil.copytree(installed, damaged, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    vectors = damaged / piece_vectors.VECTORS
    vectors.write_bytes(vectors.read_bytes()[:100_000])
    for folder, why in ((tmp_path / "missing", "holds no"), (damaged, "cut short or damaged")):
        monkeypatch.setattr(piece_vectors, "folder", lambda folder=folder: folder)
        monkeypatch.setattr(piece_vectors, "_loaded", None)
        monkeypatch.setattr(embeddings, "_warned", set())
        agent = Agent("Ops", persistent_memory=True)
        with pytest.warns(MemoryWarning, match="recall of Ops is lexical only") as caught:
            by_words = recall(docs, "cello lessons", semantic=agent.semantic_index())
            assert recall(docs, ASKED, semantic=agent.semantic_index()) == []
            agent.run(ASKED)  # the run goes on
        assert len(caught) == 1 and why in str(caught[0].message)
        assert by_words[0].text == OTHERS[3]


def test_where_the_package_has_no_wheel_the_whole_words_rank_alone(on_store, monkeypatch):
    monkeypatch.setattr(piece_vectors, "PACKAGE", "nbmemory_no_such_package")
    monkeypatch.setattr(piece_vectors, "_loaded", None)
    assert not piece_vectors.installed()
    with pytest.raises(FileNotFoundError, match="pip install nbmemory_no_such_package"):
        piece_vectors.encode(["k8s"])
    agent = ops()
    found = recall(agent.short_memory.docs, ASKED, semantic=agent.semantic_index())
    assert found and found[0].text != FACT  # ranked by meaning still, without the pieces


def test_the_pieces_kept_are_bounded_and_made_again_when_needed(monkeypatch):
    agent = ops()
    index = agent.semantic_index()
    docs = agent.short_memory.docs
    monkeypatch.setattr(word_vectors, "REACH", 2)  # at most 4 kept
    index.reach = 2  # the two newest messages ranked by meaning: each new one moves one out
    for n in range(6):
        agent.short_memory.add("User", f"Cello lesson {n} went well.")
        assert recall(docs, "Which instrument lessons?", semantic=index)
        assert 2 <= len(index._pieces) <= 4
    index.reach = None  # every message again, the fact's pieces among those made again
    assert recall(docs, ASKED, semantic=index)[0].text == FACT
