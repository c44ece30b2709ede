"""Hybrid recall: messages embedded through litellm's embedding API over real HTTP (the fake
OpenAI server's ``/v1/embeddings``), their vectors kept beside the memory, and the rankings by
words and by meaning fused."""

from __future__ import annotations

import warnings

import psycopg
import pytest

from nbmemory import Agent
from nbmemory.errors import MemoryWarning
from nbmemory.recall import recall
from nbmemory.recall.stored_index import text_key
from nbmemory.store.folders import EMBEDDINGS_DIR
from nbmemory.store.workspace import database_at
from support import run_python, told

FACT = "Lena got a red car last week."
ASKED = "Which automobile was purchased?"
FILLER = [
    "The weather in Lyon was rainy all weekend.",
    "We adopted a cat named Pixel.",
    "Lunch at the canteen ran long again.",
]


def embedder(server, name: str = "Maya", model: str = "openai/fake-embed") -> Agent:
    return Agent(
        name,
        persistent_memory=True,
        embedding_model=model,
        embedding_options={"api_base": server.url, "api_key": "test-key", "max_retries": 0},
    )


def seeded(server, **options) -> Agent:
    return told(embedder(server, **options), [FACT, *FILLER])


def inputs(server) -> list[list[str]]:
    """What each embedding request asked for."""
    return [request["input"] for request in server.embedding_requests]


def test_a_question_in_other_words_is_found_by_meaning_not_by_words(openai_server, on_store):
    agent = seeded(openai_server)
    docs = agent.short_memory.docs
    assert FACT not in [p.text for p in recall(docs, ASKED, semantic=None)]
    [best, *_] = recall(docs, ASKED, semantic=agent.semantic_index())
    assert (best.role, best.text) == ("User", FACT)
    # What both rankings find stays first: fusion keeps the match by words.
    assert recall(docs, "cat Pixel", semantic=agent.semantic_index())[0].text == FILLER[1]


def test_the_tool_ranks_by_meaning_in_a_run(openai_server, on_store):
    agent = seeded(openai_server)
    agent.run(ASKED)  # the offline model recalls for a question its context does not answer
    results = [m["content"] for m in agent.short_memory.conversation_history if m["role"] == "Tool"]
    assert results and FACT in results[0]["content"]


def test_each_message_is_embedded_once_in_batches(openai_server, on_store):
    agent = seeded(openai_server)
    assert inputs(openai_server) == []  # adding embeds nothing
    docs, semantic = agent.short_memory.docs, agent.semantic_index()
    recall(docs, ASKED, semantic=semantic)
    assert inputs(openai_server) == [[ASKED, *reversed(FILLER), FACT]]  # newest first, one batch
    recall(docs, "Who is Pixel?", semantic=semantic)
    assert inputs(openai_server)[1:] == [["Who is Pixel?"]]  # the query alone
    agent.short_memory.add("User", "My physician is Dr Okafor.")
    [best, *_] = recall(docs, "Who is my doctor?", semantic=semantic)
    assert best.text == "My physician is Dr Okafor."
    assert inputs(openai_server)[2:] == [["Who is my doctor?", "My physician is Dr Okafor."]]
    # A new process reads the vectors kept beside the memory: only the query is embedded.
    again = embedder(openai_server)
    recall(docs, ASKED, semantic=again.semantic_index())
    assert inputs(openai_server)[3:] == [[ASKED]]


def test_a_compaction_keeps_the_vectors_of_what_it_archives(openai_server, on_store):
    agent = seeded(openai_server)
    docs, semantic = agent.short_memory.docs, agent.semantic_index()
    recall(docs, ASKED, semantic=semantic)
    agent.short_memory.compact("We talked about family and pets.")
    [best, *_] = recall(docs, ASKED, semantic=semantic)
    assert best.text == FACT and best.source.startswith("history_")
    assert inputs(openai_server)[1:] == [[ASKED, "We talked about family and pets."]]


def test_another_model_builds_its_own_vectors(openai_server, on_store):
    agent = seeded(openai_server)
    recall(agent.short_memory.docs, ASKED, semantic=agent.semantic_index())
    agent.embedding_model = "openai/other-embed"
    recall(agent.short_memory.docs, ASKED, semantic=agent.semantic_index())
    assert [r["model"] for r in openai_server.embedding_requests] == ["fake-embed", "other-embed"]
    assert inputs(openai_server)[0] == inputs(openai_server)[1]  # every message, again
    if not agent.short_memory.docs.is_database:
        assert len(list((agent.short_memory.docs.folder / EMBEDDINGS_DIR).iterdir())) == 2


def test_messages_ranked_before_the_model_changed_shape_are_embedded_anew(openai_server, on_store):
    from fake_openai import fake_embedding
    from nbmemory.recall.embeddings import SemanticIndex

    options = {"api_base": openai_server.url, "api_key": "test-key", "max_retries": 0}
    index = SemanticIndex(embedder(openai_server).short_memory.docs, "openai/fake-embed", options)
    texts = [FACT, *FILLER]
    keys = tuple(text_key(text) for text in texts)  # recall asks with the same keys each time
    assert index.ranked(ASKED, keys, texts, 1)[0][1] == 0
    openai_server.embed = lambda batch: [fake_embedding(text, 512) for text in batch]
    bike = "Tomas bought a blue bike."
    index.ranked(bike, (*keys, text_key(bike)), [*texts, bike], 1)  # 512 numbers: start again
    assert index.ranked(ASKED, keys, texts, 1)[0][1] == 0  # the same keys: their rows anew


