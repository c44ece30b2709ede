"""The ``nbmemory`` command (also ``python -m nbmemory``)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the chosen command; returns the exit code."""
    parser = argparse.ArgumentParser(prog="nbmemory", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write, reload and compact a sample memory")
    demo.add_argument("--workspace", help="workspace folder (default: $WORKSPACE_DIR)")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from nbmemory.demo import run

        run(args.workspace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
