"""The one ES module anywidget sends: ``static/widget.js``, built from TypeScript.

The widget's views are written once, in TypeScript, beside the JupyterLab panel's
(``labextension/src/widget/`` and the ``views/`` they share); esbuild bundles them with marked
into ``static/widget.js`` when the package is built (``npm run build:widget``, part of the
labextension's build that ``pip install`` runs). The wheel ships the built file; a source
checkout has it once ``pip install -e .`` has run.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent.parent / "static"
"""The widget's browser files: the built ``widget.js``, ``widget.css`` and marked's licence."""
MODULE = STATIC / "widget.js"


def browser_module() -> str:
    """The built module's text; ``RuntimeError`` saying how to build it when it is missing."""
    try:
        return MODULE.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RuntimeError(
            f"nbmemory's widget module {MODULE} is not built: run `pip install -e .` in the "
            "nbmemory checkout (or `npm run build:widget` in its labextension folder)"
        ) from None