@pytest.mark.files("the vectors' file")
def test_a_deleted_or_damaged_index_is_rebuilt(openai_server):
    agent = seeded(openai_server)
    docs, semantic = agent.short_memory.docs, agent.semantic_index()
    recall(docs, ASKED, semantic=semantic)
    [index] = (docs.folder / EMBEDDINGS_DIR).iterdir()
    whole = index.read_bytes()
    index.unlink()
    agent.short_memory.add("User", "My physician is Dr Okafor.")
    recall(docs, "Who is my doctor?", semantic=semantic)  # the vectors in RAM are written again
    assert sorted(index.read_bytes()) != [] and len(index.read_bytes()) > len(whole)
    assert inputs(openai_server)[1:] == [["Who is my doctor?", "My physician is Dr Okafor."]]
    # A crash mid-record: the whole records are read, the torn one is cut off and made again.
    index.write_bytes(index.read_bytes()[:-10])
    fresh = embedder(openai_server)
    assert recall(docs, ASKED, semantic=fresh.semantic_index())[0].text == FACT
    assert inputs(openai_server)[2:] == [[ASKED, "My physician is Dr Okafor."]]
    # Another file in its place (not an index at all): replaced.
    index.write_bytes(b"not vectors\n")
    fresh = embedder(openai_server)
    assert recall(docs, ASKED, semantic=fresh.semantic_index())[0].text == FACT
    assert len(inputs(openai_server)[3]) == 6  # the query and every message
    assert embedder(openai_server).semantic_index() is not None
    assert recall(docs, ASKED, semantic=embedder(openai_server).semantic_index())
    assert len(inputs(openai_server)) == 5  # the rebuilt file serves a new process


@pytest.mark.files("a link planted in an agent's folder")
def test_a_vectors_folder_planted_as_a_link_is_neither_read_nor_written_through(
    openai_server, tmp_path
):
    agent = seeded(openai_server)
    docs = agent.short_memory.docs
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (docs.folder / EMBEDDINGS_DIR).symlink_to(elsewhere)
    with pytest.warns(MemoryWarning, match="could not keep its vectors"):
        assert recall(docs, ASKED, semantic=agent.semantic_index())[0].text == FACT
    assert list(elsewhere.iterdir()) == []
    assert (docs.folder / EMBEDDINGS_DIR).is_symlink()


def test_a_failing_provider_leaves_recall_lexical_with_one_warning(openai_server, on_store):
    agent = seeded(openai_server)
    openai_server.embeddings_status = 500
    docs = agent.short_memory.docs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lexical = recall(docs, "cat Pixel", semantic=None)
        found = recall(docs, "cat Pixel", semantic=agent.semantic_index())
        tried = len(openai_server.embedding_requests)  # litellm retries an OpenAI embedding
        answer = agent.run(ASKED)  # the run goes on
        agent.run("Who is Pixel?")
    said = [str(w.message) for w in caught if issubclass(w.category, MemoryWarning)]
    assert len(said) == 1 and "lexical only" in said[0] and "fake-embed" in said[0]
    assert found == lexical
    assert answer
    assert agent.semantic_index().requests == 1  # then no call for a while
    assert len(openai_server.embedding_requests) == tried


def test_a_bad_model_name_or_a_dead_server_only_warns(on_store):
    agent = Agent(
        "Nowhere",
        persistent_memory=True,
        embedding_model="openai/fake-embed",
        embedding_options={"api_base": "http://127.0.0.1:9/v1", "api_key": "k", "max_retries": 0},
    )
    agent.short_memory.add("User", FACT)
    with pytest.warns(MemoryWarning, match="lexical only"):
        assert recall(agent.short_memory.docs, "red car", semantic=agent.semantic_index())


def test_vectors_land_in_the_database_table(openai_server, database):
    agent = seeded(openai_server)
    recall(agent.short_memory.docs, ASKED, semantic=agent.semantic_index())
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT agent, model, length(hash), length(vector) FROM nbmemory_embeddings"
        ).fetchall()
    assert sorted(set(rows)) == [("Maya", "openai/fake-embed", 16, 256 * 4)] and len(rows) == 4


