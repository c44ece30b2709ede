"""IPython magics: agents with persistent memory in notebook cells.

Load with ``%load_ext nbmemory``. Defaults come from ``%config NbMemoryMagics.<name> = ...``
(``default_model``, ``api_base``, ``persistent``, ``workspace``, ``stream``, ``recall``,
``recall_budget``, ``embedding_model``, ``embedding_api_base``);
``%config NbMemoryMagics`` lists them. Each magic's help is its docstring: ``%%agent?``,
``%memory?``, ``%compact?``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Int, TraitError, Unicode, observe, validate

from nbmemory.agent.agent import Agent
from nbmemory.agent.compressor import CompactionPlan
from nbmemory.errors import CompactionError, NbmemoryError
from nbmemory.jupyter.render import Answer, safe_bundle
from nbmemory.jupyter.store_setting import checked_store
from nbmemory.memory.compactions import Compaction
from nbmemory.memory.export import export_text, format_of
from nbmemory.memory.note_history import APPROVALS, person
from nbmemory.memory.notes import Notes, listing
from nbmemory.memory.provenance import SERVER_ROOT_ENV, Provenance, notebook_path
from nbmemory.models import llm
from nbmemory.recall import DEFAULT_BUDGET as RECALL_BUDGET
from nbmemory.store import Workspace, folders
from nbmemory.store.atomic import write_atomic
from nbmemory.views.in_ram import usage_in_ram
from nbmemory.views.pages import to_items
from nbmemory.views.read_model import ReadModel
from nbmemory.views.report import (
    AgentTable,
    MessageList,
    TextBlock,
    compacted_line,
    preview_report,
    usage_line,
)
from nbmemory.wording import FOLD_CHARS, counted, review_words

_UPDATE_EVERY = 0.05  # seconds between redraws of a streaming answer


def _usage_errors(function: Any) -> Any:
    """Turn nbmemory's errors (and failed file operations) into one-line ``UsageError``s."""

    @functools.wraps(function)
    def wrapper(self: NbMemoryMagics, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(self, *args, **kwargs)
        except UsageError:
            raise
        except (NbmemoryError, OSError) as exc:
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
    store = Unicode(
        "",
        help="""A PostgreSQL URL to keep agents in (postgresql://USER:PASSWORD@HOST:PORT/DB), so
        kernels on other hosts share them (the magics' agents and views use it; the rest of the
        kernel keeps $NBMEMORY_STORE). Empty: $NBMEMORY_STORE, else files in the workspace.
        The notebook keeps the cell that sets it: rather set $NBMEMORY_STORE in the kernel's
        environment.""",
    ).tag(config=True)
    stream = Bool(True, help="Show answers while they arrive.").tag(config=True)
    recall = Bool(
        True, help="Let agents search their own memory and archives (the recall_memory tool)."
    ).tag(config=True)
    recall_budget = Int(
        RECALL_BUDGET,
        help="""Tokens an agent's recall_memory answer takes at most: the passages that fit,
        then where the others found are kept and how many more matched.""",
    ).tag(config=True)
    embedding_model = Unicode(
        "",
        help="""Embedding model recall also ranks by meaning with (any litellm embedding model:
        openai/text-embedding-3-small, ollama/nomic-embed-text, …); empty means
        $NBMEMORY_EMBEDDING_MODEL, else nbmemory/words (offline word vectors); none means
        recall by words only.""",
    ).tag(config=True)
    embedding_api_base = Unicode(
        "", help="Endpoint of the embedding model; empty for the provider's."
    ).tag(config=True)
    notes_approval = Unicode(
        "",
        help="""How agents' own edits of their pinned notes are taken: "auto" (applied,
        recorded as applied without review), "ask" (proposed, for a person to accept or reject:
        %memory NAME --accept N) or "off" (refused). Empty: what a person set for the agent's
        memory (nbmemory notes NAME --approval), else "ask".""",
    ).tag(config=True)

    def __init__(self, shell: Any) -> None:
        super().__init__(shell=shell)
        self.agents: dict[str, Agent] = {}
        self._previews: dict[str, CompactionPlan] = {}
        """The last ``%compact NAME --preview`` of each agent, until it is carried out."""
        self._cell_id: str | None = None
        """The id of the cell running now, if the front end sent it (JupyterLab does)."""
        self._import_litellm_early()

    @observe("default_model", "embedding_model")
    def _default_model_changed(self, change: dict[str, Any]) -> None:
        self._import_litellm_early()

    def _import_litellm_early(self) -> None:
        """Start importing litellm in the background if new agents would call a provider (a
        model or an embedding model), so that their first answer does not wait seconds for it;
        never for the offline model alone."""
        embedding = llm.embedding_model(self.embedding_model or None)
        if not llm.is_offline(self._model(None)) or (embedding and not llm.is_offline(embedding)):
            llm.import_in_background()

    @validate("recall_budget")
    def _check_recall_budget(self, proposal: dict[str, Any]) -> int:
        if proposal["value"] < 1:
            raise TraitError(f"recall_budget must be a positive number, not {proposal['value']}")
        return proposal["value"]

    @validate("store")
    def _check_store(self, proposal: dict[str, Any]) -> str:
        return checked_store(proposal["value"], "NbMemoryMagics.store")

    @validate("notes_approval")
    def _check_approval(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value and value not in APPROVALS:
            choices = ", ".join(repr(a) for a in ("", *APPROVALS))
            raise TraitError(f"NbMemoryMagics.notes_approval must be one of {choices}")
        return value

    @observe("store")
    def _store_changed(self, change: dict[str, Any]) -> None:
        """Agents made on the old store are dropped: the next cell resumes them from the new."""
        for agent in self.agents.values():
            agent.short_memory.close()
        self.agents.clear()

    # ------------------------------------------------------------------------------------------
    # Helpers

    def _workspace(self) -> Workspace:
        """The workspace of the settings, read now: ``workspace`` (else ``$WORKSPACE_DIR``)
        on ``store`` (else ``$NBMEMORY_STORE``)."""
        found = Workspace.from_env(Path(self.workspace) if self.workspace else None)
        return Workspace(found.root, self.store) if self.store else found

    def _model(self, asked: str | None) -> str:
        return asked or self.default_model or llm.default_model()

    def _agent(self, args: Any) -> Agent:
        """The agent called ``args.name``, created or started afresh as the options ask."""
        name = folders.validate_agent_name(args.name)
        wanted = {
            "model_name": self._model(args.model),
            "persistent_memory": self.persistent and not args.ephemeral,
            "system_prompt": args.system,
            "recall": self.recall and not args.no_recall,
        }
        embedding = llm.embedding_model(self.embedding_model or None)
        options = {"api_base": self.embedding_api_base} if self.embedding_api_base else {}
        agent = self.agents.get(name)
        if agent is not None and (
            agent.model_name != wanted["model_name"]
            or agent.persistent_memory != wanted["persistent_memory"]
            or agent.recall != (wanted["recall"] and wanted["persistent_memory"])
            or (args.system is not None and agent.system_prompt != args.system)
        ):
            agent.short_memory.close()
            agent = None
        if agent is None:
            agent = Agent(
                agent_name=name,
                api_base=self.api_base or None,
                workspace=self._workspace(),
                **wanted,
            )
            self.agents[name] = agent
        agent.embedding_model, agent.embedding_options = embedding or None, options
        agent.recall_budget = self.recall_budget
        agent.notes_approval = self.notes_approval or None
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

    def cell_started(self, info: Any) -> None:
        """IPython's ``pre_run_cell`` event: keep the id of the cell about to run (ipykernel
        passes on the ``cellId`` of JupyterLab's request; ``None`` from other clients)."""
        cell_id = getattr(info, "cell_id", None)
        self._cell_id = cell_id if isinstance(cell_id, str) and cell_id else None

    def _provenance(self) -> Provenance | None:
        """The cell running now, as its kernel knows it: the notebook the Jupyter server
        started the kernel for (``$JPY_SESSION_NAME``, under the root the nbmemory server
        extension exports as ``$NBMEMORY_SERVER_ROOT``), the cell's id, its execution count,
        and the kernel's session (a restart changes it); ``None`` outside a kernel."""
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None:
            return None
        session = getattr(getattr(kernel, "session", None), "session", None)
        return Provenance(
            notebook=notebook_path(
                os.environ.get("JPY_SESSION_NAME"), os.environ.get(SERVER_ROOT_ENV)
            ),
            cell_id=self._cell_id,
            execution_count=self._execution_count(),
            session=session if isinstance(session, str) and session else None,
        )

    def _execution_count(self) -> int | None:
        """The running cell's ``[n]``: the number IPython stored its input under (during the
        cell, ``shell.execution_count`` is already the next one from IPython 9 on)."""
        inputs = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        if isinstance(inputs, list) and len(inputs) > 1:
            return len(inputs) - 1
        count = getattr(self.shell, "execution_count", None)
        return count if isinstance(count, int) else None

    def _task(self, cell: str, variables: list[str] | None) -> str:
        if not cell.strip():
            raise UsageError("%%agent: the cell is empty; write the task below the %%agent line")
        parts = [cell.removesuffix("\n")]  # IPython ends every cell with a line break
        for name in variables or []:
            if name not in self.shell.user_ns:
                raise UsageError(f"--var: there is no variable named {name!r} in the notebook")
            parts.append(f"{name} =\n```\n{self.shell.user_ns[name]}\n```")
        return "\n\n".join(parts)

    def _reader(self) -> ReadModel:
        return ReadModel(self._workspace())

    def _widget(self, name: str, **options: Any) -> Any:
        from nbmemory.jupyter.widget import MemoryWidget

        return MemoryWidget(
            name, workspace=self._workspace(), agent=self.agents.get(name), **options
        )

    def _in_ram(self, name: str) -> Agent | None:
        """The kernel's agent ``name`` if its memory is kept in RAM only."""
        agent = self.agents.get(folders.validate_agent_name(name))
        return agent if agent is not None and agent.short_memory.memory_md_path is None else None

    def _compactor(self, name: str) -> Agent:
        """The kernel's agent ``name``, or one built on its memory with its recorded model."""
        agent = self.agents.get(name)
        if agent is None:
            agent = Agent.from_memory(
                name, self._workspace(), self._model(None), api_base=self.api_base or None
            )
            self.agents[name] = agent
        return agent

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
    @argument(
        "--no-recall", action="store_true", help="do not let it search its memory and archives"
    )
    @argument(
        "-w",
        "--widget",
        action="store_true",
        help="show the live memory widget after the answer (a one-line summary; expand it)",
    )
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

        An agent with persistent memory can search everything it was told, archives
        included, with its ``recall_memory`` tool; ``--no-recall`` turns that off for the cell.
        Each message of the run records the cell it came from (the notebook, the cell's id, its
        ``[n]`` and the kernel's session) beside MEMORY.md: ``%memory NAME`` and recall name
        it, and a cell run again marks its earlier run's messages as superseded.

        Examples::

            %%agent ResearchAgent
            Which warehouse suits low-latency dashboards?

            %%agent ResearchAgent --tools search_docs --max-loops auto --var budget
            Check the docs for a warehouse within our budget.
        """
        args = parse_argstring(self.agent, line)
        args.name = _unquoted(args.name)
        args.system = _unquoted(args.system)
        if not llm.is_offline(self._model(args.model)):
            # The first call needs litellm: let an import begun by %load_ext end before this
            # cell imports anything, as two threads importing the same packages can fail on
            # their circular imports.
            llm.litellm()
        agent = self._agent(args)
        task = self._task(cell, args.var)
        agent.check_ready()
        widget = self._widget(agent.agent_name, expanded=False) if args.widget else None
        compressor = agent._context_compressor
        seen = compressor.last_compaction if compressor is not None else None
        answer = self._run(agent, task, stream=self.stream and not args.no_stream, widget=widget)
        if compressor is not None and compressor.last_compaction is not seen:
            from IPython.display import display

            assert compressor.last_compaction is not None
            display(
                self._compacted(agent.agent_name, compressor.last_compaction, "This run compacted")
            )
        waiting = _waiting(self._reader(), agent.agent_name) if agent.notes is not None else ""
        if waiting:
            from IPython.display import display

            display(TextBlock(waiting))
        if answer is None:
            return None
        if args.out:
            self.shell.user_ns[args.out] = str(answer)
        return answer

    def _run(self, agent: Agent, task: str, *, stream: bool, widget: Any = None) -> Answer | None:
        """Run the task, drawing the answer as it arrives; ``None`` if interrupted.

        ``widget`` is shown after the answer: in a notebook at once, under the answer's
        display (so it follows the run live), its static summary (what a notebook opened
        without this kernel shows) drawn again once the run is over; in a terminal once the
        answer is printed.
        """
        from IPython.display import display

        header = f"**{agent.agent_name}** · `{agent.model_name}`"
        live = bool(getattr(self.shell, "kernel", None))
        draw = _Live(header) if live else _Printed(header)
        summary = None
        if widget is not None and live:  # as MemoryWidget._ipython_display_, with a handle
            summary = display(
                widget._static_bundle(),
                metadata=widget._static_metadata(),
                raw=True,
                display_id=True,
            )
            display(widget._view_bundle(), raw=True)
        try:
            try:
                text = agent.run(
                    task,
                    streaming_callback=draw.add if stream else None,
                    provenance=self._provenance(),
                )
            except KeyboardInterrupt:
                draw.finish(draw.text + "\n\n*Interrupted: this unfinished answer was not saved.*")
                return None
            draw.finish(text)
            return Answer(text, shown=True)
        finally:
            if summary is not None:
                widget.refresh()
                summary.update(
                    widget._static_bundle(), metadata=widget._static_metadata(), raw=True
                )
            elif widget is not None:
                display(widget)

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
    @argument("--notes", action="store_true", help="show its pinned notes")
    @argument("--pin", metavar="NOTE", help="pin a note: every request carries it")
    @argument("--unpin", metavar="NOTE", help="unpin a note: its number, or words found in it")
    @argument("--accept", type=int, metavar="N", help="apply note edit N, which waits for review")
    @argument("--reject", type=int, metavar="N", help="drop note edit N, which waits for review")
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
            %memory ResearchAgent --pin "Budget: 40k EUR, fixed."
            %memory ResearchAgent --notes            # pinned notes, never compacted
            %memory ResearchAgent --unpin 1
            %memory ResearchAgent --accept 3         # a note edit the model proposed
        """
        args = parse_argstring(self.memory, line)
        args.name = _unquoted(args.name)
        args.search, args.export = _unquoted(args.search), _unquoted(args.export)
        if args.name is None:
            return AgentTable(self._reader().agents())
        name = args.name
        if args.widget:
            folders.validate_agent_name(name)
            return self._widget(name)
        ram = self._in_ram(name)
        if ram is not None:
            return _ram_view(ram, args)
        reader = self._reader()
        if any(v is not None for v in (args.pin, args.unpin, args.accept, args.reject)):
            reader.agent(name)
            notes = Notes(reader.workspace.agent(name))
            by = person("magic")
            if args.accept is not None:
                notes.accept(args.accept, by=by)
            if args.reject is not None:
                notes.reject(args.reject, by=by)
            if args.unpin is not None:
                notes.remove(_unquoted(args.unpin), by=by)
            if args.pin is not None:
                notes.add(_unquoted(args.pin), by=by)
            args.notes = True
        if args.notes:
            shown = listing(reader.notes(name)) or f"{name} has no pinned notes"
            waiting = _waiting(reader, name)
            return TextBlock(f"{shown}\n\n{waiting}" if waiting else shown)
        if args.path:
            path = reader.agent(name).path
            if reader.store != "files":
                return TextBlock(f"(kept in the database {reader.store}, not in a file)")
            return TextBlock(str(path))
        if args.tokens:
            return TextBlock(usage_line(name, reader.usage(name)))
        if args.search is not None:
            found = reader.search(
                name, args.search, archives=args.archives, limit=sys.maxsize, fold=FOLD_CHARS
            )
            title = f"{counted(found.total, 'message')} of {name} contain {args.search!r}"
            return MessageList(title, found.items, sources=True)
        if args.export:
            return TextBlock(
                f"Wrote {_export(name, reader.records(name), args.export, args.format)}"
            )
        if args.list_archives:
            lines = [f"{a.name}  ({a.messages} messages)" for a in reader.archives(name)]
            return TextBlock("\n".join(lines) or f"{name} has no archives yet")
        if args.archive:
            page = reader.archive_messages(name, args.archive, limit=sys.maxsize, fold=FOLD_CHARS)
            return MessageList(f"{args.archive} ({counted(page.total, 'message')})", page.items)
        page = reader.messages(name, limit=sys.maxsize, newest_first=False, fold=FOLD_CHARS)
        return MessageList(f"{name}: {counted(page.total, 'message')}", page.items)

    # ------------------------------------------------------------------------------------------
    # %compact

    @magic_arguments()
    @argument("name", help="the agent to compact")
    @argument("--summary", help="use this text as the summary instead of asking the model")
    @argument(
        "--preview",
        action="store_true",
        help="show the summary, the tokens before and after and what it would drop; change nothing",
    )
    @argument(
        "--keep",
        action="append",
        metavar="TERM",
        help="a name, number or identifier the summary must keep word for word (repeatable)",
    )
    @no_var_expand
    @line_magic
    @_usage_errors
    def compact(self, line: str) -> TextBlock:
        """Replace an agent's memory with a summary; the raw transcript goes to its archive.

        Without ``--summary`` the agent's model writes the summary (its context compressor),
        ending with the identifiers, numbers and dates it dropped, as many as fit. ``--preview``
        shows that summary, the tokens before and after and what it would still drop, changing
        nothing; the next ``%compact NAME`` then writes the summary shown, if the memory did
        not change meanwhile. ``--keep TERM`` (repeatable) names what must be kept.

        Examples::

            %compact ResearchAgent --preview --keep ACME-42
            %compact ResearchAgent
            %compact ResearchAgent --summary "User prefers GCP; shortlist BigQuery, AlloyDB."
        """
        args = parse_argstring(self.compact, line)
        args.name = _unquoted(args.name)
        summary = _unquoted(args.summary)
        keep = [_unquoted(term) or "" for term in args.keep or []]
        if summary is not None and not summary.strip():
            raise UsageError("--summary must not be empty")
        reader = self._reader()
        reader.agent(args.name)  # AgentNotFoundError before an agent is built or anything written
        agent = self._compactor(args.name)
        shown = self._previews.pop(args.name, None)
        try:
            if args.preview:
                plan = self._previews[args.name] = agent.compact_preview(keep)
                then = f"%compact {args.name} writes this summary."
                return TextBlock(preview_report(args.name, plan, then))
            fresh = shown is not None and shown.fresh(agent)
            usable = fresh and summary is None and not keep
            compaction = agent.compact(summary, keep=keep, plan=shown if usable else None)
        except CompactionError as exc:
            raise UsageError(str(exc)) from None
        return self._compacted(args.name, compaction, "Compacted")

    def _compacted(self, name: str, compaction: Compaction, what: str) -> TextBlock:
        """What a compaction did, as ``%compact`` and a run that compacted report it."""
        archive, left_out = compaction.archive, compaction.missing
        done = self._reader().compactions(name) if archive else []
        report = compacted_line(name, archive.name if archive else None, done, what)
        if left_out:
            shown = ", ".join(left_out[:12]) + (", …" if len(left_out) > 12 else "")
            report += f"\nLeft out of the summary (still in the archive): {shown}"
        return TextBlock(report)


class _Live:
    """An answer drawn in one notebook display that is redrawn as pieces arrive."""

    def __init__(self, header: str) -> None:
        from IPython.display import display

        self.header = header
        self.handle = display(self._bundle(""), raw=True, display_id=True)
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

    def _bundle(self, text: str) -> dict[str, str]:
        return safe_bundle(f"{self.header}\n\n{text}")

    def finish(self, text: str) -> None:
        self.handle.update(self._bundle(text), raw=True)


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


def _export(name: str, messages: list[dict[str, Any]], path: str, form: str | None) -> Path:
    """Write ``messages`` of agent ``name`` to ``path`` as JSON, YAML or Markdown."""
    target = Path(os.path.expanduser(path))
    return write_atomic(target, export_text(name, messages, form or format_of(target)))


def _waiting(reader: ReadModel, name: str) -> str:
    """The note edits of agent ``name`` that wait for a person's review, with the ``%memory``
    commands that settle them; ``""`` if none."""
    waiting = [(c.n, c.describe()) for c in reader.waiting_notes(name)]
    return review_words(waiting, f"%memory {name}")


def _ram_view(agent: Agent, args: Any) -> Any:
    """What ``%memory`` shows of an agent whose memory is in RAM only (``--ephemeral``)."""
    convo = agent.short_memory
    name = agent.agent_name
    if args.path:
        return TextBlock("(kept in RAM only)")
    if args.tokens:
        return TextBlock(usage_line(name, usage_in_ram(convo, agent)))
    if args.export:
        return TextBlock(f"Wrote {_export(name, convo.to_dict(), args.export, args.format)}")
    if args.search is not None:
        hits = convo.search_memory(args.search)
        title = f"{counted(len(hits), 'message')} of {name} contain {args.search!r}"
        return MessageList(
            title,
            to_items(((h.index, h.message) for h in hits), "history", FOLD_CHARS),
            sources=True,
        )
    if args.list_archives or args.archive:
        raise UsageError(f"{name} keeps its memory in RAM only: it has no archives")
    messages = convo.to_dict()
    return MessageList(
        f"{name}: {counted(len(messages), 'message')}",
        to_items(enumerate(messages), "history", FOLD_CHARS),
    )


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics (``%load_ext nbmemory``)."""
    magics = NbMemoryMagics(ipython)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)
    ipython.events.register("pre_run_cell", magics.cell_started)


def unload_ipython_extension(ipython: Any) -> None:
    """Forget the magics and close the agents' files (``%unload_ext nbmemory``)."""
    for magics in [m for m in ipython.configurables if isinstance(m, NbMemoryMagics)]:
        with contextlib.suppress(ValueError):
            ipython.events.unregister("pre_run_cell", magics.cell_started)
        for agent in magics.agents.values():
            agent.short_memory.close()
        ipython.configurables.remove(magics)
    for kind in ("line", "cell"):
        for name in ("agent", "memory", "compact"):
            ipython.magics_manager.magics[kind].pop(name, None)
