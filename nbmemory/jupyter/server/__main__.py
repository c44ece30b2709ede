"""``python -m nbmemory.jupyter.server [OPTIONS]``: the same as ``nbmemory server``."""

from nbmemory.jupyter.server.app import main

if __name__ == "__main__":
    main()