def test_by_default_recall_uses_the_offline_vectors_and_sends_nothing(openai_server, monkeypatch):
    monkeypatch.delenv("NBMEMORY_EMBEDDING_MODEL", raising=False)
    # A provider's model would reach the loopback server: OpenAI's endpoint is set to it.
    monkeypatch.setenv("OPENAI_API_BASE", openai_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    agent = Agent("Plain", persistent_memory=True)
    assert agent.embedding_model == "nbmemory/words"
    monkeypatch.setenv("NBMEMORY_EMBEDDING_MODEL", "openai/fake-embed")
    assert Agent("Plain", persistent_memory=True).embedding_model == "openai/fake-embed"
    assert Agent("Plain", persistent_memory=True, embedding_model="").semantic_index() is None
    agent.short_memory.add("User", "The red car.")
    agent.run("Which automobile?")
    assert openai_server.embedding_requests == []
    code = (
        "import sys\nfrom nbmemory import Agent\n"
        "a = Agent('Plain', persistent_memory=True)\n"
        "a.short_memory.add('User', 'The red car.')\n"
        "print(a.run('Which car?'))\n"
        "print(sorted(m for m in ('numpy', 'nbmemory.recall.embeddings') if m in sys.modules))"
    )
    result = run_python(code, env={"NBMEMORY_EMBEDDING_MODEL": "none"})
    assert result.stdout.strip().endswith("[]")


def test_a_database_of_schema_1_gains_the_table(openai_server, database_url, monkeypatch):
    from nbmemory.store.pg_schema import MIGRATIONS, SCHEMA_VERSION

    with psycopg.connect(database_url) as conn:
        conn.execute(
            "CREATE TABLE nbmemory_schema (version integer PRIMARY KEY, applied timestamptz)"
        )
        for statement in MIGRATIONS[1]:
            conn.execute(statement)
        conn.execute("INSERT INTO nbmemory_schema (version) VALUES (1)")
    monkeypatch.setenv("NBMEMORY_STORE", database_url)
    try:
        agent = seeded(openai_server)
        assert recall(agent.short_memory.docs, ASKED, semantic=agent.semantic_index())
    finally:
        database_at(database_url).close()
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT max(version) FROM nbmemory_schema").fetchone() == (
            SCHEMA_VERSION,
        )
        assert conn.execute("SELECT count(*) FROM nbmemory_embeddings").fetchone() == (4,)


@pytest.mark.files("the vectors' file")
def test_records_written_twice_by_racing_processes_are_read_once(openai_server):
    agent = seeded(openai_server)
    docs = agent.short_memory.docs
    recall(docs, ASKED, semantic=agent.semantic_index())
    [index] = (docs.folder / EMBEDDINGS_DIR).iterdir()
    header, _, records = index.read_bytes().partition(b"\n")
    index.write_bytes(header + b"\n" + records + records)
    fresh = embedder(openai_server).semantic_index()
    agent.short_memory.add("User", "My physician is Dr Okafor.")
    assert recall(docs, "Who is my doctor?", semantic=fresh)[0].text.endswith("Dr Okafor.")
    assert recall(docs, ASKED, semantic=fresh)[0].text == FACT
    for n, text in enumerate(FILLER):  # each keeps its own vector
        assert fresh.ranked(text, [text_key(text)], [text], 1) == [(pytest.approx(1.0), 0)], n


def test_import_leaves_the_vectors_out(openai_server, tmp_path, database, monkeypatch):
    from nbmemory import Workspace
    from nbmemory.store.layout import import_layout

    monkeypatch.delenv("NBMEMORY_STORE")
    source = Workspace(tmp_path / "source")
    agent = Agent(
        "Maya",
        persistent_memory=True,
        workspace=source,
        embedding_model="openai/fake-embed",
        embedding_options={"api_base": openai_server.url, "api_key": "k", "max_retries": 0},
    )
    agent.short_memory.add("User", FACT)
    recall(agent.short_memory.docs, ASKED, semantic=agent.semantic_index())
    assert (tmp_path / "source" / "agents" / "Maya" / EMBEDDINGS_DIR).is_dir()
    assert import_layout(tmp_path / "source", Workspace(tmp_path / "db", database)) == ["Maya"]
    assert database_at(database).documents("Maya") == ["settings.json"]


@pytest.mark.files("the vectors' file")
def test_without_fcntl_as_on_windows_the_vectors_file_is_locked_with_filelock(openai_server):
    """Windows has no ``fcntl``: the module still imports, and writers take a ``filelock``."""
    seeded(openai_server)
    code = (
        "import sys\n"
        "sys.modules['fcntl'] = None  # what Windows has: no such module\n"
        "from nbmemory import Agent\n"
        "from nbmemory.recall import embeddings\n"
        "from nbmemory.recall import recall\n"
        "assert embeddings.fcntl is None\n"
        "agent = Agent('Maya', persistent_memory=True, embedding_model='openai/fake-embed',\n"
        "    embedding_options={'api_base': sys.argv[1], 'api_key': 'k', 'max_retries': 0})\n"
        "found = recall(agent.short_memory.docs, sys.argv[2], semantic=agent.semantic_index())\n"
        "assert 'filelock' in sys.modules  # what locked the file it wrote\n"
        "print(found[0].text)\n"
    )
    assert run_python(code, openai_server.url, ASKED).stdout == FACT + "\n"
    folder = embedder(openai_server).short_memory.docs.folder / EMBEDDINGS_DIR
    assert [path.suffix for path in folder.iterdir() if path.suffix == ".f32"] == [".f32"]
