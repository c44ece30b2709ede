"""The words of the views: how a figure, a threshold, a compaction and a message are said.

The CLI, ``%memory``, ``%compact``, the widget and the JupyterLab panel all word things here, so
the same thing reads the same everywhere: one label per figure, one threshold sentence, one
numbering of messages (from 1), one fold length, one palette and description per part of a
request, one rule for showing invisible characters. The browser views get these as JSON (the
read model's ``to_json`` answers carry the worded figures, :func:`vocabulary` the rest), so they
do not word anything themselves.
"""

from __future__ import annotations

import math
import re
from typing import Any

FOLD_CHARS = 2000
"""Messages longer than this come folded, in every view (``%memory`` included)."""

FIRST_NUMBER = 1
"""Messages are numbered from 1 for people; the API's ``index`` stays 0-based."""

PARTS = (
    "system prompt",
    "rules",
    "pinned notes",
    "earlier sessions",
    "this session",
    "tool schemas",
    "reply room",
)
"""The parts of a request, in the order it carries them. "earlier sessions" is the memory
preloaded from MEMORY.md; "this session" what the agent's running process added since (all of
MEMORY.md is "earlier sessions" when no process of the agent runs: the next one preloads it)."""

PART_DESCRIPTIONS = {
    "system prompt": "The agent's system prompt",
    "rules": "The rules and custom rules sent after the system prompt",
    "pinned notes": "NOTES.md: carried word for word by every request, never compacted",
    "earlier sessions": (
        "MEMORY.md as the running process preloaded it (all of it when no process of the agent "
        "runs)"
    ),
    "this session": "What the running process of the agent added to MEMORY.md since it started",
    "tool schemas": "The tools' JSON schemas",
    "reply room": "Room kept for the model's reply",
}

PALETTE = (
    "var(--jp-info-color0, #0277bd)",
    "var(--jp-mirror-editor-operator-color, #aa22ff)",
    "var(--jp-warn-color0, #e65100)",
    "var(--jp-brand-color0, #0d47a1)",
    "var(--jp-accent-color1, #388e3c)",
    "var(--jp-mirror-editor-string-color, #ba2121)",
    "var(--jp-layout-color4, #757575)",
)
"""The colour each part (by its place in :data:`PARTS`) is drawn in, in both gauges: JupyterLab's
theme colours (each at least 3:1 against the background in the light and dark themes, which the
panel's browser test measures), with a fallback where there is no JupyterLab theme."""

INVISIBLE = (
    r"[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e"
    r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]"
)
"""Characters that change how text shows without showing themselves: controls (but tab and
line feed), zero-width characters and the bidirectional controls (U+202E reverses what follows).
A regular expression that Python and JavaScript both read the same way."""

_INVISIBLE = re.compile(INVISIBLE)

BIDI = r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
"""The bidirectional controls, part of :data:`INVISIBLE`: embeddings, overrides, isolates and the
marks. Applied, one reorders what follows it (U+202E between "invoice" and "fdp.exe" makes it
read "invoiceexe.pdf"), so the browser views show them as ``⟨U+202E⟩`` in rendered text and in
the boxes a summary is edited in, not only with "Exact text"."""

LABELS = {
    "memory": "memory",
    "next request": "next request",
    "counting": "counting tokens…",
    "compacts next": "compacts on the next call",
    "search placeholder": "Search messages",
    "pin placeholder": "Pin a note (kept in every request)",
    "back": "Back to the memory",
    "summary now": "What the memory holds now",
    "summary then": "The summary this compaction wrote (a later one replaced it)",
    "compactions": "Compactions: what did it forget?",
    "no compactions": "No compactions yet.",
    "nothing dropped": (
        "Nothing dropped: every name, number, date and identifier of the transcript is in the "
        "summary or the pinned notes"
    ),
    "transcript": "Transcript it replaced (the archive)",
    "show full": "Show full text",
    "tool call": "Calls",
    "tool result": "Result of",
    "image": "image",
    "newest": "Newest",
    "newer": "Newer",
    "older": "Older",
    "oldest": "Oldest",
    "first": "First",
    "previous": "Previous",
    "next": "Next",
    "last": "Last",
    "no record": (
        "Dropped terms worked out from the archive, the summary and the pinned notes as they "
        "are now: no record of this compaction"
    ),
    "recorded": "Dropped terms as the compressor recorded them when it compacted",
    "none dropped": "nothing dropped",
    "empty": "Nothing here.",
    "no notes": "No pinned notes.",
    "no agent": "Select an agent to see its memory.",
    "default settings": "default settings: the agent has not run here yet",
}
"""Fixed words the views share."""

