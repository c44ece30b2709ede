"""A notebook saved through the server keeps a summary of each memory widget as it was saved."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nbmemory import Conversation
from nbmemory.jupyter.server.saved_widgets import WIDGET_STATE, WIDGET_VIEW, keep_summaries
from nbmemory.jupyter.widget import MemoryWidget
from nbmemory.store import memory_path
from nbmemory.views.read_model import ReadModel

HOSTILE = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture
def widget() -> Iterator[MemoryWidget]:
    convo = Conversation(name="Keeper", memory_md_path=memory_path("Keeper"))
    convo.add("User", "Our office is in Lyon.")
    made = MemoryWidget("Keeper")
    made.refresh()
    yield made
    made.close()


def notebook_of(widget: MemoryWidget, *, state_kept: bool = False) -> dict[str, Any]:
    """A notebook as the browser saves it: the widget's two outputs, and another library's."""
    outputs = [
        {
            "output_type": "display_data",
            "data": widget._static_bundle(),
            "metadata": widget._static_metadata(),
        },
        {"output_type": "display_data", "data": widget._view_bundle(), "metadata": {}},
        {
            "output_type": "display_data",
            "data": {WIDGET_VIEW: {"model_id": "slider-1", "version_major": 2}},
            "metadata": {},
        },
    ]
    state = {widget.model_id: {"state": {}}} if state_kept else {}
    return {
        "metadata": {"widgets": {WIDGET_STATE: {"state": state}}},
        "cells": [{"cell_type": "code", "source": "", "outputs": outputs, "metadata": {}}],
    }


def test_the_summary_is_the_memory_as_saved_and_the_view_is_closed(widget):
    notebook = notebook_of(widget)
    assert "1 message" in notebook["cells"][0]["outputs"][0]["data"]["text/plain"]
    Conversation(name="Keeper", memory_md_path=memory_path("Keeper")).add("User", HOSTILE)

    keep_summaries(notebook, ReadModel())

    summary, view, other = notebook["cells"][0]["outputs"]
    body = summary["data"]["text/html"].split("</style>", 1)[1]
    assert "2 messages" in body and "&lt;img src=x" in body and "<img" not in body
    assert f'data-nbmemory-static="{widget.model_id}"' in body
    assert HOSTILE in summary["data"]["text/plain"]
    assert summary["metadata"] == widget._static_metadata()
    assert view["data"][WIDGET_VIEW]["model_id"] == ""  # no state to show it from: closed
    assert other["data"][WIDGET_VIEW]["model_id"] == "slider-1"  # not ours: as it was


def test_a_view_whose_state_is_kept_stays(widget):
    notebook = notebook_of(widget, state_kept=True)
    keep_summaries(notebook, ReadModel())
    assert notebook["cells"][0]["outputs"][1]["data"][WIDGET_VIEW]["model_id"] == widget.model_id


def test_a_summary_of_another_workspace_is_kept_as_it_was(widget, tmp_path):
    notebook = notebook_of(widget)
    before = dict(notebook["cells"][0]["outputs"][0]["data"])
    Conversation(name="Keeper", memory_md_path=memory_path("Keeper")).add("User", "Later.")
    keep_summaries(notebook, ReadModel(tmp_path / "elsewhere"))
    assert notebook["cells"][0]["outputs"][0]["data"] == before
