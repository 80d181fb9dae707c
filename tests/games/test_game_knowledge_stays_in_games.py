"""Game knowledge lives in games/: nothing outside it branches on a particular game.

An AST scan of csro_tui/ outside games/ for what a branch on one game needs:
a built-in game's name as a string constant ("rrps", "kuhn_poker(...)"), a
game's spec class (RRPSSpec), a kind constant named after a game (KUHN,
RRPS), or an import of one game's module (csro_tui.games.rrps).  Code asks
the GameSpec instead (presentation(), exact, history_is_state,
mixture_probes).  Docstrings, comments and help text that merely mention a
game are prose, not branches: only whole-string constants count.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import csro_tui
from csro_tui.games import registry
from csro_tui.games.base import GameSpec

PACKAGE = Path(csro_tui.__file__).parent

# Modules of games/ that are about games in general; any other is one game's (or one family's).
GENERAL_GAME_MODULES = {"base", "registry", "presentation"}

# (file relative to csro_tui/, the constant) -> why it is a value, not a branch.
ALLOWED_NAMES = {
    ("config.py", "kuhn_poker"): "the default game of a new run: a setting's value",
    ("tui/model.py", "kuhn_poker"): "the dashboard's initial game before a session loads: the same default value",
    ("tui/screens/start.py", "rrps(num_repetitions=100)"): "an example game string the start form suggests",
    ("tui/screens/start.py", "repeated_leduc(num_hands=10)"): "an example game string the start form suggests",
}


def game_names() -> set[str]:
    return set(registry.BUILTIN) | set(registry.ALIASES)


def kind_constants() -> set[str]:
    names = set()
    for name in game_names():
        names |= {name.upper(), name.removesuffix("_poker").upper()}
    return names


def spec_classes() -> set[str]:
    classes, todo = set(), [GameSpec]
    while todo:
        for sub in todo.pop().__subclasses__():
            classes.add(sub.__name__)
            todo.append(sub)
    return classes


def _game_name_in(text: str, names: set[str]) -> str | None:
    match = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)(\(.*\))?\s*", text, re.S)
    if match and match.group(1) in names:
        return match.group(1)
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def branches_on_a_game(relative: str, source: str) -> list[str]:
    """Every place in `source` (the module csro_tui/`relative`) that names one game as code would branch on it."""
    tree = ast.parse(source)
    names, kinds, classes = game_names(), kind_constants(), spec_classes()
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        where = f"{relative}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            game = _game_name_in(node.value, names)
            if game and (relative, node.value) not in ALLOWED_NAMES:
                found.append(f"{where}: the game name {node.value!r}")
        elif isinstance(node, ast.Name) and (node.id in kinds or node.id in classes):
            found.append(f"{where}: {node.id}")
        elif isinstance(node, ast.Attribute) and (node.attr in kinds or node.attr in classes):
            found.append(f"{where}: .{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.module == "csro_tui.games":
                modules = [f"csro_tui.games.{alias.name}" for alias in node.names]
            for module in modules:
                parts = module.split(".")
                if parts[:2] == ["csro_tui", "games"] and len(parts) > 2 and parts[2] not in GENERAL_GAME_MODULES:
                    found.append(f"{where}: imports {module}")
            for alias in node.names:
                if alias.name in classes or alias.name in kinds:
                    found.append(f"{where}: imports {alias.name}")
    return found


def _outside_games() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "games" not in p.relative_to(PACKAGE).parts[:1])


def test_no_code_outside_games_branches_on_a_particular_game():
    found = [
        hit
        for path in _outside_games()
        for hit in branches_on_a_game(path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8"))
    ]
    assert found == [], "game knowledge outside games/ (ask the GameSpec instead):\n" + "\n".join(found)


def test_every_allowed_exception_still_exists():
    """An exception nobody needs any more is removed from the list, not kept as a blind spot."""
    for relative, constant in ALLOWED_NAMES:
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        constants = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
        assert constant in constants, (relative, constant)


@pytest.mark.parametrize(
    "source, expected",
    [
        ('if spec.name.startswith("rrps"):\n    pass\n', "the game name 'rrps'"),
        ('kind = "leduc_poker" if x else "other"\n', "the game name 'leduc_poker'"),
        ("from csro_tui.games.rrps import RRPSSpec\nok = type(spec) is RRPSSpec\n", "imports csro_tui.games.rrps"),
        ("from csro_tui.games import poker\n", "imports csro_tui.games.poker"),
        ("if kind == KUHN:\n    pass\n", "KUHN"),
        ("if spec.kind == play.REPEATED_LEDUC:\n    pass\n", ".REPEATED_LEDUC"),
        ('"""A docstring about rrps."""\nx = "e.g. kuhn_poker, rrps"\n', None),
    ],
)
def test_the_scan_finds_each_kind_of_branch(source, expected):
    """The scan is not vacuous: each way of branching on a game is found (and prose is not)."""
    found = branches_on_a_game("oracles/example.py", source)
    if expected is None:
        assert found == []
    else:
        assert any(expected in hit for hit in found), found
