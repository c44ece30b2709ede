"""The tables of a PostgreSQL store, by schema version, and how a database is brought to the
version this code knows.

``nbmemory_schema`` holds the version applied. The tables are created on first use; a later
version adds its statements to ``MIGRATIONS`` under the next number, and the first process of
the new version to connect applies the missing ones in one transaction, under an advisory lock.
A database of a newer version than this code is refused (``StoreSchemaError``).
"""

from __future__ import annotations

from typing import Any

from nbmemory.errors import StoreSchemaError

SCHEMA_VERSION = 4
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE nbmemory_agents (
            name text PRIMARY KEY,
            version bigint NOT NULL DEFAULT 0,
            epoch bigint NOT NULL DEFAULT 0,
            created timestamptz NOT NULL DEFAULT now()
        )""",
        """CREATE TABLE nbmemory_memory (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            seq bigint NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (agent, seq)
        )""",
        """CREATE TABLE nbmemory_documents (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            name text NOT NULL,
            data bytea NOT NULL,
            version bigint NOT NULL,
            PRIMARY KEY (agent, name)
        )""",
        # An append in one round trip: lock and bump the agent, then read the memory's last
        # bytes (each statement of a function sees what committed before it) to start the block
        # on a line of its own, as memory_file does after text a crash left unfinished.
        """CREATE FUNCTION nbmemory_append(agent_name text, header bytea, block bytea)
        RETURNS bigint LANGUAGE plpgsql AS $$
        DECLARE
            v bigint;
            tail bytea;
        BEGIN
            UPDATE nbmemory_agents SET version = version + 1 WHERE name = agent_name
                RETURNING version INTO v;
            IF v IS NULL THEN
                INSERT INTO nbmemory_agents (name, version) VALUES (agent_name, 1)
                    ON CONFLICT (name) DO UPDATE SET version = nbmemory_agents.version + 1
                    RETURNING version INTO v;
            END IF;
            SELECT substring(data FROM greatest(length(data) - 1, 1)) INTO tail
                FROM nbmemory_memory WHERE agent = agent_name ORDER BY seq DESC LIMIT 1;
            INSERT INTO nbmemory_memory (agent, seq, data) VALUES (agent_name, v, CASE
                WHEN tail IS NULL THEN header
                WHEN length(tail) = 0 OR tail = '\\x0a0a'::bytea THEN ''::bytea
                WHEN get_byte(tail, length(tail) - 1) = 10 THEN '\\x0a'::bytea
                ELSE '\\x0a0a'::bytea
            END || block);
            RETURN v;
        END $$""",
    ],
    # Recall's vectors of an agent's messages, by embedding model and by the hash of what was
    # embedded: an index that recall rebuilds, so no version is bumped when it changes.
    2: [
        """CREATE TABLE nbmemory_embeddings (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            model text NOT NULL,
            hash bytea NOT NULL,
            vector bytea NOT NULL,
            PRIMARY KEY (agent, model, hash)
        )""",
    ],
    # Recall's index of each archive (``recall.kept_indexes``): rebuilt when missing or stale, so no
    # version is bumped either. Stored uncompressed, so that a part of it is read alone: a query
    # reads its ``head`` bytes (the postings), then only the texts of its passages.
    3: [
        """CREATE TABLE nbmemory_recall_index (
            agent text NOT NULL REFERENCES nbmemory_agents (name) ON DELETE CASCADE,
            source text NOT NULL,
            head integer NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (agent, source)
        )""",
        "ALTER TABLE nbmemory_recall_index ALTER COLUMN data SET STORAGE EXTERNAL",
    ],
    # Appends to a document as rows of their own (``seq`` is the agent's version they made),
    # read after its ``data``; ``appended`` counts their bytes, for the document's size. A
    # write of the whole document deletes them, and they go with the document.
    4: [
        "ALTER TABLE nbmemory_documents ADD COLUMN appended bigint NOT NULL DEFAULT 0",
        """CREATE TABLE nbmemory_appends (
            agent text NOT NULL,
            name text NOT NULL,
            seq bigint NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (agent, name, seq),
            FOREIGN KEY (agent, name) REFERENCES nbmemory_documents (agent, name)
                ON DELETE CASCADE ON UPDATE CASCADE
        )""",
    ],
}
_SCHEMA_LOCK = 0x6E626D656D  # the advisory lock held while the schema is created or migrated


def migrate(conn: Any, shown: str) -> None:
    """Create the tables, or bring them to ``SCHEMA_VERSION``, under an advisory lock."""
    with conn.transaction():
        exists = conn.execute("SELECT to_regclass('nbmemory_schema')").fetchone()[0]
        version = 0
        if exists:
            row = conn.execute("SELECT max(version) FROM nbmemory_schema").fetchone()
            version = row[0] or 0
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{shown} holds nbmemory tables of schema version {version}, newer than this "
                f"nbmemory knows ({SCHEMA_VERSION}): upgrade nbmemory"
            )
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS nbmemory_schema "
            "(version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
        )
        version = conn.execute("SELECT coalesce(max(version), 0) FROM nbmemory_schema").fetchone()[
            0
        ]
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[number]:
                conn.execute(statement)
            conn.execute("INSERT INTO nbmemory_schema (version) VALUES (%s)", (number,))
