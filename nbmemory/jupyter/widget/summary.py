"""The widget as text, for where no widget front end shows it: a summary of the memory (its
figures and newest messages) as Markdown, as HTML saved beside the live view, and as plain text;
made from a widget's traits, or (when a notebook is saved) read from the memory as it is then.

Every piece of text in it comes from the memory and is untrusted: each form escapes it, so that
it shows as exactly that text (no tag, link or image).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, NamedTuple

from nbmemory.errors import AgentNotFoundError
from nbmemory.jupyter.widget.state import compaction_rows
from nbmemory.views.read_model import ReadModel
from nbmemory.views.report import markdown_escape, visible
from nbmemory.views.tool_calls import ToolMessage, tool_text
from nbmemory.wording import counted

if TYPE_CHECKING:
    from nbmemory.jupyter.widget.traits import MemoryTraits

NEWEST_SHOWN = 5

STATIC_NOTE = "A summary saved with the notebook: run the cell to inspect this memory live."
STATIC_CSS = (
    # The summary is shown when the widget beside it is not (no kernel, no widget model) and
    # hidden once the widget view is there; the widget's own output is hidden while it holds
    # no view ("Loading widget...", "Error displaying widget").
    ".jp-OutputArea-child:has(.nbmemory-static):has(+ .jp-OutputArea-child .nbmemory-widget)"
    "{display:none}"
    ".jp-OutputArea-child:has(.nbmemory-static) + .jp-OutputArea-child:not(:has(.nbmemory-widget))"
    "{display:none}"
    ".nbmemory-static{border-left:3px solid var(--jp-border-color1,#bdbdbd);padding-left:8px}"
)


class Summary(NamedTuple):
    """The summary's plain-text pieces (untrusted: each form escapes them)."""

    title: str
    usage: str
    lines: list[str]
    newest: list[tuple[str, str, str]]
    """(role, time, text) of the newest messages."""


def _md_text(text: str, limit: int | None = None) -> str:
    """Untrusted text as Markdown that renders as exactly that text: no tag, link or image."""
    text = " ".join(str(text).split())
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    return markdown_escape(text)


def _md_line(text: str, limit: int | None = None) -> str:
    """Untrusted text on one line, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text[:limit] + "…" if limit is not None and len(text) > limit else text


def _html_text(text: str, limit: int | None = None) -> str:
    """Untrusted text as HTML that shows exactly that text (on one line)."""
    return html.escape(_md_line(text, limit))


class Figures(NamedTuple):
    """What a summary is made of, under the names of the widget's traits."""

    name: str
    exists: bool
    counting: bool
    info: dict[str, Any]
    compactions: list[dict[str, Any]]
    notes: dict[str, Any]
    """The pinned notes with their figures (``ReadModel.pinned``), as the ``notes`` trait."""
    messages: list[dict[str, Any]]
    """Newest first: the first ``NEWEST_SHOWN`` are listed."""


def summary_of(view: MemoryTraits | Figures) -> Summary:
    """The summary of what a widget's traits hold now (or ``Figures``): the title, the
    figures, further lines (the next request's parts, warnings, compactions, pinned notes) and
    the newest messages."""
    info = view.info
    model = info.get("model", "")
    title = f"{view.name} memory" + (f" · {model}" if model else "")
    if not view.exists:
        return Summary(title, "no agent with this name in the workspace yet", [], [])
    words = info.get("words", {})
    usage = "tokens being counted" if view.counting else f"{words['usage']}, {words['threshold']}"
    usage += f", {info.get('counts', '')}"
    lines = []
    parts = [f"{p['name']} {p['tokens']:,}" for p in info.get("parts", [])]
    if parts:
        lines.append("Next request: " + " · ".join(parts))
    if not view.counting:
        said = [words.get(key) for key in ("compacts_next", "stuck", "over_window")]
        lines += filter(None, said)
    if view.compactions:
        last = view.compactions[-1]
        lines.append(
            f"{counted(len(view.compactions), 'compaction')}; the last at {last['time']}: "
            f"{last['figures']}, {counted(last['dropped_total'], 'term')} dropped"
        )
    if view.notes.get("notes"):
        pinned = view.notes
        lines.append(
            f"{counted(len(pinned['notes']), 'pinned note')} ({pinned['tokens']:,} tokens)"
        )
    newest = [(m["role"], m["timestamp"], _readable(m)) for m in view.messages[:NEWEST_SHOWN]]
    return Summary(title, usage, lines, newest)


def _readable(message: dict[str, Any]) -> str:
    """A listed message's text as every view reads it: a tool call or result by name."""
    tool = message.get("tool")
    return message["text"] if not tool else tool_text(ToolMessage.from_json(tool))


def figures_now(reader: ReadModel, name: str) -> Figures:
    """Agent ``name``'s figures as the memory holds them now, its newest messages first."""
    try:
        info = reader.agent(name)
        page = reader.messages(name, 0, NEWEST_SHOWN, newest_first=True)
        return Figures(
            name,
            True,
            False,
            info.to_json(),
            compaction_rows(reader.compactions(name)),
            reader.pinned(name).to_json(),
            [item.to_json(sparse=True) for item in page.items],
        )
    except AgentNotFoundError:
        return Figures(name, False, False, {}, [], {}, [])


def as_markdown(name: str, exists: bool, summary: Summary) -> str:
    """The summary as Markdown: the name and figures, then the newest messages cut short."""
    if not exists:
        return f"**{_md_text(name)}**: no agent with this name in the workspace yet."
    out = [f"**{_md_text(name)}** memory: {_md_text(summary.usage)}"]
    for role, time, text in summary.newest:
        out.append(f"- *{_md_text(role)}* · {_md_text(time)}: {_md_text(text, 120)}")
    return "\n".join(out)


def as_html(summary: Summary, model_ref: str) -> str:
    """The summary as HTML, every piece of text escaped, with the style rule that hides it
    while the live view of widget ``model_ref`` shows beside it."""
    items = "".join(
        f"<li><em>{_html_text(role)}</em> · {_html_text(time)}: {_html_text(text, 120)}</li>"
        for role, time, text in summary.newest
    )
    body = "".join(f"<div>{_html_text(line)}</div>" for line in summary.lines)
    return (
        f"<style>{STATIC_CSS}</style>"
        f'<div class="nbmemory-static" data-nbmemory-static="{html.escape(model_ref)}">'
        f"<div><strong>{_html_text(summary.title)}</strong>: {_html_text(summary.usage)}</div>"
        f"{body}"
        + (f"<ul>{items}</ul>" if items else "")
        + f"<div><small>{STATIC_NOTE}</small></div></div>"
    )


def as_plain_text(summary: Summary) -> str:
    """The summary as plain text for terminals, with nothing that a terminal would act on."""
    plain = [f"{summary.title}: {summary.usage}", *summary.lines]
    plain += [f"- {role} · {time}: {_md_line(text, 120)}" for role, time, text in summary.newest]
    return visible("\n".join(plain))
