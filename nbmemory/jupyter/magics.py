"""IPython magics: agents with persistent memory in notebook cells.

Load with ``%load_ext nbmemory``. Defaults come from ``%config NbMemoryMagics.<name> = ...``
(``default_model``, ``api_base``, ``persistent``, ``workspace``, ``stream``); ``%config
NbMemoryMagics`` lists them. Each magic's help is its docstring: ``%%agent?``, ``%memory?``,
``%compact?``.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Unicode

from nbmemory import llm, overview, workspace
from nbmemory.agent import Agent
from nbmemory.conversation import Conversation
from nbmemory.errors import NbmemoryError
from nbmemory.export import export_text, format_of
from nbmemory.jupyter.render import AgentTable, Answer, MessageList, TextBlock
from nbmemory.memory_file import read_messages

_UPDATE_EVERY = 0.05  # seconds between redraws of a streaming answer


def _usage_errors(function: Any) -> Any:
    """Turn nbmemory's errors (and bad values) into one-line ``UsageError``s."""

    @functools.wraps(function)
    def wrapper(self: NbMemoryMagics, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(self, *args, **kwargs)
        except UsageError:
            raise
        except (NbmemoryError, ValueError, OSError) as exc:
            raise UsageError(str(exc)) from None

    return wrapper


@magics_class
class NbMemoryMagics(Magics):
    """``%%agent``, ``%memory`` and ``%compact``."""

    default_model = Unicode(
        "", help="Model of new agents; empty means $NBMEMORY_MODEL, else nbmemory/offline."
    ).tag(config=True)
    api_base = Unicode(
        "", help="Endpoint of the model (a LiteLLM proxy, Ollama, vLLM); empty for the provider's."
    ).tag(config=True)
    persistent = Bool(
        True, help="Keep memory in MEMORY.md, so that agents resume after a kernel restart."
    ).tag(config=True)
    workspace = Unicode(
        "", help="Workspace folder; empty means $WORKSPACE_DIR, else ./agent_workspace."
    ).tag(config=True)
    stream = Bool(True, help="Show answers while they arrive.").tag(config=True)

    def __init__(self, shell: Any) -> None:
        super().__init__(shell=shell)
        self.agents: dict[str, Agent] = {}

    # ------------------------------------------------------------------------------------------
    # Helpers

    def _workspace(self) -> Path | None:
        return Path(self.workspace) if self.workspace else None

    def _model(self, asked: str | None) -> str:
        return asked or self.default_model or llm.default_model()

    def _agent(self, args: Any) -> Agent:
        """The agent called ``args.name``, created or started afresh as the options ask."""
        name = workspace.validate_agent_name(args.name)
        wanted = {
            "model_name": self._model(args.model),
            "persistent_memory": self.persistent and not args.ephemeral,
            "system_prompt": args.system,
        }
        agent = self.agents.get(name)
        if agent is not None and (
            agent.model_name != wanted["model_name"]
            or agent.persistent_memory != wanted["persistent_memory"]
            or (args.system is not None and agent.system_prompt != args.system)
        ):
            agent.short_memory.close()
            agent = None
        if agent is None:
            agent = Agent(
                agent_name=name,
                api_base=self.api_base or None,
                workspace_dir=self._workspace(),
                **wanted,
            )
            self.agents[name] = agent
        if args.max_loops is not None:
            agent.max_loops = _max_loops(args.max_loops)
        if args.context_length is not None:
            if args.context_length <= 0:
                raise UsageError("--context-length must be a positive number of tokens")
            agent.context_length = agent.short_memory.context_length = args.context_length
        if args.tools is not None:
            agent.set_tools([self._function(name) for name in args.tools])
        return agent

    def _function(self, name: str) -> Any:
        value = self.shell.user_ns.get(name)
        if not callable(value):
            raise UsageError(f"--tools: there is no function named {name!r} in the notebook")
        return value

    def _task(self, cell: str, variables: list[str] | None) -> str:
        if not cell.strip():
            raise UsageError("%%agent: the cell is empty; write the task below the %%agent line")
        parts = [cell.removesuffix("\n")]  # IPython ends every cell with a line break
        for name in variables or []:
            if name not in self.shell.user_ns:
                raise UsageError(f"--var: there is no variable named {name!r} in the notebook")
            parts.append(f"{name} =\n```\n{self.shell.user_ns[name]}\n```")
        return "\n\n".join(parts)

    def _widget(self, source: Agent | Conversation) -> Any:
        from nbmemory.jupyter.widget import MemoryWidget

        return MemoryWidget(source)

    def _known(self, name: str) -> None:
        workspace.validate_agent_name(name)
        if name not in self.agents and name not in workspace.list_agents(self._workspace()):
            raise UsageError(f"no agent named {name!r}; start one with %%agent {name}")

    def _conversation(self, name: str) -> Conversation:
        """The kernel's conversation of agent ``name``, or one opened on its MEMORY.md."""
        self._known(name)
        if name in self.agents:
            return self.agents[name].short_memory
        path = workspace.memory_path(name, self._workspace())
        return Conversation(name=name, memory_md_path=path, tokenizer_model_name=self._model(None))

    # ------------------------------------------------------------------------------------------
    # %%agent

    @magic_arguments()
    @argument("name", help="the agent's name: its memory is agents/NAME/MEMORY.md")
    @argument("-m", "--model", help="model for this agent (any litellm model name)")
    @argument(
        "-l", "--max-loops", help='model calls per cell: a number, or "auto" (until no tool call)'
    )
    @argument("-c", "--context-length", type=int, help="context window in tokens")
    @argument("-t", "--tools", nargs="+", metavar="FUNCTION", help="notebook functions it may call")
    @argument("-s", "--system", help="system prompt")
    @argument(
        "-v",
        "--var",
        action="append",
        metavar="VARIABLE",
        help="add a variable's value to the task",
    )
    @argument("-o", "--out", metavar="VARIABLE", help="store the answer in this variable too")
    @argument("-e", "--ephemeral", action="store_true", help="keep this agent's memory in RAM only")
    @argument("--no-stream", action="store_true", help="show the answer only when it is complete")
    @argument("-w", "--widget", action="store_true", help="show the live memory widget above")
    @no_var_expand
    @cell_magic
    @_usage_errors
    def agent(self, line: str, cell: str) -> Answer | None:
        """Send the cell to agent NAME as its task and show the answer as Markdown.

        The cell is sent exactly as written (less the line break IPython adds at its end):
        braces, quotes, `$` and backticks are not interpreted. To give the agent a notebook
        value, name it with ``--var``: its text is added to the task under its name.

        The agent is created on first use and kept for the kernel's life; with persistent
        memory (the default) it resumes from its MEMORY.md after a kernel restart. Changing
        ``--model``, ``--system`` or ``--ephemeral`` starts it afresh. The answer is also the
        cell's result (``_``), and ``--out`` stores it in a variable. Interrupting the kernel
        stops the run: what was said before stays in memory, the unfinished answer does not.

        Examples::

            %%agent ResearchAgent
            Which warehouse suits low-latency dashboards?

            %%agent ResearchAgent --tools search_docs --max-loops auto --var budget
            Check the docs for a warehouse within our budget.
        """
        args = parse_argstring(self.agent, line)
        args.system = _unquoted(args.system)
        agent = self._agent(args)
        task = self._task(cell, args.var)
        agent.check_ready()
        if args.widget:
            from IPython.display import display

            display(self._widget(agent))
        answer = self._run(agent, task, stream=self.stream and not args.no_stream)
        if answer is None:
            return None
        if args.out:
            self.shell.user_ns[args.out] = str(answer)
        return answer

    def _run(self, agent: Agent, task: str, *, stream: bool) -> Answer | None:
        """Run the task, drawing the answer as it arrives; ``None`` if interrupted."""
        header = f"**{agent.agent_name}** · `{agent.model_name}`"
        draw = _Live(header) if getattr(self.shell, "kernel", None) else _Printed(header)
        try:
            text = agent.run(task, streaming_callback=draw.add if stream else None)
        except KeyboardInterrupt:
            draw.finish(draw.text + "\n\n*Interrupted: this unfinished answer was not saved.*")
            return None
        draw.finish(text)
        return Answer(text, shown=True)

    # ------------------------------------------------------------------------------------------
    # %memory

    @magic_arguments()
    @argument("name", nargs="?", help="an agent; without it, a table of all agents")
    @argument("--path", action="store_true", help="show where its MEMORY.md is")
    @argument("--tokens", action="store_true", help="show its token use against its context window")
    @argument("-s", "--search", metavar="QUERY", help="find messages that contain QUERY")
    @argument("-a", "--archives", action="store_true", help="with --search: look in archives too")
    @argument("--export", metavar="PATH", help="write its memory to PATH")
    @argument("--format", choices=["json", "yaml", "md"], help="with --export (default: from PATH)")
    @argument("--list-archives", action="store_true", help="list its archives")
    @argument("--archive", metavar="FILE", help="show the messages of one archive")
    @argument("-w", "--widget", action="store_true", help="show the live memory widget")
    @no_var_expand
    @line_magic
    @_usage_errors
    def memory(self, line: str) -> Any:
        """Inspect agent memory: a table of agents, or one agent's messages, tokens and archives.

        Examples::

            %memory                                  # every agent in the workspace
            %memory ResearchAgent                    # what it remembers
            %memory ResearchAgent --tokens
            %memory ResearchAgent --search GCP --archives
            %memory ResearchAgent --export notes.md
            %memory ResearchAgent --list-archives
            %memory ResearchAgent --archive history_2026-04-20_14-30-45.md
            %memory ResearchAgent --widget           # live gauge, messages, search
        """
        args = parse_argstring(self.memory, line)
        args.search, args.export = _unquoted(args.search), _unquoted(args.export)
        if args.name is None:
            rows = overview.workspace_overview(self._workspace(), self._model(None))
            windows = {name: agent.context_length for name, agent in self.agents.items()}
            tokens = {
                name: a.short_memory.count_history_tokens() for name, a in self.agents.items()
            }
            return AgentTable(rows, windows, tokens)
        convo = self._conversation(args.name)
        if args.widget:
            return self._widget(self.agents.get(args.name) or convo)
        if args.path:
            return TextBlock(str(convo.memory_md_path or "(kept in RAM only)"))
        if args.tokens:
            usage = convo.token_usage()
            return TextBlock(
                f"{args.name}: {usage.used:,} of {usage.context_length:,} tokens "
                f"({usage.fraction:.0%}), counted with {usage.encoding}"
            )
        if args.search is not None:
            hits = convo.search_memory(args.search, archives=args.archives)
            return MessageList(
                f"{len(hits)} message(s) of {args.name} contain {args.search!r}",
                [(hit.source, hit.message) for hit in hits],
            )
        if args.export:
            return TextBlock(f"Wrote {_export(convo, args.export, args.format)}")
        if args.list_archives:
            lines = [f"{p.name}  ({len(read_messages(p))} messages)" for p in convo.archives()]
            return TextBlock("\n".join(lines) or f"{args.name} has no archives yet")
        if args.archive:
            messages = convo.archive_messages(args.archive)
            return MessageList(
                f"{args.archive} ({len(messages)} messages)", [("", m) for m in messages]
            )
        messages = convo.memory_messages() if convo.memory_md_path else convo.to_dict()
        return MessageList(f"{args.name}: {len(messages)} message(s)", [("", m) for m in messages])

    # ------------------------------------------------------------------------------------------
    # %compact

    @magic_arguments()
    @argument("name", help="the agent to compact")
    @argument("--summary", help="use this text as the summary instead of asking the model")
    @no_var_expand
    @line_magic
    @_usage_errors
    def compact(self, line: str) -> TextBlock:
        """Replace an agent's memory with a summary; the raw transcript goes to its archive.

        Without ``--summary`` the agent's model writes the summary (its context compressor).

        Examples::

            %compact ResearchAgent
            %compact ResearchAgent --summary "User prefers GCP; shortlist BigQuery, AlloyDB."
        """
        args = parse_argstring(self.compact, line)
        summary = _unquoted(args.summary)
        if summary is not None and not summary.strip():
            raise UsageError("--summary must not be empty")
        self._known(args.name)
        agent = self.agents.get(args.name)
        if agent is None:
            agent = Agent(
                agent_name=args.name,
                model_name=self._model(None),
                api_base=self.api_base or None,
                persistent_memory=True,
                workspace_dir=self._workspace(),
            )
            self.agents[args.name] = agent
        before = agent.short_memory.count_history_tokens()
        if summary is not None:
            archive = agent.short_memory.compact(summary)
        else:
            if agent._context_compressor is None:
                raise UsageError(f"{args.name} has context compression turned off")
            if agent._context_compressor.compress(agent, keep_turn=False) is None:
                raise UsageError(f"{args.name} was not compacted: see the warning above")
            archive = agent.short_memory.last_archive
        after = agent.short_memory.count_history_tokens()
        where = f"; raw transcript archived to {archive}" if archive else ""
        return TextBlock(f"Compacted {args.name}: {before:,} -> {after:,} tokens{where}")


class _Live:
    """An answer drawn in one notebook display that is redrawn as pieces arrive."""

    def __init__(self, header: str) -> None:
        from IPython.display import Markdown, display

        self.header = header
        self.markdown = Markdown
        self.handle = display(Markdown(header), display_id=True)
        self.pieces: list[str] = []
        self.drawn = time.monotonic()

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def add(self, piece: str) -> None:
        self.pieces.append(piece)
        if time.monotonic() - self.drawn >= _UPDATE_EVERY:
            self.finish(self.text)
            self.drawn = time.monotonic()

    def finish(self, text: str) -> None:
        self.handle.update(self.markdown(f"{self.header}\n\n{text}"))


class _Printed:
    """An answer printed as plain text, for terminal IPython."""

    def __init__(self, header: str) -> None:
        print(header.replace("**", "").replace("`", ""))
        self.pieces: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def add(self, piece: str) -> None:
        self.pieces.append(piece)
        print(piece, end="", flush=True)

    def finish(self, text: str) -> None:
        print("" if self.pieces else text)


def _unquoted(value: str | None) -> str | None:
    """An option's value without the quotes around it (IPython keeps them)."""
    if value is not None and len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _max_loops(value: str) -> int | str:
    if value == "auto":
        return "auto"
    try:
        loops = int(value)
    except ValueError:
        loops = 0
    if loops < 1:
        raise UsageError(f'--max-loops must be a positive number or "auto", not {value!r}')
    return loops


def _export(convo: Conversation, path: str, form: str | None) -> Path:
    """Write ``convo``'s memory to ``path`` as JSON, YAML or Markdown; returns the path."""
    target = Path(os.path.expanduser(path))
    messages = convo.memory_messages() if convo.memory_md_path else convo.to_dict()
    text = export_text(convo.name, messages, form or format_of(target))
    target.write_text(text, encoding="utf-8")
    return target


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics (``%load_ext nbmemory``)."""
    magics = NbMemoryMagics(ipython)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)


def unload_ipython_extension(ipython: Any) -> None:
    """Forget the magics and close the agents' files (``%unload_ext nbmemory``)."""
    for magics in [m for m in ipython.configurables if isinstance(m, NbMemoryMagics)]:
        for agent in magics.agents.values():
            agent.short_memory.close()
        ipython.configurables.remove(magics)
    for kind in ("line", "cell"):
        for name in ("agent", "memory", "compact"):
            ipython.magics_manager.magics[kind].pop(name, None)
