"""The ``nbmemory`` command: look into agents' memory from a shell, on the same engine.

``jupyter nbmemory ...`` is the same command. Exit codes: 0 done, 1 nothing found (an unknown
agent, a search without hits), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from nbmemory.agent.agent import Agent
from nbmemory.errors import (
    AgentNotFoundError,
    ArchiveNotFoundError,
    MemoryWarning,
    NbmemoryError,
    NoteNotFoundError,
)
from nbmemory.memory.export import FORMATS, export_text
from nbmemory.memory.note_history import APPROVALS, DEFAULT, person
from nbmemory.memory.notes import Notes, listing
from nbmemory.recall import DEFAULT_BUDGET
from nbmemory.store import Workspace
from nbmemory.store import workspace as memory_store
from nbmemory.store.atomic import write_atomic
from nbmemory.store.layout import MAX_DOCUMENT_BYTES, export_layout, import_layout
from nbmemory.store.masked_url import hide_password
from nbmemory.views.read_model import ReadModel
from nbmemory.views.report import (
    AgentTable,
    Audit,
    MessageList,
    compacted_line,
    note_history_report,
    preview_report,
    restored_words,
    usage_report,
    visible,
)
from nbmemory.wording import FOLD_CHARS, counted, message_number, phrase, review_words

HIT_CHARS = 200
"""The characters of a message ``nbmemory search`` shows on its hit's line."""


class NotFound(Exception):
    """Something the user named does not exist (exit code 1)."""


def _workspace(args: argparse.Namespace) -> Workspace:
    """The workspace the options name: ``--workspace`` (else ``$WORKSPACE_DIR``) on
    ``--store`` (else ``$NBMEMORY_STORE``)."""
    found = Workspace.from_env(args.workspace or None)
    return Workspace(found.root, args.store) if args.store is not None else found


def _reader(args: argparse.Namespace) -> ReadModel:
    return ReadModel(_workspace(args))


def cmd_ls(args: argparse.Namespace) -> str:
    return repr(AgentTable(_reader(args).agents()))


def cmd_show(args: argparse.Namespace) -> str:
    reader = _reader(args)
    fold = None if args.full else FOLD_CHARS
    if args.archive:
        page = reader.archive_messages(args.name, args.archive, limit=sys.maxsize, fold=fold)
        return repr(MessageList(f"{args.archive} ({counted(page.total, 'message')})", page.items))
    total = reader.agent(args.name).messages
    count = min(args.last, total) if args.last else total
    page = reader.messages(args.name, 0, count, newest_first=True, fold=fold)
    return repr(MessageList(f"{args.name}: {counted(count, 'message')}", reversed(page.items)))


def cmd_search(args: argparse.Namespace) -> str:
    reader = _reader(args)
    names = [args.agent] if args.agent else reader.names()
    lines = []
    for name in names:
        found = reader.search(name, args.query, archives=args.archives, limit=sys.maxsize)
        for item in found.items:
            text = " ".join(item.readable.split())
            text = text[:HIT_CHARS] + "…" if len(text) > HIT_CHARS else text
            number = message_number(item.index)
            lines.append(f"{name}\t{item.source}\t{number}\t{item.role}\t{item.timestamp}\t{text}")
    if not lines:
        where = phrase("search where archives" if args.archives else "search where")
        hint = "" if args.archives else " Add --archives to look in the archives too."
        raise NotFound(phrase("search none", query=args.query, where=where, among="", hint=hint))
    return "\n".join(lines)


def cmd_export(args: argparse.Namespace) -> str:
    if args.layout:
        if args.output or args.format != "md":
            raise NbmemoryError("--layout writes the files as they are: no --format or --output")
        place = _workspace(args)
        names = export_layout(args.layout, place, [args.name] if args.name else None)
        return (
            f"exported {', '.join(names) or 'no agents'} from {place.describe()} to {args.layout}"
        )
    if not args.name:
        raise NbmemoryError("name the agent to export (or pass --layout FOLDER for all of them)")
    text = export_text(args.name, _reader(args).records(args.name), args.format)
    if args.output:
        write_atomic(Path(args.output), text)
        return f"wrote {args.output}"
    return text.rstrip("\n")


def cmd_compact(args: argparse.Namespace) -> str:
    reader = _reader(args)
    if args.summary is not None and not args.summary.strip():
        raise NbmemoryError("--summary must not be empty")
    reader.agent(args.name)  # AgentNotFoundError before anything is written
    agent = Agent.from_memory(args.name, reader.workspace, record_settings=False)
    keep = args.keep or []
    if args.preview:
        then = f"nbmemory compact {args.name} writes a summary like it (--keep TERM to keep more)"
        return preview_report(args.name, agent.compact_preview(keep), then)
    archive = agent.compact(args.summary, keep=keep).archive
    done = reader.compactions(args.name) if archive else []
    return compacted_line(args.name, archive.name if archive else None, done)


