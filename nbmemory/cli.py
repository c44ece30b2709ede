"""The ``nbmemory`` command: look into agents' memory from a shell, on the same engine.

Exit codes: 0 done, 1 nothing found (an unknown agent, a search without hits), 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nbmemory import overview, workspace
from nbmemory.conversation import Conversation
from nbmemory.errors import NbmemoryError
from nbmemory.export import FORMATS, export_text
from nbmemory.jupyter.render import AgentTable, MessageList
from nbmemory.memory_file import read_messages
from nbmemory.search import MemoryHit, content_text


class NotFound(Exception):
    """Something the user named does not exist (exit code 1)."""


def _workspace(args: argparse.Namespace) -> Path:
    return Path(args.workspace) if args.workspace else workspace.workspace_dir()


def _conversation(args: argparse.Namespace, name: str) -> Conversation:
    root = _workspace(args)
    if name not in workspace.list_agents(root):
        workspace.validate_agent_name(name)
        raise NotFound(f"no agent named {name!r} in {root}")
    return Conversation(name=name, memory_md_path=workspace.memory_path(name, root))


def cmd_ls(args: argparse.Namespace) -> str:
    return repr(AgentTable(overview.workspace_overview(_workspace(args)), {}))


def cmd_show(args: argparse.Namespace) -> str:
    convo = _conversation(args, args.name)
    if args.archive:
        messages = convo.archive_messages(args.archive)
        return repr(
            MessageList(f"{args.archive} ({len(messages)} messages)", [("", m) for m in messages])
        )
    messages = convo.memory_messages()[-args.last :] if args.last else convo.memory_messages()
    return repr(
        MessageList(f"{args.name}: {len(messages)} message(s)", [("", m) for m in messages])
    )


def cmd_search(args: argparse.Namespace) -> str:
    names = [args.agent] if args.agent else workspace.list_agents(_workspace(args))
    lines = []
    for name in names:
        convo = _conversation(args, name)
        hits: list[MemoryHit] = convo.search_memory(args.query, archives=args.archives)
        for hit in hits:
            text = " ".join(content_text(hit.message.get("content")).split())
            stamp = hit.message.get("timestamp", "")
            lines.append(f"{name}\t{hit.source}\t{hit.message['role']}\t{stamp}\t{text[:200]}")
    if not lines:
        raise NotFound(f"no message contains {args.query!r}")
    return "\n".join(lines)


def cmd_export(args: argparse.Namespace) -> str:
    convo = _conversation(args, args.name)
    text = export_text(args.name, convo.memory_messages(), args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        return f"wrote {args.output}"
    return text.rstrip("\n")


def cmd_compact(args: argparse.Namespace) -> str:
    convo = _conversation(args, args.name)
    before = convo.count_history_tokens()
    archive = convo.compact(args.summary)
    after = convo.count_history_tokens()
    where = f"; raw transcript archived to {archive}" if archive else ""
    return f"compacted {args.name}: {before:,} -> {after:,} tokens{where}"


def cmd_tokens(args: argparse.Namespace) -> str:
    convo = _conversation(args, args.name)
    row = overview.agent_overview(args.name, _workspace(args), args.model)
    archived = sum(len(read_messages(p)) for p in convo.archives())
    return f"{args.name}: {row.tokens:,} tokens in {row.messages} messages ({archived} archived)"


def cmd_path(args: argparse.Namespace) -> str:
    return str(_conversation(args, args.name).memory_md_path)


def cmd_demo(args: argparse.Namespace) -> str:
    from nbmemory.demo import run

    run(args.workspace)
    return ""


def parser() -> argparse.ArgumentParser:
    """The command line's parser (``nbmemory --help``)."""
    main = argparse.ArgumentParser(prog="nbmemory", description="Look into agents' memory.")
    main.add_argument("--workspace", help="the workspace folder (default: $WORKSPACE_DIR)")
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(run=run)
        return sub

    command("ls", cmd_ls, "list the agents: messages, tokens, archives, last activity")
    show = command("show", cmd_show, "print an agent's memory (or one of its archives)")
    show.add_argument("name")
    show.add_argument("--archive", metavar="FILE", help="an archive's file name")
    show.add_argument("-n", "--last", type=int, metavar="N", help="only the last N messages")
    search = command("search", cmd_search, "find messages that contain QUERY (any case)")
    search.add_argument("query")
    search.add_argument("--agent", metavar="NAME", help="search only this agent")
    search.add_argument("--archives", action="store_true", help="search archives too")
    export = command("export", cmd_export, "print an agent's memory as JSON, YAML or Markdown")
    export.add_argument("name")
    export.add_argument("--format", choices=FORMATS, default="md")
    export.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead")
    compact = command("compact", cmd_compact, "replace an agent's memory with a summary")
    compact.add_argument("name")
    compact.add_argument("--summary", required=True, help="the summary text")
    tokens = command("tokens", cmd_tokens, "count the tokens of an agent's memory")
    tokens.add_argument("name")
    tokens.add_argument("--model", help="count as this model does (default: cl100k)")
    path = command("path", cmd_path, "print the path of an agent's MEMORY.md")
    path.add_argument("name")
    demo = command("demo", cmd_demo, "write, reload and compact a sample memory")
    demo.add_argument("--workspace", dest="workspace", help=argparse.SUPPRESS)
    return main


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    arguments = parser()
    args = arguments.parse_args(argv)
    try:
        output = args.run(args)
    except NotFound as exc:
        print(f"nbmemory: {exc}", file=sys.stderr)
        return 1
    except (NbmemoryError, ValueError, OSError) as exc:
        print(f"nbmemory: error: {exc}", file=sys.stderr)
        return 2
    if output:
        print(output)
    return 0
