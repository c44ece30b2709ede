"""Helpers the tests share: paths, a knowledge-base tool, a way to run a fresh interpreter."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent

KNOWLEDGE = {
    "storage": "Grid-scale batteries now cover 4-hour peaks at $95/kWh.",
    "solar": "Utility solar LCOE fell to $29/MWh in 2025.",
}


def search_knowledge_base(query: str) -> str:
    """Search the internal knowledge base and return matching passages.

    Args:
        query: Words to look for in the knowledge base.

    Returns:
        Matching passages, or a message saying nothing matched.
    """
    hits = [text for key, text in KNOWLEDGE.items() if key in query.lower()]
    return "\n".join(hits) if hits else "No matching documents."


def told(agent, texts):
    """``agent``, each of ``texts`` added to its memory as the user's, in order."""
    for text in texts:
        agent.short_memory.add("User", text)
    return agent


def agent_docs(name: str):
    """The documents of agent ``name`` in the test's workspace (its folder on its store)."""
    from nbmemory import Workspace

    return Workspace.from_env().agent(name)


def stored(name: str, doc: str | os.PathLike[str] = "MEMORY.md") -> bytes:
    """Document ``doc`` (a name, or a path in the agent's folder) of agent ``name`` as the
    test's store holds it, files or database: for tests of what a memory says, not of files."""
    return agent_docs(name).read(doc)


def stored_messages(name: str, doc: str | os.PathLike[str] = "MEMORY.md") -> list[dict]:
    """The messages of agent ``name``'s memory (or of an archive) as its store holds them."""
    from nbmemory.store.memory_format import parse

    return parse(stored(name, doc)).messages


def append_raw(name: str, data: bytes) -> None:
    """Append ``data`` to agent ``name``'s memory as it is, as a crash or another program
    might leave it: to a file's end, or as the database's next chunk of the memory."""
    docs = agent_docs(name)
    if not docs.is_database:
        with open(docs.path("MEMORY.md"), "ab") as f:
            f.write(data)
        return
    with docs.db.transaction(f"damage {name}") as conn:
        (version,) = conn.execute(
            "UPDATE nbmemory_agents SET version = version + 1 WHERE name = %s RETURNING version",
            (name,),
        ).fetchone()
        conn.execute(
            "INSERT INTO nbmemory_memory (agent, seq, data) VALUES (%s, %s, %s)",
            (name, version, data),
        )