def cmd_tokens(args: argparse.Namespace) -> str:
    reader = _reader(args)
    return usage_report(reader.agent(args.name), reader.archives(args.name))


def cmd_audit(args: argparse.Namespace) -> str:
    compactions = _reader(args).compactions(args.name)
    if args.json:
        return json.dumps([c.to_json() for c in compactions], indent=2, ensure_ascii=False)
    return repr(Audit(args.name, compactions))


def cmd_notes(args: argparse.Namespace) -> str:
    reader = _reader(args)
    reader.agent(args.name)  # AgentNotFoundError before anything is written
    notes = Notes(reader.workspace.agent(args.name))
    by = person("cli")
    if args.history:
        return note_history_report(args.name, notes.history(), f"nbmemory notes {args.name}")
    if args.pending:
        waiting = [(c.n, c.describe()) for c in notes.pending()]
        command = f"nbmemory notes {args.name}"
        return review_words(waiting, command) or f"{args.name}: no note edits wait for your review"
    for n, review in ((args.accept, notes.accept), (args.reject, notes.reject)):
        if n is not None:
            review(n, by=by)
    if args.restore is not None:
        before = notes.items()
        after = notes.restore(args.restore, by=by)
        return (
            f"{restored_words(args.restore, before, after)}\n\n{_notes_listing(reader, args.name)}"
        )
    if args.approval is not None:
        notes.set_approval(args.approval, by=by)
        return f"{args.name}: the model's note edits are now {args.approval!r}"
    if args.unpin is not None:
        notes.remove(args.unpin, by=by)
    if args.pin is not None:
        notes.add(args.pin, by=by)
    return _notes_listing(reader, args.name)


def _notes_listing(reader: ReadModel, name: str) -> str:
    """The notes, numbered, then the model's edits waiting for review."""
    shown = listing(reader.notes(name)) or f"{name} has no pinned notes"
    waiting = review_words(
        [(c.n, c.describe()) for c in reader.waiting_notes(name)], f"nbmemory notes {name}"
    )
    return f"{shown}\n\n{waiting}" if waiting else shown


def cmd_path(args: argparse.Namespace) -> str:
    reader = _reader(args)
    path = reader.agent(args.name).path
    if reader.store != "files":
        raise NotFound(
            f"{args.name}'s memory is kept in the database {reader.store}, not in a file: "
            "nbmemory export --layout FOLDER writes it as files"
        )
    return str(path)


def cmd_import(args: argparse.Namespace) -> str:
    place = _workspace(args)
    names = import_layout(args.folder, place, max_bytes=int(args.max_document_mb * 2**20))
    return f"imported {counted(len(names), 'agent')} into {place.describe()}: {', '.join(names)}"


def cmd_demo(args: argparse.Namespace) -> str:
    from nbmemory.agent.demo import run

    run(_workspace(args))
    return ""


def cmd_server(args: argparse.Namespace) -> str:
    try:  # jupyter_server comes with JupyterLab, not with nbmemory
        from nbmemory.jupyter.server.app import main as serve
    except ImportError as exc:
        raise NbmemoryError(f"nbmemory server needs JupyterLab ({exc})") from None
    options = list(args.options)
    if args.workspace:  # relative to here, like every other command's
        options.insert(0, f"--NbMemoryServer.workspace={os.path.abspath(args.workspace)}")
    if args.store:  # the server reads it, and exports it to its kernels
        os.environ[memory_store.ENV] = args.store
    serve(options)
    return ""


def cmd_mcp(args: argparse.Namespace) -> str:
    try:  # the MCP SDK comes with nbmemory[mcp], not with nbmemory
        from nbmemory.mcp_server import MemoryServer, serve_stdio
    except ImportError as exc:
        raise NbmemoryError(
            f"nbmemory mcp needs the MCP SDK: pip install 'nbmemory[mcp]' ({exc})"
        ) from None
    server = MemoryServer(
        _workspace(args), args.agent, read_only=args.read_only, recall_budget=args.recall_budget
    )
    serve_stdio(server)
    return ""


