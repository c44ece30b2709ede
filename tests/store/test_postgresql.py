"""Agents on a real PostgreSQL server: the guarantees of the files, and what goes wrong.

Every test gets a fresh database on a private server started for the session
(``tests/pg_server.py``) and makes it the workspace's store through ``$NBMEMORY_STORE``.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from nbmemory import Agent, Conversation
from nbmemory.errors import (
    InvalidAgentNameError,
    MemoryWarning,
    StoreConfigError,
    StoreError,
    StorePermissionError,
    StoreSchemaError,
    StoreUnavailableError,
)
from nbmemory.memory.notes import Notes
from nbmemory.store import Workspace, memory_path, workspace_dir
from nbmemory.store.memory_format import parse
from nbmemory.store.pg_schema import SCHEMA_VERSION
from nbmemory.store.postgresql import PgStore
from nbmemory.store.workspace import check as check_store
from nbmemory.store.workspace import database_at
from nbmemory.views.read_model import ReadModel
from support import FIXTURES, REFUSED_STORES, ROOT, UNREACHABLE_STORES, leaks, start_writer


def stored(name: str) -> Any:
    """The documents of agent ``name`` in the environment's workspace."""
    return Workspace.from_env().agent(name)


def tags_stored(name: str = "Shared") -> Counter:
    """How often each message tag (its first line) is in the memory and the archives.

    Read under the agent's lock: a writer killed right after sending its COMMIT leaves the
    server to finish that transaction, and the lock waits for it, so the archives and the
    memory are read as one state (not the archives before a compaction, the memory after).
    """
    docs = stored(name)
    tags: Counter = Counter()
    with docs.locked():
        for path in [*docs.archives(), docs.path("MEMORY.md")]:
            parsed = parse(docs.read(path))
            assert parsed.problems == [], path
            for message in parsed.messages:
                if message["role"] == "User":
                    tags[message["content"].split("\n", 1)[0]] += 1
    return tags


def test_an_agent_on_the_database_resumes_compacts_and_searches(database: str, workspace: Path):
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    convo.add("User", "The contract number is ACME-42 <b>bold</b>")
    convo.add("Scout", {"noted": ["ACME-42"]})
    archive = convo.compact("Summary: a contract was discussed.")
    convo.add("User", "after the compaction")

    resumed = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    preload = resumed.conversation_history[-1]["content"]
    assert "Summary: a contract was discussed." in preload
    assert "after the compaction" in preload and "ACME-42" not in preload
    assert [m["content"] for m in resumed.archive_messages(archive)] == [
        "The contract number is ACME-42 <b>bold</b>",
        {"noted": ["ACME-42"]},
    ]
    hits = resumed.search_memory("acme-42", archives=True)
    assert [hit.source for hit in hits] == [archive.name, archive.name]
    assert not workspace.exists(), "nothing is written to the workspace folder"


def test_the_read_model_reads_the_database_as_it_reads_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str
):
    def build() -> dict:
        agent = Agent(agent_name="Scout", model_name="nbmemory/offline", persistent_memory=True)
        agent.notes.add("The budget is 40k EUR.")
        agent.run("Remember: the depot is in Lyon.")
        agent.short_memory.compact("The depot is in Lyon.")
        agent.run("What is the budget?")
        reader = ReadModel()
        info = reader.agent("Scout")
        return {
            "names": reader.names(),
            "messages": [
                (i.role, i.text) for i in reader.messages("Scout", newest_first=False).items
            ],
            "archives": [(a.messages, a.size) for a in reader.archives("Scout")],
            "search": [
                (i.source[:8], i.text) for i in reader.search("Scout", "lyon", archives=True).items
            ],
            "notes": reader.notes("Scout"),
            "compactions": [(c.messages, c.summary) for c in reader.compactions("Scout")],
            "tokens": info.usage.parts,
            "count": info.messages,
        }

    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "files"))
    monkeypatch.delenv("NBMEMORY_STORE", raising=False)
    on_files = build()
    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "db"))
    monkeypatch.setenv("NBMEMORY_STORE", database_url)
    try:
        on_database = build()
    finally:
        database_at(database_url).close()
    assert on_database == on_files
    assert on_files["archives"] and on_files["search"] and on_files["notes"]
    assert not (tmp_path / "db").exists()


