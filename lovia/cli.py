"""The ``lovia`` command."""

from __future__ import annotations

import argparse
import sys

from lovia import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lovia",
        description="Chat with an agent from the terminal; sessions and in-flight runs survive crashes.",
    )
    parser.add_argument("--version", action="version", version=f"lovia {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    build_parser().parse_args(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
