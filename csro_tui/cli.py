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
from csro_tui.names import close_names, did_you_mean
from csro_tui.sandbox.failures import PolicyFailure

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
        code = _main(argv)
        sys.stdout.flush()  # a reader gone before the last write shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader went away (`csro eval ... | head`): stop quietly. Later
        # writes, including the interpreter's final flush, go to /dev/null.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE


_TOP_LEVEL_FLAGS = ("-h", "--help", "--version")


def _command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # noqa: SLF001 - argparse keeps sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    return {}


def _with_default_command(argv: list[str], commands: dict[str, argparse.ArgumentParser]) -> list[str]:
    """`csro [TUI OPTIONS] [SESSION]` is `csro tui ...`, as the README presents it.

    A first word that is no command goes to the TUI as a session, unless it is
    a near miss of a command (`csro rn`) and no such path exists: that stays
    an unknown command with its "did you mean".
    """
    if "tui" not in commands:
        return argv
    if not argv:
        return ["tui"]
    first = argv[0]
    if first in commands or first in _TOP_LEVEL_FLAGS:
        return argv
    if not first.startswith("-"):
        if close_names(first, commands) and not os.path.exists(first):
            return argv
    return ["tui", *argv]


def _unknown_arguments(parser: argparse.ArgumentParser, extras: list[str]) -> None:
    """Exit with "unknown option --x (did you mean --y?)" from the parser the option was given to."""
    first = extras[0]
    if first.startswith("-") and first != "-":
        name = first.split("=", 1)[0]
        # Compared without the dashes, which every option shares and which would make them all look alike.
        options = [o[2:] for o in parser._option_string_actions if o.startswith("--")]  # noqa: SLF001
        close = close_names(name.lstrip("-"), options)
        hint = f" (did you mean {' or '.join('--' + o for o in close)}?)" if close else ""
        parser.error(f"unknown option {name}{hint}")
    parser.error(f"unexpected argument {first!r}")


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    commands = _command_parsers(parser)
    argv = _with_default_command(list(sys.argv[1:] if argv is None else argv), commands)
    args, extras = parser.parse_known_args(argv)
    if extras:
        _unknown_arguments(commands.get(args.command or "", parser), extras)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except (CsroError, PolicyFailure) as error:
        # A mistyped name: its "did you mean" and list, then where the names are explained.
        pointer = f" (see csro {args.command} --help)" if getattr(error, "unknown_name", False) else ""
        from csro_tui.text import one_line  # start-up time: importing it loads rich; only on an error

        # An error may quote a name, path or reason from a file from elsewhere (issue 35).
        print(f"csro: error: {one_line(error)}{pointer}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("csro: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