def test_schema_is_made_on_first_use_and_versioned(database: str):
    Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", "hi")
    with psycopg.connect(database) as conn:
        versions = conn.execute("SELECT version FROM nbmemory_schema").fetchall()
        assert versions == [(n,) for n in range(1, SCHEMA_VERSION + 1)]
        conn.execute("INSERT INTO nbmemory_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreSchemaError, match="upgrade nbmemory"):
        PgStore(database).agents()


def test_a_reader_that_stops_early_leaves_the_connections_to_the_others(database: str):
    """Rows are streamed one agent at a time; a consumer may stop after the first. The query
    still running is cancelled: the pool is not closed for it, and the next reader is served
    at once. (Its connection is usually kept; on a loaded machine the pool sometimes replaces
    it with a new one, which costs a connect and loses nothing.)"""
    db = PgStore(database)
    for name in ("a", "b", "c"):
        db.append(name, b"# header\n", f"### {name}\n".encode())
    pool = db._pool
    rows = db.memories_since(dict.fromkeys(("a", "b", "c")))
    assert next(rows)[0] == "a"
    rows.close()
    assert db._pool is pool and not pool.closed
    assert [name for name, *_ in db.memories_since(dict.fromkeys(("a", "b")))] == ["a", "b"]


def test_a_memory_streamed_in_slices_is_the_memory_and_a_reader_may_stop_early(
    database: str, monkeypatch: pytest.MonkeyPatch
):
    """``memory_slices`` gives the memory's bytes in order, none longer than a slice, whatever
    its rows hold; since a stamp, only what was appended; a reader that stops early leaves its
    connection to the others."""
    from nbmemory.store import postgresql

    monkeypatch.setattr(postgresql, "SLICE", 10)
    db = PgStore(database)
    for i in range(5):
        db.append("a", b"# header\n", f"### {i} \u2014 t\n\n{'x' * 7 * i}\n".encode())
    with db.memory_slices("a", None) as (stamp, appended, slices):
        taken = list(slices)
    assert b"".join(taken) == db.memory("a") and max(map(len, taken)) == 10
    assert stamp == db.stamp("a") and not appended
    db.append("a", b"# header\n", "### 5 \u2014 t\n\nlast\n".encode())
    with db.memory_slices("a", stamp) as (now, appended, slices):
        assert appended and now == db.stamp("a")
        assert b"".join(slices) == db.memory_since("a", stamp)[2] != b""
    with db.memory_slices("a", None) as (_, _, slices):
        next(slices)  # and no more
    with db.memory_slices("nobody", None) as (stamp, appended, slices):
        assert (stamp, appended, list(slices)) == (None, False, [])
    assert db.memory("a").endswith(b"last\n")


def test_agent_names_are_checked_before_anything_is_written(database: str):
    db = database_at(database)
    for bad in ["../escape", "a/b", "", "x\x00y"]:
        with pytest.raises(InvalidAgentNameError):
            db.append(bad, b"header\n", b"block")
    assert db.agents() == []


def test_eight_processes_append_with_compactions_alongside_lose_and_repeat_nothing(
    database: str,
):
    start_at = time.time() + 3
    writers = [start_writer(f"p{n}", 1000, big=2000, start_at=start_at) for n in range(7)]
    writers.append(start_writer("c", 1000, compact_every=25, big=2000, start_at=start_at))
    for writer in writers:
        writer.communicate(timeout=600)
        assert writer.returncode == 0
    tags = tags_stored()
    expected = {f"p{n}-{i}" for n in range(7) for i in range(1000)} | {
        f"c-{i}" for i in range(1000)
    }
    assert set(tags) == expected  # 0 lost
    assert set(tags.values()) == {1}  # 0 duplicated
    assert len(stored("Shared").archives()) == 40
    memory = parse(stored("Shared").read("MEMORY.md")).messages
    for n in range(7):  # each writer's messages in its own order
        mine = [m["content"].split("\n", 1)[0] for m in memory if m["content"].startswith(f"p{n}-")]
        assert mine == sorted(mine, key=lambda tag: int(tag.split("-")[1]))


COMPACTION_STEPS = 13
"""Statements and commits of a writer's first compaction (see ``support.start_writer``): the
compaction's transaction (six statements, its commit), then its record's."""


def test_writers_killed_mid_append_and_mid_compaction_lose_nothing_acknowledged(database: str):
    """Every other writer is killed after a chosen statement or commit of its first compaction
    (each of them in turn), the others at a random moment of their appends."""
    rng = random.Random(20261203)
    acked: set[str] = set()
    for kills in range(1, 51):
        step = (kills // 2) % COMPACTION_STEPS + 1 if kills % 2 else 0
        writer = start_writer(
            f"k{kills}", 10_000, rng.choice([3, 10, 30]), big=50_000, pause_at=step
        )
        deadline = time.monotonic() + rng.uniform(0.05, 0.5)
        paused = ""
        for line in writer.stdout:
            if line.startswith("ack "):
                acked.add(line.split()[1])
            if line.startswith("paused after "):
                paused = line.split()[-1]
            if paused if step else time.monotonic() > deadline:
                break
        assert not step or paused, f"kill {kills}: the writer did not stop at step {step}"
        writer.send_signal(signal.SIGKILL)
        rest, _ = writer.communicate(timeout=60)
        assert writer.returncode == -signal.SIGKILL, f"kill {kills}: it was not running"
        acked.update(line.split()[1] for line in rest.splitlines() if line.startswith("ack "))

        tags = tags_stored()
        missing = acked - set(tags)
        assert not missing, f"kill {kills}: lost {sorted(missing)[:5]}"
        assert [tag for tag, n in tags.items() if n > 1] == [], f"kill {kills}: twice"
    assert len(acked) > 300


def test_a_wrong_url_or_a_refused_connection_says_what_to_fix(monkeypatch: pytest.MonkeyPatch):
    assert PgStore("postgresql://team:secret@db.example:5433/memory").shown == (
        "postgresql://team@db.example:5433/memory"  # what messages and views show
    )
    with pytest.raises(StoreConfigError, match="not a PostgreSQL URL"):
        Workspace("ws", "mysql://localhost/x")
    with pytest.raises(StoreConfigError, match="not a usable URL"):
        Workspace("ws", "postgresql://localhost/db?nonsense_option=1")

    monkeypatch.setenv("NBMEMORY_STORE", "postgresql://nobody@127.0.0.1:9/nothing")
    convo = None
    with pytest.raises(StoreUnavailableError, match="server is running") as failure:
        convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    assert "127.0.0.1:9" in str(failure.value) and convo is None


def everything_shown(error: BaseException) -> str:
    """All an exception can show: its message, its repr, its traceback and what it chains."""
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


@pytest.mark.parametrize(("setting", "password", "named"), REFUSED_STORES)
def test_a_refused_store_is_named_without_its_password(setting, password, named):
    for attempt in (PgStore, check_store, lambda url: Workspace("ws", url)):
        with pytest.raises(StoreConfigError) as failure:
            attempt(setting)
        assert named in str(failure.value), attempt
        assert leaks(password, everything_shown(failure.value)) == [], attempt


@pytest.mark.parametrize(("url", "password", "named"), UNREACHABLE_STORES)
def test_an_unreachable_store_is_named_without_its_password(
    url, password, named, caplog: pytest.LogCaptureFixture
):
    db = PgStore(url)
    assert leaks(password, f"{db!r} {db.shown}") == []
    with caplog.at_level(logging.DEBUG), pytest.raises(StoreUnavailableError) as failure:
        db.agents()
    assert named in str(failure.value) and "could not connect" in str(failure.value)
    assert failure.value.__context__ is None  # psycopg's exception, which may quote the URL
    assert leaks(password, everything_shown(failure.value) + caplog.text) == []


def test_a_password_with_reserved_characters_works_percent_encoded(
    database_url: str, caplog: pytest.LogCaptureFixture
):
    """The test server trusts every local connection, so any password gets in: what is
    checked is what is shown, and that the encoded URL is read as the user means it."""
    raw = "Qz@7K:x/9"
    with pytest.raises(StoreConfigError, match="percent-encoded") as failure:
        PgStore(database_url.replace("nbmemory@", f"nbmemory:{raw}@"))
    assert leaks(raw, everything_shown(failure.value)) == []

    encoded = database_url.replace("nbmemory@", "nbmemory:Qz%407K%3Ax%2F9@")
    with caplog.at_level(logging.DEBUG):
        db = PgStore(encoded)
        try:
            db.ensure("Scout", b"header\n")
            assert db.agents() == ["Scout"]
            assert db.shown == PgStore(database_url).shown
            missing = PgStore(encoded.rsplit("/", 1)[0] + "/no_such_database")
            with pytest.raises(StoreUnavailableError, match="no_such_database") as refused:
                missing.agents()
        finally:
            db.close()
    assert leaks(raw, everything_shown(refused.value) + caplog.text + repr(db)) == []


def test_a_dropped_connection_loses_nothing_acknowledged(database: str):
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    convo.add("User", "before the drop")
    with psycopg.connect(database, autocommit=True) as admin:
        # Each terminated server process has gone when this returns (its last message sent),
        # as after a restart; a connection dropped in the middle of a statement is the case of
        # test_a_connection_dropped_inside_a_compaction_or_an_append_leaves_all_as_it_was.
        admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    convo.add("User", "after the drop")  # the pool checks its connections and opens new ones
    contents = [m["content"] for m in parse(stored("Scout").read("MEMORY.md")).messages]
    assert contents == ["before the drop", "after the drop"]


def test_a_read_only_role_is_refused_before_anything_is_written(database: str):
    Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", "kept")
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute("CREATE ROLE reader LOGIN")
        admin.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    reader = Workspace(workspace_dir(), database.replace("nbmemory@", "reader@"))
    try:
        convo = Conversation(
            name="Scout", memory_md_path=reader.memory_path("Scout"), workspace=reader
        )
        assert convo.memory_messages()[0]["content"] == "kept"  # it may read
        with pytest.raises(StorePermissionError, match="Use a role that may"):
            convo.add("User", "refused")
        with pytest.raises(StorePermissionError):
            convo.compact("a summary")
        with pytest.raises(StorePermissionError):
            Notes(reader.agent("Scout")).add("a note")
        assert ReadModel(reader).agent("Scout").messages == 1
    finally:
        reader.database.close()
    assert [m["content"] for m in parse(stored("Scout").read("MEMORY.md")).messages] == ["kept"]
    assert stored("Scout").archives() == []


def test_interrupting_a_write_leaves_the_memory_as_it_was(database: str):
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    convo.add("User", "first")
    code = (
        "import os, signal, threading\n"
        # Ctrl-C raises KeyboardInterrupt here, as in a kernel, even when this suite runs in a
        # shell's background, whose jobs start with SIGINT ignored (and pass that on).
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from nbmemory import Conversation\n"
        "from nbmemory.store import memory_path\n"
        "c = Conversation(name='Scout', memory_md_path=memory_path('Scout'))\n"
        "try:\n"  # the interrupt lands inside the loop, which never ends without it
        "    threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "    while True:\n"
        "        c.add('User', 'x' * 100_000)\n"
        "except KeyboardInterrupt:\n"
        "    print(len(c.conversation_history) - 1)\n"  # all but the preload
    )
    from support import run_python

    added = int(run_python(code).stdout)
    messages = parse(stored("Scout").read("MEMORY.md")).messages
    assert [m["content"] for m in messages[:1]] == ["first"]
    assert len(messages) - 1 in (added, added + 1)  # the interrupted one: all of it or none
    assert all(m["content"] == "x" * 100_000 for m in messages[1:])


def test_an_interrupted_append_is_never_mistaken_for_an_earlier_one_with_the_same_bytes(
    database: str,
):
    """The same text said twice in one second makes the same block: after an interrupt, only
    a row written since this process's last append can be the interrupted one."""
    from nbmemory.store.memory_format import block_bytes

    memory = Conversation(name="Echo", memory_md_path=memory_path("Echo"))._memory
    block = block_bytes("User", "same again", "2026-04-20T18:35:04")
    memory.append(block)
    # Interrupted before it was sent: the row already there is the first one, not this one.
    assert not memory.holds(block, memory.appends)
    # Interrupted once the server had committed it (its answer lost): the new row tells.
    PgStore(database).append("Echo", b"", block)
    assert memory.holds(block, memory.appends)


def test_an_append_after_unfinished_text_writes_what_the_file_store_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database: str
):
    """Text a crashed writer left unfinished stays apart from the next message, byte for byte
    as on files (the database gets such text by importing a folder); a block cut short, which
    the file store moves to quarantine/, stays there as unparsed text."""
    from nbmemory.store.layout import import_layout

    header = (FIXTURES / "spec_memory.md").read_bytes()
    tails = [b"### User \xe2\x80\x94 2026-04-20T18:40:00\n\nhalf a mess", b"\n"]
    for n, tail in enumerate(tails):
        name = f"Crashed{n}"
        source = tmp_path / "source" / "agents" / name
        source.mkdir(parents=True)
        (source / "MEMORY.md").write_bytes(header + tail)
        files = tmp_path / "files" / "agents" / name
        files.mkdir(parents=True)
        (files / "MEMORY.md").write_bytes(header + tail)
    import_layout(tmp_path / "source", Workspace.from_env())
    for n in range(2):
        name = f"Crashed{n}"
        with pytest.warns(MemoryWarning) if n == 0 else contextlib.nullcontext():
            convo = Conversation(name=name, memory_md_path=memory_path(name))
        convo.add("User", "after the crash")
        monkeypatch.delenv("NBMEMORY_STORE")
        on_files = tmp_path / "files" / "agents" / name / "MEMORY.md"
        with pytest.warns(MemoryWarning) if n == 0 else contextlib.nullcontext():
            Conversation(name=name, memory_md_path=on_files).add("User", "after the crash")
        monkeypatch.setenv("NBMEMORY_STORE", database)
        assert parse(on_files.read_bytes()).messages[-1]["content"] == "after the crash"
        if n == 1:
            assert stored(name).read("MEMORY.md") == on_files.read_bytes()
            continue
        quarantined = on_files.parent / "quarantine" / "MEMORY.cut-short.md"
        assert quarantined.read_bytes() == tails[0]
        in_database = parse(stored(name).read("MEMORY.md")).messages
        assert [m for m in in_database if m["role"] != "unparsed"] == (
            parse(on_files.read_bytes()).messages
        )


def test_a_connection_dropped_inside_a_compaction_or_an_append_leaves_all_as_it_was(
    database: str,
):
    """The compaction (or append) waits on the agent's lock, held by another session; its
    connection is killed while it waits: it raises, and memory and archives are untouched."""
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    convo.add("User", "kept whatever happens")
    before = stored("Scout").read("MEMORY.md")
    for attempt in (lambda: convo.compact("a summary"), lambda: convo.add("User", "lost")):
        outcome: list[BaseException | None] = []

        def run(attempt=attempt, outcome=outcome) -> None:
            try:
                attempt()
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        with psycopg.connect(database) as holder:
            holder.execute("SELECT 1 FROM nbmemory_agents WHERE name = 'Scout' FOR UPDATE")
            worker = threading.Thread(target=run)
            worker.start()
            with psycopg.connect(database, autocommit=True) as admin:
                deadline = time.monotonic() + 120  # a bound for a broken store, not a measure
                while not (
                    waiting := admin.execute(
                        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    ).fetchone()
                ):
                    assert time.monotonic() < deadline, "the change never waited on the lock"
                    time.sleep(0.05)
                admin.execute("SELECT pg_terminate_backend(%s)", waiting)
            worker.join(timeout=60)
        assert isinstance(outcome[0], StoreUnavailableError), outcome
        assert "retry once it is back" in str(outcome[0])
        assert stored("Scout").read("MEMORY.md") == before
        assert stored("Scout").archives() == []
    convo.add("User", "the next change works")  # the pool replaced the dead connection
    assert len(parse(stored("Scout").read("MEMORY.md")).messages) == 2


def test_a_server_that_stops_and_comes_back(monkeypatch: pytest.MonkeyPatch):
    """A server stopped mid-run: a clear error and nothing acknowledged lost; back, it works."""
    from pg_server import PostgresServer

    with PostgresServer() as server:
        monkeypatch.setenv("NBMEMORY_STORE", server.url)
        try:
            convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
            convo.add("User", "before the outage")
            server.stop()
            with pytest.raises(StoreUnavailableError, match="server is running"):
                convo.add("User", "during the outage")
            with pytest.raises(StoreUnavailableError):
                ReadModel().agent("Scout")
            server.start()
            convo.add("User", "after the outage")
            contents = [m["content"] for m in parse(stored("Scout").read("MEMORY.md")).messages]
            assert contents == ["before the outage", "after the outage"]
        finally:
            database_at(server.url).close()


def test_a_memory_path_outside_an_agent_folder_stays_a_file(database: str, tmp_path: Path):
    path = tmp_path / "notes" / "MEMORY.md"
    with pytest.warns(MemoryWarning, match="kept as a file, not in the database"):
        convo = Conversation(name="Loose", memory_md_path=path)
    convo.add("User", "on disk")
    assert parse(path.read_bytes()).messages[0]["content"] == "on disk"
    assert Workspace.from_env().agents() == []


def appended_rows(database: str, name: str) -> int:
    with psycopg.connect(database) as conn:
        query = "SELECT count(*) FROM nbmemory_appends WHERE agent = %s"
        return conn.execute(query, (name,)).fetchone()[0]


def test_appends_are_rows_of_their_own_read_back_as_one_document(database: str):
    docs = stored("Scout")
    stamps = [(docs.stamp("PROVENANCE.jsonl"), docs.folder_stamp())]
    for n in range(3):
        docs.append("PROVENANCE.jsonl", f"line {n}\n".encode())
        stamps.append((docs.stamp("PROVENANCE.jsonl"), docs.folder_stamp()))
    for before, after in itertools.pairwise(stamps):  # each append changes both
        assert before[0] != after[0] and before[1] != after[1]
    assert docs.read("PROVENANCE.jsonl") == b"line 0\nline 1\nline 2\n"
    assert docs.stamp("PROVENANCE.jsonl")[1] == len(b"line 0\nline 1\nline 2\n")
    assert appended_rows(database, "Scout") == 3
    assert docs.documents() == ["PROVENANCE.jsonl"]
    with docs.db.snapshot():  # a listing reads the same stamps, and the same document
        assert docs.stamp("PROVENANCE.jsonl") == docs.db.document_stamp("Scout", "PROVENANCE.jsonl")
        assert docs.read("PROVENANCE.jsonl") == b"line 0\nline 1\nline 2\n"

    docs.write("PROVENANCE.jsonl", b"whole\n")  # a write replaces the appends too
    assert appended_rows(database, "Scout") == 0
    docs.append("PROVENANCE.jsonl", b"after\n")
    assert docs.read("PROVENANCE.jsonl") == b"whole\nafter\n"
    docs.remove("PROVENANCE.jsonl")
    assert appended_rows(database, "Scout") == 0
    with pytest.raises(FileNotFoundError):
        docs.read("PROVENANCE.jsonl")


def test_the_digest_of_the_memorys_first_bytes_is_computed_by_the_server(database: str):
    # How recall checks the index it kept of a memory's first messages without reading them.
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    for n in range(3):
        convo.add("User", f"message {n}")
    db = stored("Scout").db
    memory = db.memory("Scout")
    for size in (0, 10, len(memory) // 2, len(memory)):
        assert db.memory_digest("Scout", size) == hashlib.sha256(memory[:size]).hexdigest()
    assert db.memory_digest("Scout", len(memory) + 1) is None
    assert db.memory_digest("Nobody", 1) is None


def test_an_appended_small_document_is_read_whole_in_a_snapshot(database: str):
    docs = stored("Scout")
    docs.write("NOTES.md", b"- one\n")
    docs.append("NOTES.md", b"- two\n")
    with docs.db.snapshot():
        assert docs.read("NOTES.md") == b"- one\n- two\n"


def test_a_failing_append_inside_a_locked_block_undoes_only_itself(database: str):
    docs = stored("Scout")
    docs.append("PROVENANCE.jsonl", b"before\n")
    with psycopg.connect(database) as conn:  # a refusal from the server itself
        conn.execute("ALTER TABLE nbmemory_appends ADD CHECK (data <> 'refused'::bytea)")
    with docs.locked():
        docs.append("PROVENANCE.jsonl", b"first\n")
        with pytest.raises(StoreError, match="check constraint"):
            docs.append("PROVENANCE.jsonl", b"refused")
        docs.append("PROVENANCE.jsonl", b"second\n")
    assert docs.read("PROVENANCE.jsonl") == b"before\nfirst\nsecond\n"
    assert docs.stamp("PROVENANCE.jsonl")[1] == len(b"before\nfirst\nsecond\n")


APPENDER = """
import sys, time
from nbmemory.store import Workspace
tag, count, tags = sys.argv[1], int(sys.argv[2]), sys.argv[3]
docs = Workspace.from_env().agent("Shared")
for i in range(count):
    docs.append("PROVENANCE.jsonl", f"{tag}-{i}\\n".encode())
    while i == count // 2 - 1:  # halfway, it waits until every other appender is halfway too
        lines = docs.read("PROVENANCE.jsonl").decode().splitlines()
        if all(f"{other}-{i}" in lines for other in tags):
            break
        time.sleep(0.01)
"""


def test_processes_appending_at_once_lose_nothing(database: str):
    """Three processes, each waiting halfway until the two others are halfway too: whatever
    order the machine runs them in, each appends while the others are running."""
    appenders = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, tag, "300", "abc"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for tag in ("a", "b", "c")
    ]
    for appender in appenders:
        assert appender.wait(timeout=300) == 0
    lines = stored("Shared").read("PROVENANCE.jsonl").decode().splitlines()
    assert len(lines) == 900
    for tag in ("a", "b", "c"):  # all of each, in its own order
        assert [line for line in lines if line.startswith(f"{tag}-")] == [
            f"{tag}-{i}" for i in range(300)
        ]
    assert sorted(line[0] for line in lines[:450]) == sorted("abc" * 150), "they overlapped"


def test_a_database_of_schema_3_keeps_its_documents_and_appends_as_rows(database: str):
    from nbmemory.store.pg_schema import MIGRATIONS

    with psycopg.connect(database) as conn:
        conn.execute(
            "CREATE TABLE nbmemory_schema (version integer PRIMARY KEY, applied timestamptz)"
        )
        for number in (1, 2, 3):
            for statement in MIGRATIONS[number]:
                conn.execute(statement)
            conn.execute("INSERT INTO nbmemory_schema (version) VALUES (%s)", (number,))
        conn.execute("INSERT INTO nbmemory_agents (name, version) VALUES ('Scout', 1)")
        conn.execute(
            "INSERT INTO nbmemory_documents (agent, name, data, version) "
            "VALUES ('Scout', 'PROVENANCE.jsonl', 'old\n', 1)"
        )
    docs = stored("Scout")
    assert docs.stamp("PROVENANCE.jsonl") == (1, 4)
    docs.append("PROVENANCE.jsonl", b"new\n")
    assert docs.read("PROVENANCE.jsonl") == b"old\nnew\n"
    assert appended_rows(database, "Scout") == 1
    with psycopg.connect(database) as conn:
        versions = conn.execute("SELECT version FROM nbmemory_schema ORDER BY version").fetchall()
    assert versions == [(n,) for n in range(1, SCHEMA_VERSION + 1)]


def test_an_export_writes_an_appended_document_whole(database: str, tmp_path: Path):
    from nbmemory.store.layout import export_layout

    Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", "hi")
    docs = stored("Scout")
    docs.write("PROVENANCE.jsonl", b"written\n")
    docs.append("PROVENANCE.jsonl", b"appended\n")
    assert export_layout(tmp_path, Workspace.from_env()) == ["Scout"]
    exported = tmp_path / "agents" / "Scout" / "PROVENANCE.jsonl"
    assert exported.read_bytes() == b"written\nappended\n"
    assert export_layout(tmp_path, Workspace.from_env()) == ["Scout"]  # the same files: done
