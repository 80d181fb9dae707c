"""The `csro` command: sub-commands live in `csro_tui.commands`.

With no sub-command, `csro` opens the TUI.  Every user-facing error ends as
one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import sys

from csro_tui import __version__, commands
from csro_tui.errors import CsroError
from csro_tui.policies.failures import PolicyFailure

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what `yes | head` reports

_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<name>[^']*)' \(choose from (?P<choices>.*)\)")


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and a pointer to --help, not a usage block.

    Sub-command parsers are built from the same class (argparse's default),
    so `csro run --iterations x` reads
    "csro run: error: argument --iterations: not a whole number: 'x' (see csro run --help)".
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        from csro_tui.names import did_you_mean

        match = _INVALID_CHOICE.search(message)
        if match:
            choices = [c.strip().strip("'") for c in match.group("choices").split(",")]
            message += did_you_mean(match.group("name"), choices)
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="csro",
        description="Code-Space Response Oracles: design game strategies as code, with an LLM, under review.",
    )
    parser.add_argument("--version", action="version", version=f"csro-tui {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):  # shared helpers, not commands
            continue
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`csro eval ... | head`): stop quietly. Later
        # writes, including the interpreter's final flush, go to /dev/null.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
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
