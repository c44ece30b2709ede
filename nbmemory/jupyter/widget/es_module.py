"""The one ES module anywidget sends: ``static/widget.js`` with every module it imports inlined.

The widget's views are plain ES modules under ``static/widget/`` (a browser can load them as
they are); anywidget sends one module, not a folder. Each module ``widget.js`` imports, and
theirs, and the vendored marked, runs inside a function whose result is its export list, and
each import becomes a read of that result, dependencies first. String work on a few small files
when the widget is imported: no bundler, no build step, nothing for ``pip install`` to run.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

STATIC = Path(__file__).parent.parent / "static"
"""The widget's browser files: ``widget.js``, ``widget/*.js``, ``widget.css``, marked."""
MARKED_VERSION = "18.2.1"
"""The vendored renderer: npm ``marked`` 18.2.1, ``lib/marked.esm.js`` (MIT, see marked.LICENSE)."""

_EXPORTS = re.compile(r"export\s*\{([^}]*)\}\s*;?\s*(?://# sourceMappingURL=\S*\s*)?$")
_IMPORT = re.compile(r'^import \{([^}]*)\} from "(\.\.?/[^"]+)";[ \t]*\n', re.MULTILINE)
_MODULE_SYNTAX = re.compile(r"^[ \t]*(?:import|export)\b", re.MULTILINE)


_VENDORED = STATIC / "marked.esm.js"


def _pairs(names: str) -> list[tuple[str, str]]:
    """``a, b as c`` of an import or export list as ``(name, alias)`` pairs."""
    pairs = []
    for part in names.split(","):
        name, _, alias = part.strip().partition(" as ")
        if name:
            pairs.append((name.strip(), alias.strip() or name.strip()))
    return pairs


def _property(key: str, value: str) -> str:
    """``key: value`` of an object literal or pattern, as ``key`` alone when they are the same."""
    return key if key == value else f"{key}: {value}"


def _stripped(text: str) -> str:
    """One of the widget's own modules as sent: without its whole-line ``//`` comments, blank
    lines and indentation (the source keeps them for people; the browser needs none of them).

    Safe because no multi-line template literal of ``static/widget*`` holds such a line:
    tests/test_widget_module.py checks, with TypeScript's parser, that every literal of the
    module sent is the source's.
    """
    lines = (line.strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//")) + "\n"


def _variable(path: Path) -> str:
    """The name an inlined module's exports are kept under: ``__widget_dom_js``, ..."""
    return "__" + re.sub(r"\W", "_", path.relative_to(STATIC).as_posix())


def _linked(path: Path) -> tuple[str, list[Path]]:
    """A module's text with each import a read of an inlined module, and the modules it reads."""
    text = path.read_text(encoding="utf-8")
    needs: list[Path] = []

    def read(match: re.Match[str]) -> str:
        need = Path(os.path.normpath(path.parent / match.group(2)))
        if not need.is_relative_to(STATIC) or not need.is_file():
            raise RuntimeError(f"{path.name} imports {match.group(2)}, not a file of static/")
        needs.append(need)
        names = ", ".join(_property(name, alias) for name, alias in _pairs(match.group(1)))
        return f"const {{ {names} }} = {_variable(need)};\n"

    return _IMPORT.sub(read, text), needs


def _inlined(path: Path, text: str) -> str:
    """An imported module as a function run once; its named exports become its result."""
    found = _EXPORTS.search(text)
    body = text[: found.start()] if found else text
    if found is None or _MODULE_SYNTAX.search(body):
        raise RuntimeError(
            f"static/{path.relative_to(STATIC).as_posix()}: a module the widget imports may "
            'only have `import { ... } from "./file.js";` lines and one export list at its end'
        )
    exports = ", ".join(_property(alias, name) for name, alias in _pairs(found.group(1)))
    return f"const {_variable(path)} = (() => {{\n{body}\nreturn {{ {exports} }};\n}})();"


@functools.cache
def browser_module(compact: bool = True) -> str:
    """widget.js with the modules it imports inlined, dependencies first, ``compact`` (see
    :func:`_stripped`) but the vendored marked, which comes minified.

    Raises ``RuntimeError`` for what it cannot inline: an import of a file outside ``static/``,
    modules that import each other, or a module with other ``import``/``export`` syntax.
    """
    done: dict[Path, str] = {}  # dependencies before what imports them

    def visit(path: Path, importing: tuple[Path, ...]) -> None:
        if path in importing:
            raise RuntimeError(f"static/ modules import each other: {path.name}")
        if path not in done:
            text, needs = _linked(path)
            for need in needs:
                visit(need, (*importing, path))
            done[path] = _stripped(text) if compact and path != _VENDORED else text

    entry = STATIC / "widget.js"
    visit(entry, ())
    widget = done.pop(entry)
    if re.search(r"^[ \t]*import\b", widget, re.MULTILINE):
        raise RuntimeError('static/widget.js may import only as `import { ... } from "./file.js";`')
    return "\n".join([*(_inlined(path, text) for path, text in done.items()), widget])
