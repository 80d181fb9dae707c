"""The `csro` command: sub-commands live in `csro_tui.commands`.

With no sub-command, `csro` opens the TUI.  Every user-facing error ends as
one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from csro_tui import __version__, commands
from csro_tui.errors import CsroError
from csro_tui.policies.failures import PolicyFailure

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csro",
        description="Code-Space Response Oracles: design game strategies as code, with an LLM, under review.",
    )
    parser.add_argument("--version", action="version", version=f"csro-tui {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        if "tui" in parser._subparsers._group_actions[0].choices:  # noqa: SLF001
            args = parser.parse_args(["tui", *(argv or [])])
        else:
            parser.print_help()
            return 0
    try:
        return int(args.func(args) or 0)
    except (CsroError, PolicyFailure) as error:
        print(f"csro: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("csro: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