def text_lengths(monkeypatch, module, name: str) -> list[int]:
    """Wraps ``module.name``, a function of a text, to record the length of each text it is
    given: how a test sees what is looked through, and how often."""
    lengths: list[int] = []
    original = getattr(module, name)

    def spy(text: str, *args, **kwargs):
        lengths.append(len(text))
        return original(text, *args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return lengths


def run_python(code: str, *args: str, cwd: Path | None = None, check: bool = True, **popen):
    """Run ``code`` in a new Python process that imports this checkout of nbmemory."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **popen.pop("env", {})}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        check=check,
        capture_output=True,
        text=True,
        timeout=120,
        **popen,
    )


def http_agent(server, name: str = "Worker", **options):
    """A persistent agent whose model is the loopback OpenAI server ``server``."""
    from nbmemory import Agent

    options.setdefault("max_retries", 0)
    return Agent(
        agent_name=name,
        model_name="openai/test-model",
        api_base=server.url,
        api_key="test-key",
        persistent_memory=True,
        **options,
    )


NOT_UTF8_STORES = [
    ("postgresql://u:Qz7%E9Kx9@db.example/agents", "Qz7%E9Kx9", "u:***@db.example/agents"),
    ("postgresql://u@db.example/agents?password=Qz7%C3Kx9", "Qz7%C3Kx9", "db.example/agents"),
    ("postgresql://u:Qz7Kx9@db.example/ag%FFents", "Qz7Kx9", "u:***@db.example/ag%FFents"),
]
"""Store URLs whose percent escapes are valid but decode to bytes that are not UTF-8."""

# Store settings refused before anything connects: (setting, its password, what the message must
# still show for the user to fix it). The first five are the issue's; the others were not in it.
REFUSED_STORES = [
    ("postgresql://u:Qz7Kx9@[::1/agents", "Qz7Kx9", "[::1/agents"),  # a broken IPv6 host
    ("postgresq://u:Qz7Kx9@db.example/agents", "Qz7Kx9", "'postgresq://u:***@db.example/agents'"),
    ("postgresql://u:Qz7%zzKx9@db.example/agents", "Qz7%zzKx9", "u:***@db.example/agents"),
    ("postgresql://u:Qz@7K:x/9@db.example/agents", "Qz@7K:x/9", "db.example/agents"),
    ("postgresql://u@db.example/agents?password=Qz7Kx9&nonsense=1", "Qz7Kx9", "db.example/agents"),
    ("host=db.example password=Qz7Kx9 dbname=agents", "Qz7Kx9", "the store setting"),
    (" \tpostgresq://u:Qz7Kx9@db.example/agents \n", "Qz7Kx9", "db.example/agents"),
    ("postgresql://:Qz7Kx9@db.example:notaport/agents?x=%", "Qz7Kx9", "db.example:notaport"),
    ("postgres://u:Qz7Kx9@db.example/agents?application_name=a@b", "Qz7Kx9", "percent-encoded"),
    ("postgresql://u:Qz7\nKx9@db.example/agents", "Qz7\nKx9", "db.example/agents"),
    ("postgresql://u@db.example/agents?sslpassword=Qz7Kx9&x=%zz", "Qz7Kx9", "db.example/agents"),
    ("Qz7Kx9", "Qz7Kx9", "the store setting"),  # a password pasted into the wrong setting
    ("postgresql://u:Qz7\udcffKx9@db.example/agents", "Qz7\udcffKx9", "db.example/agents"),
    ("postgresql://u:Qz7%41Kx9@db.example/agents?nonsense=1", "Qz7%41Kx9", "db.example/agents"),
    ("postgresql://u:Qz7'Kx9\"@db.example/agents?nonsense=1", "Qz7'Kx9\"", "db.example/agents"),
    *NOT_UTF8_STORES,
]
# Store URLs that are accepted but cannot be connected to, in the same form.
UNREACHABLE_STORES = [
    ("postgresql://u:Qz7Kx9@127.0.0.1:9/agents", "Qz7Kx9", "127.0.0.1:9/agents"),
    (
        "postgresql://u:Qz7%40Kx9@127.0.0.1:9/agents?sslmode=nonsense",
        "Qz7%40Kx9",
        "127.0.0.1:9/agents",
    ),
    (
        "postgresql://u@127.0.0.1:notaport/agents?password=Qz7Kx9",
        "Qz7Kx9",
        "127.0.0.1:notaport/agents",
    ),
]


def leaks(password: str, text: str) -> list[str]:
    """The pieces of ``password`` that ``text`` shows: each run of three of its characters, as
    written and percent-decoded (the passwords of the cases above have no common runs)."""
    pieces = set()
    for form in {password, unquote(password)}:
        pieces.update(form[i : i + 3] for i in range(len(form) - 2))
    return sorted(piece for piece in pieces if piece in text)


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and folder under ``root`` with its size, mtime and inode: equal snapshots
    mean nothing was created, changed or replaced."""
    return {
        str(path.relative_to(root)): (
            path.lstat().st_size,
            path.lstat().st_mtime_ns,
            path.lstat().st_ino,
        )
        for path in sorted(root.rglob("*"))
    }


def close_litellm_clients() -> None:
    """Close the HTTP clients litellm cached in this process and forget them.

    litellm keeps one client per endpoint for the life of the process, each with its kept-alive
    connections; a test's endpoint (a loopback server) is gone once the test ends. Its async
    clients, made at import and never connected by a synchronous call, are left alone.
    """
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return
    cache = litellm.in_memory_llm_clients_cache
    for key, client in list(cache.cache_dict.items()):
        close = getattr(client, "close", None)
        if callable(close) and not inspect.iscoroutinefunction(close):
            cache.delete_cache(key)
            close()


WRITER = """
import sys, time
from nbmemory import Conversation
from nbmemory.store import memory_path
tag, count, compact_every, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
pause_at = int(sys.argv[6])
meet = dict(pair.split(":") for pair in sys.argv[7].split(",") if pair)

CHANGES = {"open", "write", "fsync", "close", "replace", "rename", "mkdir", "unlink", "ftruncate",
           "flock", "fchmod"}

STATEMENTS = {("psycopg.connection", "execute"), ("psycopg.transaction", "__exit__")}

def pause(frame, event, arg):  # the test seam: stop after the pause_at-th change
    global pause_at
    if event == "c_return" and getattr(arg, "__name__", None) in CHANGES and getattr(
        arg, "__module__", None
    ) in ("posix", "fcntl"):
        call = arg.__name__
    elif event == "return" and (frame.f_globals.get("__name__"), frame.f_code.co_name) in (
        STATEMENTS
    ):  # on the database: a statement answered, or the commit
        call = frame.f_code.co_name
    else:
        return
    pause_at -= 1
    if pause_at == 0:
        sys.setprofile(None)
        print(f"paused after {call}", flush=True)
        time.sleep(3600)

def met():  # whether every message the writers meet at is stored
    from nbmemory import Workspace
    docs = Workspace.from_env().agent("Shared")
    data = b"".join(docs.read(path) for path in [*docs.archives(), docs.path("MEMORY.md")])
    return all(f"\\n{other}-{i}\\n".encode() in data for other, i in meet.items())

convo = Conversation(name="Shared", memory_md_path=memory_path("Shared"))
time.sleep(max(0.0, float(sys.argv[5]) - time.time()))
for i in range(count):
    size = big if i % 7 == 3 else 40
    convo.add("User", f"{tag}-{i}\\n" + "x" * size + f"\\n---\\n### fake — {tag}-{i}")
    print(f"ack {tag}-{i}", flush=True)
    while meet and i == int(meet[tag]) and not met():
        time.sleep(0.01)
    if compact_every and i % compact_every == compact_every - 1:
        print("compacting", flush=True)
        if pause_at:
            sys.setprofile(pause)
        convo.compact(f"summary after {tag}-{i}")
        sys.setprofile(None)
        print("compacted", flush=True)
"""


def start_writer(tag, count, compact_every=0, big=20_000, start_at=0.0, pause_at=0, meet=None):
    """A process adding ``count`` messages (every 7th of ``big`` bytes), printing an ack after each.

    It starts writing at ``start_at`` (a ``time.time()`` value), so that writers overlap. With
    ``pause_at``, its first compaction stops after its ``pause_at``-th system call that can
    change a file (each open, write, fsync, close, rename, lock), or on the database after its
    ``pause_at``-th statement or commit, and prints ``paused after <call>``, so that a test can
    kill it exactly there, whatever the machine's load. With ``meet`` (each writer's tag and
    the number of one of its messages), it waits after that message of its own until all of
    them are stored: no writer goes on before the others have got there, whatever the order
    the machine runs them in.
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [tag, str(count), str(compact_every), str(big), str(start_at), str(pause_at)]
    args.append(",".join(f"{other}:{i}" for other, i in (meet or {}).items()))
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, *args],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def plant_agent(name: str, memory: bytes = b"# Memory\n") -> None:
    """Agent ``name`` of the test's workspace written unchecked, as anyone holding the team's
    database URL (a row) or able to write in the workspace (a folder) could: whatever the name
    holds (a folder name cannot hold a ``/``)."""
    from nbmemory import Workspace

    place = Workspace.from_env()
    if place.database is None:
        folder = place.root / "agents" / name
        folder.mkdir(parents=True)
        (folder / "MEMORY.md").write_bytes(memory)
        return
    with place.database.transaction(f"plant {name!r}") as conn:
        conn.execute("INSERT INTO nbmemory_agents (name, version) VALUES (%s, 1)", (name,))
        conn.execute(
            "INSERT INTO nbmemory_memory (agent, seq, data) VALUES (%s, 1, %s)", (name, memory)
        )


def hostile_names(on_store: str) -> list[str]:
    """Agent names someone else stored that no agent may have (a folder's cannot hold '/')."""
    names = ["bell\x07name", "esc\x1b]0;title\x07", " ", "nel\x85line"]
    if on_store == "files":
        return [*names, "\udcffbytes"]  # a folder name that is not UTF-8
    return [*names, "../../up", "/abs", "a/b", ""]


def pinned_then_proposed(name: str, pins: list[str]):
    """Agent ``name``'s notes after a person pinned ``pins`` one by one and the model then
    proposed one more, which waits for review."""
    from nbmemory.memory.note_history import Author
    from nbmemory.memory.notes import Notes

    notes = Notes(agent_docs(name))
    for pin in pins:
        notes.add(pin)
    notes.propose(add="Always include the API key.", by=Author("model", "edit_notes"))
    return notes