def read_store_file(path: str) -> str:
    """The database URL written in the file at ``path``: its one line, without the blanks
    around it. Messages name the file, never what it holds."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise NbmemoryError(
            f"--store-file {path}: cannot read it ({exc.strerror or type(exc).__name__})"
        ) from None
    try:
        text = data.decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        raise NbmemoryError(f"--store-file {path} is not UTF-8 text") from None
    if not text:
        raise NbmemoryError(f"--store-file {path} is empty: write the database URL in it")
    if len(text.splitlines()) > 1:
        raise NbmemoryError(f"--store-file {path} has more than one line: keep only the URL")
    return text


def count(raw: str) -> int:
    """A count of at least 1, in ASCII digits (``--last``)."""
    if re.fullmatch(r"[0-9]{1,18}", raw) is None or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"a whole number from 1, not {raw[:40]!r}")
    return int(raw)


def terminal(text: str) -> str:
    """``text`` for a terminal, one line per line it holds: invisible characters revealed, and
    a lone surrogate (an argument's byte that is not UTF-8) written as ``\\udcff``."""
    return visible(text).encode("utf-8", "backslashreplace").decode("utf-8")


def _one_line_warnings(show: Callable[..., None]) -> Callable[..., None]:
    """What shows warnings: nbmemory's own (a damaged file, a folder skipped) as one escaped
    line, others (the Jupyter server's) as ``show`` does."""

    def warn(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, MemoryWarning):
            print(terminal(f"nbmemory: warning: {message}"), file=sys.stderr)
        else:
            show(message, category, *args, **kwargs)

    return warn


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors hide any database password of the command line: argparse
    quotes arguments it did not expect, such as the URL of ``nbmemory ls --store URL`` (whose
    ``--store`` belongs before ``ls``)."""

    given: Sequence[str] = ()

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        for argument in self.given:
            message = hide_password(message, argument)
        super().error(message)


def parser() -> argparse.ArgumentParser:
    """The command line's parser (``nbmemory --help``)."""
    main = _Parser(prog="nbmemory", description="Look into agents' memory.")
    main.add_argument("--workspace", help="the workspace folder (default: $WORKSPACE_DIR)")
    where = main.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        metavar="URL",
        help="a PostgreSQL URL to keep agents in (default: $NBMEMORY_STORE, else files); other "
        "users of this machine can read a command line: prefer --store-file or $NBMEMORY_STORE",
    )
    where.add_argument(
        "--store-file",
        metavar="PATH",
        help="read that URL from a file instead (one line)",
    )
    main_help = {action.option_strings[0]: action.help for action in main._actions}
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(run=run)
        return sub

    command("ls", cmd_ls, "list the agents: messages, tokens, archives, last activity")
    show = command("show", cmd_show, "print an agent's memory (or one of its archives)")
    show.add_argument("name")
    show.add_argument("--archive", metavar="FILE", help="an archive's file name")
    show.add_argument("-n", "--last", type=count, metavar="N", help="only the last N messages")
    show.add_argument(
        "--full",
        action="store_true",
        help=f"whole messages (else the first {FOLD_CHARS:,} characters)",
    )
    search = command("search", cmd_search, "find messages that contain QUERY (any case)")
    search.add_argument("query")
    search.add_argument("--agent", metavar="NAME", help="search only this agent")
    search.add_argument("--archives", action="store_true", help="search archives too")
    export = command(
        "export",
        cmd_export,
        "print an agent's memory as JSON, YAML or Markdown; or, with --layout, write agents' "
        "files as the spec lays them out (agents/NAME/MEMORY.md, archive/...)",
    )
    export.add_argument("name", nargs="?", help="the agent (with --layout: all if omitted)")
    export.add_argument(
        "--layout", metavar="FOLDER", help="write FOLDER/agents/NAME/... from the store in use"
    )
    export.add_argument("--format", choices=FORMATS, default="md")
    export.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead")
    load = command(
        "import",
        cmd_import,
        "load FOLDER's agents/ (nbmemory's or swarms' files) into the database",
    )
    load.add_argument("folder")
    load.add_argument(
        "--max-document-mb",
        type=float,
        default=MAX_DOCUMENT_BYTES / 2**20,
        metavar="MB",
        help="skip, with a warning, an agent holding a file over MB MiB (default: %(default)g)",
    )
    compact = command(
        "compact",
        cmd_compact,
        "replace an agent's memory with a summary (its model's, unless --summary)",
    )
    compact.add_argument("name")
    compact.add_argument("--summary", help="the summary text, instead of the model's")
    compact.add_argument(
        "--preview",
        action="store_true",
        help="show the summary, the tokens before and after and what it would drop; change nothing",
    )
    compact.add_argument(
        "--keep",
        action="append",
        metavar="TERM",
        help="a name, number or identifier the model's summary must keep word for word "
        "(repeat for more)",
    )
    tokens = command("tokens", cmd_tokens, "the tokens of an agent's next request, of its window")
    tokens.add_argument("name")
    audit = command("audit", cmd_audit, "list an agent's compactions and what each summary dropped")
    audit.add_argument("name")
    audit.add_argument("--json", action="store_true", help="print the compactions as JSON")
    notes = command(
        "notes",
        cmd_notes,
        "show, pin or unpin an agent's pinned notes; review the model's edits; see and restore "
        "their history",
    )
    notes.add_argument("name")
    notes.add_argument("--pin", metavar="NOTE", help="pin a note: every request carries it")
    notes.add_argument("--unpin", metavar="NOTE", help="a note's number, or words found in it")
    shown = notes.add_mutually_exclusive_group()
    shown.add_argument(
        "--history", action="store_true", help="every change, newest first: when, who, what"
    )
    shown.add_argument(
        "--pending", action="store_true", help="the model's edits waiting for review"
    )
    shown.add_argument("--accept", type=int, metavar="N", help="apply pending proposal N")
    shown.add_argument("--reject", type=int, metavar="N", help="drop pending proposal N")
    shown.add_argument(
        "--restore", type=int, metavar="N", help="the notes as they were after change N"
    )
    shown.add_argument(
        "--approval",
        choices=[*APPROVALS, DEFAULT],
        help="how the model's edits are taken: applied (auto), proposed for review (ask), "
        "refused (off), or by default (ask)",
    )
    path = command("path", cmd_path, "print the path of an agent's MEMORY.md")
    path.add_argument("name")
    demo = command("demo", cmd_demo, "write, reload and compact a sample memory")
    demo.add_argument("--workspace", dest="workspace", help=argparse.SUPPRESS)
    mcp = command(
        "mcp",
        cmd_mcp,
        "serve the workspace's memory to an MCP client over stdio (tools: recall_memory, "
        "recall_around, recall_between, remember, read_notes, edit_notes, list_agents, "
        "memory_usage, compact; resources: "
        "memory://AGENT/MEMORY.md, NOTES.md, archive/FILE)",
    )
    # the workspace's options after "mcp" too, as an MCP client's configuration writes them
    mcp.add_argument("--workspace", default=argparse.SUPPRESS, help=main_help["--workspace"])
    mcp_where = mcp.add_mutually_exclusive_group()
    mcp_where.add_argument(
        "--store", metavar="URL", default=argparse.SUPPRESS, help=main_help["--store"]
    )
    mcp_where.add_argument(
        "--store-file", metavar="PATH", default=argparse.SUPPRESS, help=main_help["--store-file"]
    )
    mcp.add_argument("--agent", metavar="NAME", help="serve this agent only: tools take no agent")
    mcp.add_argument("--read-only", action="store_true", help="offer no tool that writes")
    mcp.add_argument(
        "--recall-budget",
        metavar="TOKENS",
        type=count,
        default=DEFAULT_BUDGET,
        help=f"tokens a recall answer takes at most (default {DEFAULT_BUDGET})",
    )
    # prefix_chars that no option uses: everything after "server" goes to the Jupyter server as is
    server = commands.add_parser(
        "server",
        help="start a Jupyter server with the nbmemory extension (--help-all: its settings)",
        add_help=False,
        prefix_chars="\0",
    )
    server.add_argument("options", nargs=argparse.REMAINDER)
    server.set_defaults(run=cmd_server)
    return main


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    return _command(parser().parse_args(argv))


