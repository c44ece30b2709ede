"""``python -m nbmemory``: the same as the ``nbmemory`` command."""

from __future__ import annotations

import sys

from nbmemory.cli import main

if __name__ == "__main__":
    sys.exit(main())
