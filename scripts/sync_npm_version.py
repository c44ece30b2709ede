"""Copy nbmemory's version into ``labextension/package.json`` and its lock file.

The version is written in one place, ``nbmemory/__init__.py`` (``hatch version`` changes it);
npm needs a copy, spelled the npm way (``0.2.0a1`` is ``0.2.0-alpha.1``). jupyter-releaser runs
this after bumping the version (``pyproject.toml``, ``tool.jupyter-releaser.hooks``); by hand::

    hatch version 0.2.0 && python scripts/sync_npm_version.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRERELEASES = {"a": "alpha", "b": "beta", "rc": "rc"}


def python_version(root: Path = ROOT) -> str:
    """The version ``nbmemory/__init__.py`` declares (read, not imported)."""
    text = (root / "nbmemory" / "__init__.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE).group(1)


def npm_version(version: str) -> str:
    """A PEP 440 version as npm spells it: ``0.2.0a1`` -> ``0.2.0-alpha.1``."""
    match = re.fullmatch(r"(\d+\.\d+\.\d+)(?:(a|b|rc)(\d+))?(?:\.dev(\d+))?", version)
    if not match:
        raise ValueError(f"{version!r} has no npm spelling: use X.Y.Z, then aN, bN or rcN, .devN")
    release, kind, number, dev = match.groups()
    tags = [f"{PRERELEASES[kind]}.{number}"] if kind else []
    tags += [f"dev.{dev}"] if dev is not None else []
    return "-".join([release, ".".join(tags)]) if tags else release


def sync(root: Path = ROOT) -> str:
    """Write the npm spelling of the Python version into package.json and package-lock.json."""
    version = npm_version(python_version(root))
    for name in ("package.json", "package-lock.json"):
        path = root / "labextension" / name
        data = json.loads(path.read_text(encoding="utf-8"))
        data["version"] = version
        if "packages" in data:  # the lock file repeats it for the root package
            data["packages"][""]["version"] = version
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return version


if __name__ == "__main__":
    print(f"labextension version: {sync(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)}")
