"""What the widget and the browser share: the traits anywidget keeps in step both ways, the ES
module and style sheet that draw them, and the kernel's one model of the widget's words.

The traits are the whole contract with the browser: :mod:`.following` fills them from the read
model (:mod:`nbmemory.views.read_model`), serialized as the server serializes it for the panel;
the browser reads them and sets the few a person changes (page, order, role, query, open
archive...).
"""

from __future__ import annotations

import anywidget
import ipywidgets
import traitlets

from nbmemory.jupyter.widget.es_module import STATIC, browser_module
from nbmemory.wording import widget_vocabulary

PAGE_SIZE = 20


class Vocabulary(ipywidgets.Widget):
    """The widget's words (``wording.widget_vocabulary()``) as a model of their own, which every
    ``MemoryWidget`` of a kernel refers to, as ipywidgets' widgets do to a shared layout: the
    words go to the browser (and into a notebook's saved widget state) once per kernel, not once
    per widget, and the views read them from there."""

    words = traitlets.Dict().tag(sync=True)


_vocabulary: Vocabulary | None = None


def shared_vocabulary() -> Vocabulary:
    """The kernel's :class:`Vocabulary` model, made again if it was closed (``close_all``)."""
    global _vocabulary  # one model per kernel is the point
    if _vocabulary is None or _vocabulary.comm is None:
        _vocabulary = Vocabulary(words=widget_vocabulary())
    return _vocabulary


class MemoryTraits(anywidget.AnyWidget):
    """The synced state of a ``MemoryWidget``: its module, its style and its traits."""

    _esm = browser_module()
    _css = (STATIC / "widget.css").read_text(encoding="utf-8")
    """Text, not a path: anywidget keeps every widget with a file-backed ``_css`` alive."""

    # Figures (from ReadModel.agent)
    name = traitlets.Unicode("").tag(sync=True)
    workspace = traitlets.Unicode("").tag(sync=True)
    exists = traitlets.Bool(False).tag(sync=True)
    in_ram = traitlets.Bool(False).tag(sync=True)
    counting = traitlets.Bool(False).tag(sync=True)
    """True until the first token figure is in (a long memory is counted once, off the cell)."""
    info = traitlets.Dict().tag(sync=True)
    """The agent's figures as every view gets them, ``AgentInfo.to_json()``: ``tokens`` of
    ``context_length``, ``threshold``, ``parts``, ``words``, ``messages``, ``size``, ``counts``...
    (the server's and the panel's names). While ``counting``, only what the settings and the
    first page tell: ``name``, ``model``, ``context_length``, ``threshold``, ``recorded`` and
    ``messages``; empty while there is no agent."""
    vocabulary = traitlets.Instance(Vocabulary).tag(sync=True, **ipywidgets.widget_serialization)
    """What the browser needs to word and draw as the other views do: the kernel's
    :class:`Vocabulary` (``wording.widget_vocabulary()``), sent as a reference to it."""

    # The memory, a page at a time
    page = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(PAGE_SIZE).tag(sync=True)
    newest_first = traitlets.Bool(True).tag(sync=True)
    messages = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The current page only: ``Item.to_json(sparse=True)`` dicts (text folded to
    ``FOLD_CHARS``; ``length`` and ``folded`` only for a folded message)."""
    listed_total = traitlets.Int(0).tag(sync=True)
    """How many messages the pages go through: ``info["messages"]``, or those of ``role``."""
    role = traitlets.Unicode("").tag(sync=True)
    """Show (and search) only the messages of this role (any case); empty for every role."""
    roles = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """The roles found in the memory and its archives, for the role filter."""

    # Search
    query = traitlets.Unicode("").tag(sync=True)
    search_archives = traitlets.Bool(False).tag(sync=True)
    search_page = traitlets.Int(0).tag(sync=True)
    search_total = traitlets.Int(0).tag(sync=True)
    search_results = traitlets.List(traitlets.Dict()).tag(sync=True)
    search_caption = traitlets.Unicode("").tag(sync=True)
    """What the search found, as the panel says it (``wording.search_words``); empty: no search."""

    # Archives
    archives = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Oldest first: ``ArchiveInfo.to_json()`` (``name``, ``messages``, ``size``, ``time``)."""
    open_archive = traitlets.Unicode("").tag(sync=True)
    archive_page = traitlets.Int(0).tag(sync=True)
    archive_total = traitlets.Int(0).tag(sync=True)
    archive_messages = traitlets.List(traitlets.Dict()).tag(sync=True)

    # Compactions: what each archived, the summary that replaced it, what that summary dropped
    compactions = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Oldest first (``ReadModel.compactions``), without their summaries: ``{"archive", "time",
    "messages", "tokens_before", "tokens_after", "kept_messages", "dropped", "dropped_total",
    "recorded"}``."""
    compaction = traitlets.Dict().tag(sync=True)
    """The compaction that wrote ``open_archive``, its ``summary`` included; empty if none."""
    compaction_preview = traitlets.Dict().tag(sync=True)
    """A compaction shown for a person to confirm (:meth:`preview_compaction`), as
    ``nbmemory.views.report.preview_fields`` words it: ``summary`` (``edited``: a person's, the
    model's being ``drafted``), ``tokens_before``, ``tokens_after`` (``None``: not reckoned),
    ``missing`` (the terms it would drop), ``keep`` (the terms asked for) and ``words``; empty
    if none."""

    # Pinned notes (NOTES.md): carried by every request, never compacted
    notes = traitlets.Dict().tag(sync=True)
    """The agent's pinned notes and their review (``ReadModel.pinned``), as the panel's notes
    answer holds them: ``{"name", "notes", "tokens", "budget", "approval", "pending",
    "history"}``; empty while no agent on files is shown."""

    exact = traitlets.Bool(False).tag(sync=True)
    """Show each message's stored text verbatim instead of rendered Markdown."""
    show_tokens = traitlets.Bool(False).tag(sync=True)
    """Give each listed message its tokens (``ReadModel.message_tokens``) as ``"tokens"``."""
    streaming = traitlets.Unicode("").tag(sync=True)
    """The answer an agent is writing right now."""
    expanded = traitlets.Bool(True).tag(sync=True)
    """The whole inspector, or (``False``) a one-line summary: the gauge and the counts."""
    model_ref = traitlets.Unicode("").tag(sync=True)
    """This widget's model id: the browser asks the widget manager whether a kernel still
    backs it, and shows a saved view (from the notebook's widget state) when none does."""
    status = traitlets.Unicode("").tag(sync=True)

    @traitlets.default("vocabulary")
    def _vocabulary_default(self) -> Vocabulary:
        return shared_vocabulary()
