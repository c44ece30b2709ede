import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT


def test_ruff_finds_nothing_to_fix():
    check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert fmt.returncode == 0, fmt.stdout


MAX_FUNCTION_LINES = 150
SRC = ROOT / "labextension" / "src"


def test_no_front_end_function_is_over_150_lines():
    """Every function of the panel's, the widget's and the shared views' sources (declarations,
    arrow functions, methods, constructors), measured by TypeScript's parser: small pieces, not
    one long closure or constructor."""
    node = shutil.which("node")
    parser = ROOT / "labextension" / "node_modules" / "typescript"
    if node is None or not parser.is_dir():
        pytest.skip("needs node and labextension's npm packages (pip install -e . installs them)")
    files = sorted(SRC.rglob("*.ts"))
    assert SRC / "widget" / "index.ts" in files and SRC / "views" / "markdown.ts" in files
    run = subprocess.run(
        [node, ROOT / "tests" / "function_lengths.cjs", *files],
        capture_output=True,
        text=True,
        check=True,
    )
    functions = json.loads(run.stdout)
    types_only = {SRC / "widget" / "model.ts"}
    assert {Path(f["file"]) for f in functions} == set(files) - types_only  # every file parsed
    long = [
        f"{Path(f['file']).relative_to(ROOT)}:{f['line']} {f['name']}: {f['lines']} lines"
        for f in functions
        if f["lines"] > MAX_FUNCTION_LINES
    ]
    assert not long, "\n".join(long)


IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;]*?\bfrom\s+['"]([^'"]+)['"]""", re.M | re.S)


def test_the_shared_views_import_no_framework():
    """labextension/src/views/ is built into the panel and into the widget's module: it may
    import its own modules and marked, nothing of JupyterLab, Lumino or anywidget."""
    imported = {
        (path.name, target)
        for path in (SRC / "views").glob("*.ts")
        for target in IMPORT.findall(path.read_text())
    }
    assert ("markdown.ts", "marked") in imported
    strange = {(name, t) for name, t in imported if not (t == "marked" or t.startswith("./"))}
    assert not strange, strange
