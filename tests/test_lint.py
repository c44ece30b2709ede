import json
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
STATIC = ROOT / "nbmemory" / "jupyter" / "static"
VENDORED = {STATIC / "marked.esm.js"}  # npm's marked, as published (minified)


def test_no_front_end_function_is_over_150_lines():
    """Every function of the widget's modules and the panel's sources (declarations, arrow
    functions, methods, constructors), measured by TypeScript's parser: small pieces, not one
    long closure or constructor."""
    node = shutil.which("node")
    parser = ROOT / "labextension" / "node_modules" / "typescript"
    if node is None or not parser.is_dir():
        pytest.skip("needs node and labextension's npm packages (pip install -e . installs them)")
    files = sorted(set(STATIC.rglob("*.js")) - VENDORED)
    files += sorted((ROOT / "labextension" / "src").rglob("*.ts"))
    assert STATIC / "widget.js" in files
    run = subprocess.run(
        [node, ROOT / "tests" / "function_lengths.cjs", *files],
        capture_output=True,
        text=True,
        check=True,
    )
    functions = json.loads(run.stdout)
    assert {Path(f["file"]) for f in functions} == set(files)  # every file parsed
    long = [
        f"{Path(f['file']).relative_to(ROOT)}:{f['line']} {f['name']}: {f['lines']} lines"
        for f in functions
        if f["lines"] > MAX_FUNCTION_LINES
    ]
    assert not long, "\n".join(long)
