"""``pip install .`` in a clean virtual environment builds and enables both Jupyter extensions."""

import json
import re
import shutil
import subprocess
import sys

import nbmemory
from support import ROOT

SKIP = shutil.ignore_patterns(".venv", "node_modules", "lib", "labextension", ".git", "*.pyc")


def test_pip_install_builds_and_enables_the_lab_and_server_extensions(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)
    shutil.copytree(ROOT / "labextension", source / "labextension", ignore=SKIP)
    assert not (source / "nbmemory" / "labextension").exists()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(source), "jupyterlab>=4.6,<5"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    def listed(*args):
        run = subprocess.run([str(venv / "bin" / "jupyter"), *args], capture_output=True, text=True)
        return re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)  # without colours

    version = nbmemory.__version__
    assert f"nbmemory v{version} enabled OK" in listed("labextension", "list")
    servers = listed("server", "extension", "list")
    assert "nbmemory enabled" in servers and f"nbmemory {version} OK" in servers


def test_the_version_is_written_once():
    """pyproject.toml reads it from ``nbmemory/__init__.py``; npm needs a copy, kept in step."""
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    package = json.loads((ROOT / "labextension" / "package.json").read_text())
    assert package["version"] == nbmemory.__version__
