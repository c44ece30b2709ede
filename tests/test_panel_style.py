"""The panel's stylesheet draws with JupyterLab's theme variables only, so every theme works."""

from __future__ import annotations

import re

from support import ROOT

STYLE = ROOT / "labextension" / "style" / "index.css"
KEYWORDS = {"none", "transparent", "inherit", "currentcolor", "0"}
COLOURED = re.compile(r"(color|background|border|outline|box-shadow|fill|stroke)", re.I)


def declarations(css: str) -> list[tuple[str, str]]:
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    found = []
    for block in re.findall(r"\{([^{}]*)\}", css):
        for line in block.split(";"):
            if ":" in line:
                name, value = line.split(":", 1)
                found.append((name.strip(), value.strip()))
    return found


def test_colours_come_from_jupyterlab_theme_variables_only():
    checked = 0
    for name, value in declarations(STYLE.read_text()):
        if not COLOURED.search(name):
            continue
        checked += 1
        assert not re.search(r"#[0-9a-f]{3,8}\b|\b(rgb|rgba|hsl|hsla)\(", value, re.I), (
            name,
            value,
        )
        for variable in re.findall(r"var\(\s*(--[\w-]+)", value):
            assert variable.startswith("--jp-"), (name, value)
        words = re.sub(r"var\([^()]*(\([^()]*\))?[^()]*\)", "", value)
        words = re.sub(r"-?[\d.]+(px|em|%)?|solid|dashed|inset|!important|,", " ", words)
        assert set(words.lower().split()) <= KEYWORDS, (name, value)
    assert checked > 50