PAGERS = {
    "newest first": ("newest", "newer", "older", "oldest"),
    "oldest first": ("oldest", "older", "newer", "newest"),
    "results": ("first", "previous", "next", "last"),
}
"""The four page buttons (to the start, back, on, to the end) by what is paged, as keys of
:data:`LABELS`."""

PHRASES = {
    "search found": "{messages} with “{query}” in {where}{among}; {first}\N{EN DASH}{last} shown",
    "search none": "No results for “{query}” in {where}{among}.{hint}",
    "search among": " among {role}'s messages",
    "search where": "MEMORY.md",
    "search where archives": "MEMORY.md and the archives",
    "search hint": " Tick “archives too” to look in the archives.",
    "page": "Page {page} of {pages}",
    "folded": "Showing {shown} of {length} characters.",
    "dropped": (
        "Dropped: {terms} of the transcript that neither the summary nor the pinned notes hold "
        "(the archive still does)"
    ),
    "dropped listed": "; the first {listed} are listed",
    "terms dropped": "{terms} dropped",
    "image": "image: {alt}",
    "cell gone": "cell [{count}] is gone from {notebook}",
    "notebook missing": "{notebook} is not among the server's files (moved, renamed or deleted)",
    "cell unknown": "{cell}: its notebook or cell id was not recorded",
}
"""Sentences with ``{slots}`` that the views fill in (counts already worded, as :func:`counted`
words them): each view fills the same sentence, so it reads the same."""


def reveal(text: str) -> str:
    """``text`` with every :data:`INVISIBLE` character shown as ``⟨U+202E⟩``: what "Exact text"
    and a terminal show, so nothing hides or reorders what is stored."""
    return _INVISIBLE.sub(lambda m: f"⟨U+{ord(m[0]):04X}⟩", text)


_BIDI = re.compile(BIDI)


def show_bidi(text: str) -> str:
    """``text`` with its :data:`BIDI` controls shown as ``⟨U+202E⟩``: what a rendered view
    shows (a cell's answer, the chat), so that none reorders the text around it."""
    return _BIDI.sub(lambda m: f"⟨U+{ord(m[0]):04X}⟩", text)


