"""``python -m nbmemory``: the same as the ``nbmemory`` command."""

from __future__ import annotations

from nbmemory.cli import run

if __name__ == "__main__":
    run()
