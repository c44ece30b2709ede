"""What a saved notebook keeps of its memory widgets: a summary of the memory as it was saved.

A ``MemoryWidget`` shows as two outputs (``MemoryWidget._ipython_display_``): a static summary,
whose output metadata names the agent, its workspace and the view beside it, then that view
(``application/vnd.jupyter.widget-view+json``). A notebook reopened without the kernel that made
the view has no widget model for it, and ipywidgets says "Error displaying widget: model not
found" unless the notebook keeps the widget state ("Save Widget State Automatically", off by
default). The summary was also the memory as it was when the cell ran.

So, as the server writes a notebook (a pre-save hook of its contents manager: it changes the
file, not the notebook open in the browser):

- each summary is made again from the memory as it is now, when the server reads the workspace
  the widget read (a memory kept in RAM, or another workspace, keeps the summary it had);
- a view whose state the notebook does not keep is saved as a closed view (an empty model id,
  as ipywidgets marks a view that was closed), which the widget renderer hides: reopened, the
  notebook shows the summary, and no error. Its state kept, it shows the saved view.

The summary's text comes from the memory: :mod:`nbmemory.jupyter.widget.summary` escapes it.
"""

from __future__ import annotations

from typing import Any

from nbmemory.views.read_model import ReadModel

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _summarized(output: dict[str, Any]) -> dict[str, str] | None:
    """What a static summary output says it summarizes (``agent``, ``workspace``, ``view``);
    ``None`` for any other output."""
    said = (output.get("metadata") or {}).get("nbmemory")
    if not isinstance(said, dict):
        return None
    if not all(isinstance(said.get(key), str) for key in ("agent", "workspace", "view")):
        return None
    return said


def _summary_now(reader: ReadModel, agent: str, view: str) -> dict[str, str]:
    """Agent ``agent``'s summary as a display bundle, read from the memory now, beside ``view``."""
    # Imported here: the widget's modules load anywidget, which a server saving notebooks
    # without memory widgets never needs.
    from nbmemory.jupyter.widget.summary import as_html, as_plain_text, figures_now, summary_of

    summary = summary_of(figures_now(reader, agent))
    return {"text/html": as_html(summary, view), "text/plain": as_plain_text(summary)}


def keep_summaries(notebook: dict[str, Any], reader: ReadModel) -> None:
    """Rewrite ``notebook`` (nbformat 4 JSON) as it is to be saved: each memory widget's
    summary from the memory now, and its view, unless the notebook keeps its state, closed."""
    widgets = (notebook.get("metadata") or {}).get("widgets") or {}
    kept = (widgets.get(WIDGET_STATE) or {}).get("state") or {}
    here = str(reader.root)
    for cell in notebook.get("cells") or []:
        outputs = cell.get("outputs") or []
        views = set()
        for output in outputs:
            said = _summarized(output)
            if said is None:
                continue
            views.add(said["view"])
            if said["workspace"] == here:
                output["data"] = _summary_now(reader, said["agent"], said["view"])
        for output in outputs:
            view = (output.get("data") or {}).get(WIDGET_VIEW)
            if isinstance(view, dict) and view.get("model_id") in views - kept.keys():
                view["model_id"] = ""


def pre_save_hook(reader: ReadModel) -> Any:
    """The contents manager's pre-save hook that keeps summaries (see :func:`keep_summaries`)."""

    def hook(model: dict[str, Any], **_: Any) -> None:
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            keep_summaries(model["content"], reader)

    return hook
