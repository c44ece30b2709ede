"""The offline word vectors: recall ranks by meaning by default, with nothing sent anywhere."""

from __future__ import annotations

import numpy as np
import pytest

from nbmemory import Agent
from nbmemory.errors import MemoryWarning
from nbmemory.recall import embeddings, recall, word_vectors
from nbmemory.store.folders import EMBEDDINGS_DIR
from support import run_python, told

FACT = "We adopted a beagle from the animal shelter yesterday, and the kids already adore it."
OTHERS = [
    "I brought home a new lamp for the living room.",
    "Rescue teams cleared the road after the storm.",
    "My brother is coming home for the holidays.",
    "I finally signed up for cello lessons.",
]
ASKED = "Did they get a puppy?"


def nora() -> Agent:
    return told(Agent("Nora", persistent_memory=True), [FACT, *OTHERS])


def test_each_text_gets_a_unit_vector_in_order():
    found = word_vectors.encode([FACT, "", "zzzq xqj", OTHERS[3]])
    assert found.shape == (4, 256) and found.dtype == np.float32
    assert np.allclose(np.linalg.norm(found, axis=1), [1, 0, 0, 1], atol=1e-5)
    assert np.array_equal(found, word_vectors.encode([FACT, "", "zzzq xqj", OTHERS[3]]))
    assert np.array_equal(word_vectors.encode([FACT] * 300)[299], found[0])


def test_words_of_one_topic_are_nearer_than_unrelated_ones():
    question, fact, *others = word_vectors.encode([ASKED, FACT, *OTHERS])
    nearness = [float(question @ other) for other in others]
    assert float(question @ fact) > max(nearness) + 0.05


def test_a_question_in_other_words_is_found_by_default_and_not_by_words(on_store):
    agent = nora()
    docs = agent.short_memory.docs
    assert agent.embedding_model == word_vectors.MODEL
    assert recall(docs, ASKED, semantic=None) == []  # by words alone: no word in common
    assert recall(docs, ASKED)[0].text == FACT  # by default, as the agent's tool ranks
    assert recall(docs, ASKED, semantic=agent.semantic_index())[0].text == FACT
    agent.run(ASKED)  # the offline model calls its recall tool
    result, *_ = [m for m in agent.short_memory.conversation_history if m["role"] == "Tool"]
    assert FACT in str(result["content"])


def test_recall_called_alone_ranks_as_the_setting_says(on_store, monkeypatch):
    docs = nora().short_memory.docs
    assert embeddings.shared(docs, word_vectors.MODEL) is embeddings.shared(
        docs, word_vectors.MODEL
    )
    monkeypatch.setenv("NBMEMORY_EMBEDDING_MODEL", "none")
    assert recall(docs, ASKED) == []
    monkeypatch.setenv("NBMEMORY_EMBEDDING_MODEL", word_vectors.MODEL)
    assert recall(docs, ASKED)[0].text == FACT


def test_what_both_rankings_find_keeps_the_order_by_words(on_store):
    agent = nora()
    found = recall(agent.short_memory.docs, "cello lessons", semantic=agent.semantic_index())
    assert found[0].text == OTHERS[3]


def test_the_word_vectors_are_kept_nowhere(on_store, request):
    agent = nora()
    recall(agent.short_memory.docs, ASKED, semantic=agent.semantic_index())
    if on_store == "files":
        assert not (agent.short_memory.docs.folder / EMBEDDINGS_DIR).exists()
    else:
        import psycopg

        with psycopg.connect(request.getfixturevalue("database_url")) as conn:
            tables = conn.execute("SELECT to_regclass('nbmemory_embeddings')").fetchone()[0]
            rows = conn.execute("SELECT count(*) FROM nbmemory_embeddings").fetchone()[0]
        assert tables is not None and rows == 0


@pytest.mark.parametrize("setting", ["", "none", "None"])
def test_recall_by_words_alone_on_request(setting, monkeypatch):
    assert Agent("Nora", embedding_model=setting).semantic_index() is None
    monkeypatch.setenv("NBMEMORY_EMBEDDING_MODEL", "none")
    assert Agent("Nora", persistent_memory=True).semantic_index() is None


def test_a_file_of_another_kind_is_refused(tmp_path):
    path = tmp_path / "vectors.bin"
    word_vectors.write(path, ["cat", "dog"], np.array([[1.0, 0.0], [0.6, 0.8]]))
    index, matrix = word_vectors._read(path)
    assert index == {"cat": 0, "dog": 1}
    assert np.allclose(matrix, [[1.0, 0.0], [0.6, 0.8]], atol=0.01)
    path.write_bytes(b"something else 1 2 3\n")
    with pytest.raises(ValueError, match="not a word vector file"):
        word_vectors._read(path)


def test_nothing_is_sent_and_numpy_waits_for_recall():
    code = (
        "import sys\nfrom nbmemory import Agent\n"
        "a = Agent('Plain', persistent_memory=True)\n"
        "a.short_memory.add('User', 'The red car.')\n"
        "print('numpy' in sys.modules, 'litellm' in sys.modules)\n"
        "print(a.run('Which automobile?'))\n"
        "print('numpy' in sys.modules, 'litellm' in sys.modules)"
    )
    lines = run_python(code).stdout.strip().splitlines()
    assert lines[0] == "False False" and lines[-1] == "True False"
    assert "red car" in "".join(lines[1:-1])


def test_a_missing_or_damaged_vectors_file_leaves_recall_by_words_with_one_warning(
    tmp_path, monkeypatch
):
    docs = nora().short_memory.docs
    damaged = tmp_path / "word_vectors.bin"
    damaged.write_bytes(word_vectors.PATH.read_bytes()[:100_000])
    for path in (damaged, tmp_path / "missing.bin"):
        monkeypatch.setattr(word_vectors, "PATH", path)
        monkeypatch.setattr(word_vectors, "_loaded", None)
        monkeypatch.setattr(embeddings, "_warned", set())
        agent = Agent("Nora", persistent_memory=True)
        with pytest.warns(MemoryWarning, match="recall of Nora is lexical only") as caught:
            found = recall(docs, "cello lessons", semantic=agent.semantic_index())
            by_words = recall(docs, ASKED, semantic=agent.semantic_index())
            agent.run(ASKED)  # the run goes on
        assert len(caught) == 1 and found[0].text == OTHERS[3]
        assert FACT not in [passage.text for passage in by_words]