_BREAKS = re.compile(r"[\t\n\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` as a label shows it, on one line: :func:`reveal`, with tabs and line breaks
    shown as ``⟨U+000A⟩`` too, so that a name (a notebook's path) cannot forge a line."""
    return _BREAKS.sub(lambda m: f"⟨U+{ord(m[0]):04X}⟩", reveal(text))


def phrase(key: str, **slots: object) -> str:
    """The sentence :data:`PHRASES` has for ``key``, its slots filled."""
    return PHRASES[key].format(**slots)


def search_words(
    query: str, total: int, offset: int, shown: int, archives: bool, role: str | None
) -> str:
    """What a search found, as the widget and the panel say it above the results."""
    where = phrase("search where archives" if archives else "search where")
    among = phrase("search among", role=role) if role else ""
    if not total:
        hint = "" if archives else phrase("search hint")
        return phrase("search none", query=query, where=where, among=among, hint=hint)
    return phrase(
        "search found",
        messages=counted(total, "message"),
        query=query,
        where=where,
        among=among,
        first=number(offset + 1),
        last=number(offset + shown),
    )


def number(value: int) -> str:
    """A count as every view writes it: ``12,345``."""
    return f"{value:,}"


def percent(fraction: float) -> str:
    """A share as every view writes it: a whole percent."""
    return f"{fraction:.0%}"


def byte_size(value: int) -> str:
    """A size in bytes for people: ``"-"`` for none, else B, KB, MB or GB (powers of 1,000)."""
    if value <= 0:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value} B"


def counted(value: int, word: str) -> str:
    """``1 message``, ``2 messages``."""
    return f"{number(value)} {word}{'' if value == 1 else 's'}"


def review_head(count: int, reviewer: str = "your") -> str:
    """``1 note edit waits for your review (not pinned yet):`` (``reviewer``: whose review it
    waits for, as the reader knows them: ``a person's`` for a model)."""
    verb = "waits" if count == 1 else "wait"
    return f"{counted(count, 'note edit')} {verb} for {reviewer} review (not pinned yet):"


def review_words(waiting: list[tuple[int, str]], command: str | None) -> str:
    """What a text view says of the note edits waiting for a person's review: each ``(n,
    said)`` as the record says it, with the commands (``command`` and ``--accept N`` or
    ``--reject N``) that settle it; ``""`` when none waits. Without ``command`` (an MCP
    client, which cannot settle them), the edits alone, waiting for a person's review."""
    if not waiting:
        return ""
    lines = [review_head(len(waiting), "your" if command else "a person's")]
    for n, said in waiting:
        lines.append(f"  {said}")
        if command:
            lines.append(f"    accept: {command} --accept {n}    reject: {command} --reject {n}")
    return "\n".join(lines)


def message_number(index: int) -> str:
    """A message's number for people: ``#1`` for index 0."""
    return f"#{index + FIRST_NUMBER}"


def cell_words(notebook: str | None, execution_count: int | None) -> str:
    """The cell that wrote a message, as people know it: ``cell [12] of analysis.ipynb`` (the
    notebook by its file name, on one line: :func:`one_line`; ``[ ]`` when the count is
    unknown, no notebook when it is)."""
    said = f"cell [{execution_count if execution_count is not None else ' '}]"
    name = one_line(notebook.replace("\\", "/").rsplit("/", 1)[-1]) if notebook else ""
    return f"{said} of {name}" if name else said


def superseded_words(execution_count: int | None) -> str:
    """That a later run of the same cell supersedes a message: ``superseded by cell [15]``."""
    if execution_count is None:
        return "superseded by a later run of its cell"
    return f"superseded by cell [{execution_count}]"


def threshold_tokens(threshold: float | None, context_length: int) -> int | None:
    """The tokens at which compaction starts, or ``None`` when compression is off."""
    return None if threshold is None else math.ceil(threshold * context_length)


def threshold_words(threshold: float | None, context_length: int) -> str:
    """``compacts at 90% (14,400 tokens)``, or ``compression off``."""
    at = threshold_tokens(threshold, context_length)
    if threshold is None or at is None:
        return "compression off"
    return f"compacts at {percent(threshold)} ({number(at)} tokens)"


_REMEDIES = {
    "system prompt": "a shorter system prompt",
    "rules": "shorter rules",
    "pinned notes": "fewer or shorter pinned notes",
    "tool schemas": "fewer tools",
    "reply room": "a smaller max_tokens",
}


def stuck_words(part: str, tokens: int, context_length: int) -> str:
    """Why compaction cannot get a request below its threshold, and what would: ``part`` (of
    ``tokens``) is the largest of the parts no compaction makes smaller."""
    share = tokens / context_length if context_length else 0.0
    remedy = _REMEDIES.get(part, "a smaller fixed part")
    return (
        f"Can't compact below the threshold: the {part} takes {percent(share)} of the window "
        f"({number(tokens)} of {number(context_length)} tokens). Give the agent a larger "
        f"window or {remedy}; until then it does not compact."
    )


def usage_words(
    tokens: int,
    context_length: int,
    threshold: float | None,
    recorded: bool,
    stuck: tuple[str, int] | None = None,
) -> dict[str, str]:
    """The sentences about a next request: ``usage`` (``2,931 of 16,000 tokens (18%)``),
    ``threshold``, ``compacts_next``, ``stuck`` and ``over_window`` (empty unless so),
    ``settings`` (empty when they are the agent's own). ``stuck`` is the largest fixed part
    when no compaction can get below the threshold (``run_settings.compaction_floor``)."""
    at = threshold_tokens(threshold, context_length)
    share = tokens / context_length if context_length else 0.0
    compacts = ""
    reached = threshold is not None and at is not None and tokens >= threshold * context_length
    if reached and stuck is None:
        compacts = (
            f"The next call compacts first: {number(tokens)} tokens reach the threshold of "
            f"{number(at)} ({percent(threshold)} of {number(context_length)})."
        )
    over = ""
    if tokens > context_length and not compacts and stuck is None:
        over = (
            f"Over the window by {number(tokens - context_length)} tokens, and compression is "
            "off: most models will refuse the next call."
        )
    return {
        "usage": f"{number(tokens)} of {number(context_length)} tokens ({percent(share)})",
        "threshold": threshold_words(threshold, context_length),
        "compacts_next": compacts,
        "stuck": stuck_words(*stuck, context_length) if stuck else "",
        "over_window": over,
        "settings": "" if recorded else LABELS["default settings"],
    }


def counts_words(messages: int, archives: int) -> str:
    """``1 message · 2 archives``."""
    return f"{counted(messages, 'message')} · {counted(archives, 'archive')}"


def compaction_words(
    memory_before: int, memory_after: int, request_before: int, request_after: int
) -> str:
    """A compaction's two figures, labelled: what the memory alone went from and to, and what
    the next request did (the memory plus prompt, notes, tools and reply room)."""
    arrow = "\N{RIGHTWARDS ARROW}"
    return (
        f"{LABELS['memory']} {number(memory_before)} {arrow} {number(memory_after)} tokens · "
        f"{LABELS['next request']} {number(request_before)} {arrow} {number(request_after)} tokens"
    )


def dropped_words(dropped: int) -> str:
    """How many terms a summary drops, as every view says it: "nothing dropped", "1 term
    dropped", "71 terms dropped"."""
    if not dropped:
        return LABELS["none dropped"]
    return PHRASES["terms dropped"].format(terms=counted(dropped, "term"))


def preview_words(before: int, after: int | None, dropped: int) -> str:
    """A compaction not made yet, in one line: the next request's tokens before and (reckoned)
    after, and how many terms its summary would drop."""
    arrow = "\N{RIGHTWARDS ARROW}"
    shown = "?" if after is None else number(after)
    return (
        f"{LABELS['next request']} {number(before)} {arrow} {shown} tokens "
        f"({dropped_words(dropped)})"
    )


WIDGET_WORDS = {
    "labels": (
        "back",
        "compactions",
        "compacts next",
        "counting",
        "empty",
        "image",
        "next request",
        "no compactions",
        "no notes",
        "no record",
        "none dropped",
        "nothing dropped",
        "recorded",
        "pin placeholder",
        "search placeholder",
        "show full",
        "summary now",
        "summary then",
        "tool call",
        "tool result",
    ),
    "phrases": ("dropped", "dropped listed", "folded", "image", "page", "terms dropped"),
}
"""The labels and phrases the widget's modules read (besides the pagers' labels): the widget is
sent these only (:func:`widget_vocabulary`). tests/test_vocabulary.py checks this list against
what ``static/widget/*.js`` reads, both ways."""


def vocabulary() -> dict[str, Any]:
    """What the browser views need to word and draw things as the others do."""
    return {
        "fold_chars": FOLD_CHARS,
        "first_number": FIRST_NUMBER,
        "invisible": INVISIBLE,
        "bidi": BIDI,
        "parts": [
            {"name": name, "description": PART_DESCRIPTIONS[name], "color": color}
            for name, color in zip(PARTS, PALETTE, strict=True)
        ],
        "labels": dict(LABELS),
        "pagers": {name: list(keys) for name, keys in PAGERS.items()},
        "phrases": dict(PHRASES),
    }


def widget_vocabulary() -> dict[str, Any]:
    """:func:`vocabulary` as the widget gets it: the same words under the same keys, but only
    those its modules read (:data:`WIDGET_WORDS`, the pagers' labels, ``first_number``,
    ``invisible``, ``bidi`` and ``parts``): its messages come folded and its search caption
    worded (the ``search_caption`` trait), and its modules read no ``fold_chars``."""
    whole = vocabulary()
    labels = {*WIDGET_WORDS["labels"], *(key for keys in PAGERS.values() for key in keys)}
    return {
        "first_number": whole["first_number"],
        "invisible": whole["invisible"],
        "bidi": whole["bidi"],
        "parts": whole["parts"],
        "labels": {key: text for key, text in whole["labels"].items() if key in labels},
        "pagers": whole["pagers"],
        "phrases": {key: whole["phrases"][key] for key in WIDGET_WORDS["phrases"]},
    }
