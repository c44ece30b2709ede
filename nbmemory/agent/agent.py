"""``Agent``: a model, its memory, its tools, and the loop that runs a task.

The model receives, in order: the system prompt, the rules, the custom rules, the memory
preloaded from MEMORY.md, the history of this session, and the task. The compression check
runs at the top of every loop iteration, before the request is built.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from nbmemory.agent.compressor import CompactionPlan, ContextCompressor
from nbmemory.agent.request_parts import next_request_parts
from nbmemory.agent.tools import Tool, ToolBox
from nbmemory.errors import CompactionError, MemoryFormatError
from nbmemory.memory.compactions import Compaction
from nbmemory.memory.conversation import Conversation
from nbmemory.memory.note_history import APPROVALS, Author
from nbmemory.memory.notes import MARKER as NOTES_MARKER
from nbmemory.memory.notes import PROMPT_LINE as NOTES_LINE
from nbmemory.memory.notes import TOOL_NAME as NOTES_TOOL
from nbmemory.memory.notes import Notes, notes_tool
from nbmemory.memory.provenance import Provenance
from nbmemory.memory.run_settings import (
    RunSettings,
    default_settings,
    read_settings,
    reply_room,
    write_settings,
)
from nbmemory.models import llm
from nbmemory.recall import DEFAULT_BUDGET as RECALL_BUDGET
from nbmemory.recall import PROMPT_LINE as RECALL_LINE
from nbmemory.recall import RECALL_TOOLS, RecallSession, follow_up_tools, recall_tool
from nbmemory.store import Workspace
from nbmemory.store.docs import AgentDocs
from nbmemory.store.folders import (
    MEMORY_FILE,
    agent_folder,
    check_folder,
    make_private_dir,
    validate_agent_name,
)
from nbmemory.store.memory_format import encoded
from nbmemory.tokens import TokenCounter, context_window

DEFAULT_AGENT_NAME = "swarm-worker-01"
AUTO_LOOP_LIMIT = 25
"""With ``max_loops="auto"``, the most model calls one ``run`` makes (a guard against loops)."""
TOOL_ROLE = "Tool"
MEMORY_TOOLS = (*sorted(RECALL_TOOLS), NOTES_TOOL)
MEMORY_CALLS_PER_RUN = 3
"""Model calls that only recall or edit notes a run makes on top of ``max_loops``."""


class Agent:
    """An LLM agent whose memory can persist in ``$WORKSPACE_DIR/agents/<agent_name>/MEMORY.md``.

    With persistent memory every message is written through to ``MEMORY.md`` as it happens, a
    new process resumes from it, and the model also gets ``recall_memory`` (search its memory
    and archives, then ``recall_around`` and ``recall_between`` to follow a passage up) and
    ``edit_notes`` (its pinned notes, which every request carries). Every
    change to the notes is recorded. The arguments are swarms' where swarms has them.

    Args:
        agent_name: Names the memory's folder: one folder name (no separators, no ``..``, no
            control characters, at most 255 bytes). Agents left unnamed share one memory.
        agent_description: Stored and saved; not sent to the model.
        system_prompt: The first message of every request.
        model_name: Any litellm model; default ``$NBMEMORY_MODEL``, else the offline model
            ``nbmemory/offline`` (no key, no network).
        max_loops: Model calls per :meth:`run`, or ``"auto"``: until the model answers without
            calling a tool (at most ``AUTO_LOOP_LIMIT`` calls).
        persistent_memory: Keep the memory in the workspace (``MEMORY.md`` and the files beside
            it); otherwise it lives in this process only.
        context_compression: Compact the memory (archive, then summarize) when the next request
            nears ``context_length``, with a :class:`~nbmemory.agent.compressor.ContextCompressor`.
        context_length: The window in tokens; ``None`` is the model's own.
        tools: Python functions (their signature and docstring make the schema) or ``Tool``
            objects the model may call; see :meth:`set_tools`.
        rules: Rules added to the system prompt of every request.
        custom_rules_prompt: Further rules after ``rules``, as swarms names them.
        long_term_memory: Only stored, and saved by :meth:`save` on ``autosave``; give the
            agent a retrieval tool for knowledge it must read.
        autosave: Save the agent's state (:meth:`save`) after each run.
        temperature: Passed to the model; ``None`` leaves the provider's default.
        max_tokens: The longest answer asked for; also the room a request keeps for it.
        api_base: The provider's endpoint (an OpenAI-compatible server, a proxy).
        api_key: The provider's key; default the provider's variable (a clear error names it).
        timeout: Seconds a model call may take.
        max_retries: Retries of a failed model call (rate limits, a provider's errors).
        user_name: The role a task is added under.
        streaming_callback: Called with each piece of a streamed answer.
        workspace_dir: The workspace folder, instead of ``$WORKSPACE_DIR``.
        workspace: A :class:`Workspace` (a folder on files, or a database), instead of the
            environment's.
        recall: Give the model ``recall_memory``, ``recall_around`` and ``recall_between``
            (with persistent memory).
        recall_budget: Tokens one recall answer takes at most (its model's tokenizer); the
            recall answers of one run take at most ``RUN_BUDGET_CALLS`` times it.
        embedding_model: Makes recall rank by meaning too: default
            ``$NBMEMORY_EMBEDDING_MODEL``, else ``"nbmemory/words"`` (word vectors shipped with
            nbmemory, nothing sent); any litellm embedding model, its vectors kept beside the
            memory; ``""`` or ``"none"`` for recall by words alone.
        embedding_options: Passed to ``litellm.embedding`` (``api_base``, ``api_key``,
            ``timeout``...).
        pinned_notes: Give the model ``edit_notes``; ``False`` removes the tool, not the notes.
        notes_approval: Whether the model's note edits wait for a person's review (the
            default) or apply at once (``"auto"``, recorded as applied without review); see
            :attr:`notes_approval`.
        saved_state_path: Where :meth:`save` and :meth:`load` go by default.
        print_on: Print each final answer (off unless asked for: notebooks show answers).
        verbose: Log saves and loads (``logging``, logger ``nbmemory``).
        record_settings: Keep ``settings.json`` (model, window, fixed costs) and the memory's
            token counts in step for the views; off for an agent made only to act on a memory.

    Raises:
        InvalidAgentNameError: ``agent_name`` cannot name a folder.
        ValueError: ``max_loops`` or ``recall_budget`` is not a positive number.
    """

    def __init__(
        self,
        agent_name: str = DEFAULT_AGENT_NAME,
        agent_description: str | None = None,
        system_prompt: str | None = None,
        model_name: str | None = None,
        max_loops: int | Literal["auto"] = 1,
        persistent_memory: bool = False,
        context_compression: bool = True,
        context_length: int | None = None,
        tools: Sequence[Callable[..., Any] | Tool] | None = None,
        rules: str | None = None,
        custom_rules_prompt: str | None = None,
        long_term_memory: Any = None,
        autosave: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float | None = 600,
        max_retries: int = 2,
        user_name: str = "User",
        streaming_callback: Callable[[str], None] | None = None,
        workspace_dir: str | os.PathLike[str] | None = None,
        workspace: Workspace | None = None,
        recall: bool = True,
        recall_budget: int = RECALL_BUDGET,
        embedding_model: str | None = None,
        embedding_options: Mapping[str, Any] | None = None,
        pinned_notes: bool = True,
        notes_approval: str | None = None,
        saved_state_path: str | None = None,
        print_on: bool = False,
        verbose: bool = False,
        record_settings: bool = True,
    ) -> None:
        validate_agent_name(agent_name)
        self.record_settings = record_settings
        """Whether it keeps ``settings.json`` and its memory's token counts in step (off for an
        agent made only to act on a memory, whose settings are not what the memory's agent runs
        with, and which a view may make only to look)."""
        if max_loops != "auto" and (not isinstance(max_loops, int) or max_loops < 1):
            raise ValueError(f'max_loops must be a positive int or "auto", not {max_loops!r}')
        if persistent_memory and agent_name == DEFAULT_AGENT_NAME:
            warnings.warn(
                f"persistent_memory=True with the default agent_name {DEFAULT_AGENT_NAME!r}: every "
                "agent left unnamed shares that memory; pass agent_name=",
                stacklevel=2,
            )
        self.agent_name = agent_name
        self.agent_description = agent_description
        self.system_prompt = system_prompt
        self.model_name = model_name or llm.default_model()
        self.max_loops = max_loops
        self.persistent_memory = persistent_memory
        self.context_length = context_length or context_window(self.model_name)
        self.rules = rules
        self.custom_rules_prompt = custom_rules_prompt
        self.long_term_memory = long_term_memory
        self.autosave = autosave
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.user_name = user_name
        self.streaming_callback = streaming_callback
        self.stream_observers: list[Callable[[str], None]] = []
        """Also called with each piece of a streamed answer (the widget listens here)."""
        self._workspace = workspace
        self.workspace_dir = workspace.root if workspace is not None else workspace_dir
        self.saved_state_path = saved_state_path
        self.print_on = print_on
        self.verbose = verbose
        self.recall = recall and persistent_memory
        """Whether the model may search this agent's memory and archives (``recall_memory``)."""
        self.embedding_model = llm.embedding_model(embedding_model) or None
        """The embedding model recall ranks by meaning with (any litellm name, or the offline
        word vectors ``nbmemory/words``), or ``None``."""
        self.embedding_options = dict(embedding_options or {})
        if not isinstance(recall_budget, int) or recall_budget < 1:
            raise ValueError(f"recall_budget must be a positive int, not {recall_budget!r}")
        self.recall_budget = recall_budget
        """Tokens recall's answer takes at most: the passages that fit, then where the others
        found are kept and how many more matched."""
        self._semantic: Any = None
        docs = self.workspace.agent(agent_name) if persistent_memory else None
        path = docs.path(MEMORY_FILE) if docs is not None else None
        self.notes = Notes(docs, model=self.model_name) if docs is not None else None
        """The pinned notes every request carries (``None`` without persistent memory)."""
        self.pinned_notes = pinned_notes and self.notes is not None
        """Whether the model may edit its notes (``edit_notes``)."""
        self.notes_approval = notes_approval
        self._run_task: str | None = None
        counter = TokenCounter(self.model_name)
        self.recall_session = RecallSession(lambda: self.recall_budget, counter.count)
        """What the recall tools share across one run: its budget, the passages shown."""
        self.set_tools(tools or ())
        lines = [
            *([system_prompt] if system_prompt else []),
            *([RECALL_LINE] if self.recall else []),
            *([NOTES_LINE] if self.pinned_notes else []),
        ]
        self.short_memory = Conversation(
            name=agent_name,
            system_prompt="\n\n".join(lines) if lines else None,
            rules=rules,
            custom_rules_prompt=custom_rules_prompt,
            user=user_name,
            tokenizer_model_name=self.model_name,
            context_length=self.context_length,
            memory_md_path=path,
            workspace=self._workspace,
        )
        self.short_memory.keeps_counts = record_settings
        self._context_compressor = ContextCompressor() if context_compression else None
        self._recorded: RunSettings | None = None
        self._stands_in: RunSettings | None = None
        """What the memory's own agent recorded, while this one only acts on its memory
        (:meth:`from_memory`): its requests carry that agent's prompt, rules and tools."""
        self._session = self._session_now()
        self.short_memory.on_change(self._compacted)
        if docs is not None and read_settings(docs) is None:
            self._record_settings()  # later records are made when it runs

    @property
    def workspace(self) -> Workspace:
        """Where this agent's memory is kept: the workspace given, else the environment's
        (``$WORKSPACE_DIR`` and ``$NBMEMORY_STORE``, read once) over ``workspace_dir``."""
        if self._workspace is None:
            self._workspace = Workspace.from_env(self.workspace_dir)
        return self._workspace

    def __repr__(self) -> str:
        return f"Agent(agent_name={self.agent_name!r}, model_name={self.model_name!r})"

    @classmethod
    def from_memory(
        cls, name: str, workspace: Workspace, default_model: str | None = None, **options: Any
    ) -> Agent:
        """An agent on the memory agent ``name`` has in ``workspace``: how a view acts on a
        memory whose agent is not in this process.

        Args:
            name: The agent's name.
            workspace: Where its memory is kept.
            default_model: The model when the agent recorded none (else the default model).
            **options: Passed to the constructor.

        Returns:
            The agent, with the model and window it recorded; until it runs, its requests are
            counted with the fixed parts recorded (system prompt, rules, tool schemas, reply
            room), or with the default settings if none were, as every view counts them: it
            has none of that agent's prompt and tools.
        """
        recorded = read_settings(workspace.agent(name))
        settings: dict[str, Any] = {"model_name": default_model}
        if recorded is not None:
            settings = {"model_name": recorded.model, "context_length": recorded.context_length}
        agent = cls(
            **{
                "agent_name": name,
                "persistent_memory": True,
                "workspace": workspace,
                **settings,
                **options,
            }
        )
        agent._stands_in = recorded or default_settings(agent.model_name)
        return agent

    def compact(
        self,
        summary: str | None = None,
        keep: Sequence[str] = (),
        plan: CompactionPlan | None = None,
    ) -> Compaction:
        """Compact this agent's memory now. The raw transcript is archived first, and what was
        done is recorded beside the archive, whoever compacts.

        Args:
            summary: Replaces the memory; without one, the compressor's model writes it.
            keep: Terms to carry word for word into the model's summary.
            plan: A :meth:`compact_preview` a person approved: carried out as shown, or with
                ``summary`` as they edited it.

        Returns:
            The record: the archive, the next request's tokens before and after, and the terms
            the summary left out, measured as :meth:`compact_preview` measures them.

        Raises:
            CompactionError: Nothing changed: there is no summary to write, nothing to compact,
                or the memory changed since ``plan``.
        """
        compressor = self._context_compressor
        if summary is not None:
            if not summary.strip():
                raise CompactionError("a summary must not be empty")
            encoded(summary, "summary")  # refused before anything is counted or kept
        if plan is None and summary is None and compressor is None:
            raise CompactionError(
                f"{self.agent_name} was not compacted: its context compression is off"
            )
        measuring = compressor or ContextCompressor()  # a given summary needs no summarizer
        if plan is not None:
            plan.check(self)
            if summary is not None and summary.strip() != plan.summary.strip():
                plan = measuring.with_summary(self, plan, summary)
        elif summary is not None:
            plan = measuring.given(self, summary)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            written = measuring.compress(self, keep=keep, plan=plan)
        if written is None or measuring.last_compaction is None:
            reason = str(caught[-1].message) if caught else "the compressor gave up"
            raise CompactionError(f"{self.agent_name} was not compacted: {reason}")
        return measuring.last_compaction

    def compact_preview(
        self,
        keep: Sequence[str] = (),
        *,
        summary: str | None = None,
        plan: CompactionPlan | None = None,
    ) -> CompactionPlan:
        """What :meth:`compact` would do now, changing nothing.

        Args:
            keep: Terms a person wants kept word for word in the model's summary.
            summary: A person's edit of the model's summary: the plan writes it instead, and
                what it drops and the tokens after are measured for it.
            plan: An earlier preview whose ``summary`` is measured again: the model is not
                asked for a new summary.

        Returns:
            The plan: the summary, the next request's tokens before and after, and the terms it
            would drop; pass it to :meth:`compact` to carry it out.

        Raises:
            CompactionError: There is nothing to compact, no summary could be written, or the
                memory changed since ``plan``.
        """
        compressor = self._context_compressor
        if compressor is None:
            raise CompactionError(f"{self.agent_name}: its context compression is off")
        if plan is None:
            plan = compressor.preview(self, keep=keep)
        else:
            plan.check(self)
        return plan if summary is None else compressor.with_summary(self, plan, summary)

    def check_ready(self) -> None:
        """Raise ``MissingKeyError`` (naming the variable to set) if the model cannot be called."""
        llm.check_key(self.model_name, self.api_key, self.api_base)

    def set_tools(self, tools: Sequence[Callable[..., Any] | Tool]) -> None:
        """Replace the tools the model may call (the memory tools stay, when they are on)."""
        builtin: list[Callable[..., Any]] = []
        if self.recall:
            session = self.recall_session
            builtin.append(recall_tool(self._memory_folder, self.semantic_index, session))
            builtin += follow_up_tools(self._memory_folder, session)
        if self.pinned_notes:
            builtin.append(notes_tool(lambda: self.notes, self.approval_now, self._note_author))
        self.tools = ToolBox([*tools, *builtin])
        self._tool_schemas = self.tools.schemas()
        self._schema_tokens: int | None = None

    def _memory_folder(self) -> AgentDocs | None:
        return self.short_memory.docs

    def semantic_index(self) -> Any:
        """The vectors recall ranks this agent's messages by meaning with (an
        ``embeddings.SemanticIndex``, made at the first recall), or ``None`` without an
        embedding model or a memory on disk."""
        docs = self.short_memory.docs
        if not self.embedding_model or docs is None:
            return None
        wanted = (docs, self.embedding_model, self.embedding_options)
        if self._semantic is None or self._semantic[0] != wanted:
            from nbmemory.recall.embeddings import SemanticIndex  # numpy, only when it is wanted

            made = SemanticIndex(docs, self.embedding_model, self.embedding_options)
            self._semantic = (
                (docs, self.embedding_model, dict(self.embedding_options)),
                made,
            )
        return self._semantic[1]

    @property
    def notes_approval(self) -> str | None:
        """How the model's note edits are taken: ``"auto"`` (applied, each recorded as applied
        without review), ``"ask"`` (proposed, for a person to accept or reject) or ``"off"``
        (refused); ``None``: what a person set for this memory, else ``"ask"``. Text can reach
        the model from anyone (a fetched page, a summary or a recall that carries one, a
        message an MCP client added), so only a person's explicit choice pins unreviewed."""
        return self._notes_approval

    @notes_approval.setter
    def notes_approval(self, value: str | None) -> None:
        if value is not None and value not in APPROVALS:
            raise ValueError(
                f"notes_approval must be one of {', '.join(map(repr, APPROVALS))} or None, "
                f"not {value!r}"
            )
        self._notes_approval = value

    def approval_now(self) -> str:
        """How a note edit by the model would be taken now: :attr:`notes_approval`, else what a
        person set for this memory (``nbmemory notes NAME --approval``, the panel), else the
        default, ``"ask"``."""
        if self._notes_approval is not None:
            return self._notes_approval
        stored = self.notes.approval() if self.notes is not None else None
        return stored or "ask"

    def foreign_results(self) -> tuple[str, ...]:
        """Tools (other than the memory tools) whose results the model's context holds."""
        memory = self.short_memory
        found: dict[str, None] = {}
        for message in [*memory.preloaded_messages, *memory.conversation_history]:
            content = message["content"]
            if message["role"] == TOOL_ROLE and isinstance(content, dict):
                name = str(content.get("name") or "an unnamed tool")
                if name not in MEMORY_TOOLS:
                    found[name] = None
        return tuple(found)

    def _note_author(self) -> Author:
        return Author("model", NOTES_TOOL, run=self._run_task, after=self.foreign_results())

    # ------------------------------------------------------------------------------------------
    # What the model sees

    def request_messages(self) -> list[dict[str, Any]]:
        """The conversation as the OpenAI messages of the next request.

        The pinned notes, as the file holds them, follow the system prompt and rules.
        """
        messages = [self._wire(message) for message in self.short_memory.conversation_history]
        pinned = self.notes.text() if self.notes is not None else ""
        if pinned.strip():
            at = len(self.short_memory.static_messages())
            messages.insert(at, {"role": "system", "content": f"{NOTES_MARKER}\n{pinned}"})
        return messages

    def next_request_tokens(self) -> int:
        """What the next request costs: history, pinned notes, tool schemas, room for the reply.

        The history is counted as MEMORY.md holds it (``Conversation.context_tokens``), and
        the parts are added up as every view adds them (``next_request_parts``): the figure
        the views show, and the one compression compares with its threshold.
        """
        memory = self.short_memory
        history = memory.context_tokens() - memory.static_tokens()
        return sum(tokens for _, tokens in next_request_parts(self, history))

    def _wire(self, message: dict[str, Any]) -> dict[str, Any]:
        role, content = message["role"], message["content"]
        if role.lower() == "system":
            return {"role": "system", "content": _text(content)}
        if role in (self.agent_name, "assistant"):
            if isinstance(content, dict) and "tool_calls" in content:
                return {
                    "role": "assistant",
                    "content": content.get("content") or None,
                    "tool_calls": content["tool_calls"],
                }
            return {"role": "assistant", "content": _text(content)}
        if role == TOOL_ROLE and isinstance(content, dict) and "tool_call_id" in content:
            return {
                "role": "tool",
                "tool_call_id": content["tool_call_id"],
                "content": _text(content.get("content")),
            }
        return {"role": "user", "content": _text(content)}

    def request_overhead_tokens(self) -> int:
        """Tokens a request needs besides the history: tool schemas and room for the reply."""
        return self.tool_tokens() + reply_room(self.context_length, self.max_tokens)

    def tool_tokens(self) -> int:
        """Tokens of the tool schemas every request carries."""
        if self._schema_tokens is None:
            schemas = TokenCounter(self.model_name).count(json.dumps(self._tool_schemas))
            self._schema_tokens = schemas if self._tool_schemas else 0
        return self._schema_tokens

    def run_settings(self) -> RunSettings:
        """The model, window, threshold and fixed token costs this agent runs with now: those
        its memory's agent recorded while it only acts on that memory (:meth:`from_memory`)."""
        compressor = self._context_compressor
        ran = self._stands_in
        if ran is not None:
            return dataclasses.replace(
                ran,
                model=self.model_name,
                context_length=self.context_length,
                threshold=compressor.threshold if compressor is not None else None,
                session=self._session,
            )
        return RunSettings(
            model=self.model_name,
            context_length=self.context_length,
            threshold=compressor.threshold if compressor is not None else None,
            encoding=self.short_memory.encoding_name,
            static_tokens=self.short_memory.static_tokens(),
            overhead_tokens=self.request_overhead_tokens(),
            rules_tokens=self.short_memory.rules_tokens(),
            tool_tokens=self.tool_tokens(),
            session=self._session,
        )

    def _session_now(self) -> tuple[int, int, int] | None:
        """This process, the inode of MEMORY.md now, and how many of its messages were
        preloaded: how views tell earlier sessions from this one (``RunSettings.session``)."""
        docs = self.short_memory.docs
        try:
            inode = docs.identity(self.short_memory.memory_md_path) if docs is not None else None
        except OSError:
            inode = None
        if inode is None:
            return None
        return os.getpid(), inode, self.short_memory.preloaded_count

    def _compacted(self, event: Any) -> None:
        """After a compaction all of MEMORY.md is this session's: record it for the views."""
        if event.kind == "compact":
            self._session = self._session_now()
            self._record_settings()

    def _record_settings(self) -> None:
        """Keep ``settings.json`` beside MEMORY.md in step, so views show this agent's figures."""
        docs = self.short_memory.docs
        if docs is None or not self.record_settings:
            return
        settings = self.run_settings()
        if settings != self._recorded:
            write_settings(docs, settings)
            self._recorded = settings

    # ------------------------------------------------------------------------------------------
    # Running

    def run(
        self,
        task: str,
        streaming_callback: Callable[[str], None] | None = None,
        *,
        provenance: Provenance | None = None,
    ) -> str:
        """Run ``task`` and return the final answer.

        Every message (task, answers, tool calls and results) is added to memory as it happens,
        so an interrupted run leaves a memory that holds everything said up to that point.

        Args:
            task: What the person asks.
            streaming_callback: Called with each piece of the answer as it streams (instead of
                the agent's own).
            provenance: The notebook cell that runs the task, as a front end knows it; recorded
                beside ``MEMORY.md`` for each message.

        Returns:
            The model's final answer.

        Raises:
            MissingKeyError: The model needs a key that is not set (nothing is added).
            ModelError: The model call failed; what was said before stays in memory.
        """
        if not isinstance(task, str):
            raise TypeError(f"task must be a string, not {type(task).__name__}")
        self.check_ready()
        memory = self.short_memory
        before, memory.provenance = memory.provenance, provenance
        try:
            return self._run(task, streaming_callback)
        finally:
            memory.provenance = before

    def _run(self, task: str, streaming_callback: Callable[[str], None] | None) -> str:
        self._stands_in = None  # running, it is the memory's agent: its own prompt and tools
        self._record_settings()
        on_delta = self._delta_callback(streaming_callback or self.streaming_callback)
        self.short_memory.add(self.user_name, task)
        try:
            self._run_task = task[:80]
            self.recall_session.start()
            answer = self._run_loops(on_delta)
        finally:
            self._run_task = None  # a note taken later is not this run's
            self.recall_session.end()
        if self.autosave:
            self.save()
        if self.print_on:
            print(f"{self.agent_name}: {answer}")
        return answer

    def _run_loops(self, on_delta: Callable[[str], None] | None) -> str:
        """The model's turns of one run, tools called between them; returns the answer."""
        loops = AUTO_LOOP_LIMIT if self.max_loops == "auto" else self.max_loops
        answer = ""
        done = extra = 0
        while done < loops:
            compressor = self._context_compressor
            if compressor is not None and compressor.should_compress(self):
                compressor.compress(self, during_run=True)
            reply = llm.complete(
                self.model_name,
                self.request_messages(),
                tools=self._tool_schemas or None,
                on_delta=on_delta,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                timeout=self.timeout,
                max_retries=self.max_retries,
                api_base=self.api_base,
                api_key=self.api_key,
            )
            if reply.tool_calls:
                answer = self._run_tools(reply)
                memory_only = all(c.name in MEMORY_TOOLS for c in reply.tool_calls)
                if memory_only and extra < MEMORY_CALLS_PER_RUN:
                    extra += 1  # looking back or taking a note is part of answering: no loop
                else:
                    done += 1
                continue
            self.short_memory.add(self.agent_name, reply.content)
            answer = reply.content
            done += 1
            if self.max_loops == "auto":
                break
        return answer

    def add_memory(self, message: str) -> dict[str, Any]:
        """Add ``message`` to memory as said by this agent (written through, as every add)."""
        return self.short_memory.add(self.agent_name, message)

    def _delta_callback(
        self, callback: Callable[[str], None] | None
    ) -> Callable[[str], None] | None:
        if not self.stream_observers:
            return callback

        def on_delta(piece: str) -> None:
            if callback is not None:
                callback(piece)
            for observer in list(self.stream_observers):
                observer(piece)

        return on_delta

    def _run_tools(self, reply: llm.Reply) -> str:
        """Record the model's tool calls, run them, record their results; returns the results."""
        call_message = reply.message()
        self.short_memory.add(
            self.agent_name,
            {"content": reply.content, "tool_calls": call_message["tool_calls"]},
        )
        results = []
        for call in reply.tool_calls:
            result = self.tools.call(call.name, call.arguments)
            self.short_memory.add(
                TOOL_ROLE, {"tool_call_id": call.id, "name": call.name, "content": result}
            )
            results.append(result)
        return "\n\n".join(results)

    # ------------------------------------------------------------------------------------------
    # Saving

    def _state_path(self, file_path: str | os.PathLike[str] | None) -> Path:
        """Where ``save``/``load`` go: ``file_path``, else ``saved_state_path``, else
        ``agent_state.json``; a relative name is in the agent's folder; ``.json`` is added."""
        root = self.workspace.root
        folder = (
            agent_folder(self.agent_name, root)
            if self.persistent_memory
            else root / "states" / self.agent_name
        )
        path = Path(file_path or self.saved_state_path or "agent_state.json")
        path = path if path.suffix == ".json" else path.with_name(path.name + ".json")
        return path if path.is_absolute() else folder / path

    def save(self, file_path: str | os.PathLike[str] | None = None) -> Path:
        """Write the agent's settings and history as JSON (see ``_state_path`` for where).

        ``long_term_memory.save(path)`` is called too, when the object has such a method.
        """
        target = self._state_path(file_path)
        docs, doc = self.workspace.locate(target)
        state = {
            "agent_name": self.agent_name,
            "agent_description": self.agent_description,
            "model_name": self.model_name,
            "max_loops": self.max_loops,
            "context_length": self.context_length,
            "history": self.short_memory.to_dict(),
        }
        path = docs.write(doc, json.dumps(state, indent=2, ensure_ascii=False, default=str))
        saver = getattr(self.long_term_memory, "save", None)
        if callable(saver):  # it writes files of its own, whatever the store
            saver(str(make_private_dir(check_folder(target.parent)) / "long_term_memory"))
        if self.verbose:
            import logging  # imported when used: most agents never log

            logging.getLogger("nbmemory").info("saved %s's state to %s", self.agent_name, path)
        return path

    def load(self, file_path: str | os.PathLike[str] | None = None) -> None:
        """Restore settings and history written by :meth:`save` (same default path).

        The history replaces this process's history; ``MEMORY.md`` is not touched.
        ``FileNotFoundError`` if there is no such file, ``MemoryFormatError`` if it is not one.
        """
        path = self._state_path(file_path)
        docs, doc = self.workspace.locate(path)
        try:
            state = json.loads(docs.read(doc))
            settings = {key: state[key] for key in _STATE_SETTINGS}
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryFormatError(f"{path}: not an agent state written by save()") from exc
        self.short_memory.load_messages(state, path)
        for key, value in settings.items():
            setattr(self, key, value)
        if self.verbose:
            import logging

            logging.getLogger("nbmemory").info("loaded %s's state from %s", self.agent_name, path)


_STATE_SETTINGS = ("agent_description", "model_name", "max_loops", "context_length")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "" if content is None else json.dumps(content, ensure_ascii=False)