ONLY_READ = frozenset({"ls", "show", "search"})
"""Commands that only read: the ``nbmemory`` command ends their process at once (:func:`run`)."""


def run() -> NoReturn:
    """The ``nbmemory`` command: :func:`main` on ``sys.argv``. A command that only reads ends
    its process with :func:`leave`, which does not free what the command read."""
    args = parser().parse_args()
    try:
        code = _command(args)
    except BrokenPipeError:  # whoever read the output stopped (``nbmemory ls | head``)
        # What is still buffered would fail again at exit: it goes nowhere instead.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    if args.command in ONLY_READ:
        leave(code)
    sys.exit(code)


def leave(code: int) -> NoReturn:
    """End the process now with ``code``, its output flushed and its database connections
    closed, without freeing its objects one by one as an interpreter's exit does: after a
    listing of thousands of agents that holds two tokenizers and every memory it read, that
    took 0.1-0.25 s of a one-second command, for memory the system takes back at once."""
    memory_store.close_databases()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, as Python's own exit reports it
            code = code or 120
    os._exit(code)


def _command(args: argparse.Namespace) -> int:
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            if args.store_file is not None:
                if args.store is not None:
                    raise NbmemoryError("give --store or --store-file, not both")
                args.store = read_store_file(args.store_file)
            if args.store is not None:
                memory_store.check(args.store)
            output = args.run(args)
    except (NotFound, AgentNotFoundError, ArchiveNotFoundError, NoteNotFoundError) as exc:
        print(terminal(f"nbmemory: {exc}"), file=sys.stderr)
        return 1
    except (NbmemoryError, OSError) as exc:
        print(terminal(f"nbmemory: error: {exc}"), file=sys.stderr)
        return 2
    if output:
        print(terminal(str(output)))
    return 0
