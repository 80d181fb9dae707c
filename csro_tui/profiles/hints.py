"""Static hints about a policy's code, each with its line: shown beside a profile
as hints, never as reasons to reject.

- a method of `Policy` the referee never calls (it calls only `__init__` and
  `act`) and no code of the policy calls either, like an `update(obs, action)`
  that was meant to learn;
- state on `self` that is written but never read;
- randomness not drawn from `game["seed"]` (the module-level `random`
  functions, `random.Random()` without a seed, numpy's global generator).

The code is only parsed here, never run.  `profile_hints` adds the branches
that never ran while the policy was profiled (profiles/coverage.py), which
the profile carries.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

CALLED_BY_REFEREE = {"__init__", "act"}
# Calls on an attribute that change it without reading what it holds.
MUTATORS = {"append", "extend", "add", "update", "insert", "clear", "setdefault", "appendleft", "discard"}
SEEDED_RANDOM_FACTORIES = {"Random", "SystemRandom"}


@dataclass(frozen=True)
class Hint:
    line: int
    message: str

    def to_dict(self) -> dict:
        return {"line": self.line, "message": self.message}


def static_hints(source: str) -> list[Hint]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    hints: list[Hint] = []
    policy = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Policy"), None)
    if policy is not None:
        hints += _uncalled_methods(policy, tree)
        hints += _unread_state(policy)
    hints += _unseeded_randomness(tree)
    return sorted(hints, key=lambda hint: (hint.line, hint.message))


def profile_hints(source: str, profile=None) -> list[Hint]:
    """The static hints and, when `profile` measured them, the branches that never ran
    while it was made, in line order."""
    hints = static_hints(source)
    for entry in (getattr(profile, "never_ran", None) or []):
        hints.append(Hint(int(entry["line"]), str(entry["message"])))
    return sorted(hints, key=lambda hint: (hint.line, hint.message))


def _uncalled_methods(policy: ast.ClassDef, tree: ast.Module) -> list[Hint]:
    methods = {node.name: node for node in policy.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            used.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            used.add(node.id)
    return [
        Hint(node.lineno, f"method {name}() is never called: the referee calls only __init__ and act, "
                          "and no code here calls it")
        for name, node in methods.items()
        if name not in CALLED_BY_REFEREE and name not in used and not (name.startswith("__") and name.endswith("__"))
    ]


def _self_attribute(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _unread_state(policy: ast.ClassDef) -> list[Hint]:
    written: dict[str, int] = {}
    read: set[str] = set()
    write_only: set[int] = set()  # ids of self.x nodes that only change x
    for node in ast.walk(policy):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                base = part.value if isinstance(part, ast.Subscript) else part
                name = _self_attribute(base)
                if name is not None:
                    written.setdefault(name, getattr(part, "lineno", node.lineno))
                    write_only.add(id(base))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            function = node.value.func
            if isinstance(function, ast.Attribute) and function.attr in MUTATORS:
                name = _self_attribute(function.value)
                if name is not None:
                    written.setdefault(name, node.lineno)
                    write_only.add(id(function.value))
    for node in ast.walk(policy):
        name = _self_attribute(node)
        if name is not None and isinstance(node.ctx, ast.Load) and id(node) not in write_only:
            read.add(name)
    methods = {node.name for node in policy.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    kept = _kept_arguments(policy)
    return [
        Hint(line, f"self.{name} is written but never read")
        for name, line in written.items()
        if name not in read and name not in methods and name not in kept
    ]


def _kept_arguments(policy: ast.ClassDef) -> set[str]:
    """Attributes `__init__` sets straight from its own arguments (`self.player = player`, as
    the contract's example does): keeping an argument unused is no sign of a bug."""
    init = next((node for node in policy.body if isinstance(node, ast.FunctionDef) and node.name == "__init__"), None)
    if init is None:
        return set()
    arguments = {arg.arg for arg in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]}
    kept = set()
    for node in ast.walk(init):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in arguments):
            kept.update(name for target in node.targets if (name := _self_attribute(target)) is not None)
    return kept


def _unseeded_randomness(tree: ast.Module) -> list[Hint]:
    hints = []
    modules = {"random": "random", "numpy": "numpy", "np": "numpy"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module == "random":
            for alias in node.names:
                if alias.name not in SEEDED_RANDOM_FACTORIES:
                    hints.append(Hint(node.lineno, f"imports random.{alias.name}: randomness not drawn from game['seed']"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        function = node.func
        owner = function.value
        if isinstance(owner, ast.Name) and modules.get(owner.id) == "random":
            if function.attr in SEEDED_RANDOM_FACTORIES:
                if not node.args and not node.keywords:
                    hints.append(Hint(node.lineno, f"random.{function.attr}() without a seed: use random.Random(game['seed'])"))
            elif function.attr != "seed":
                hints.append(Hint(node.lineno, f"random.{function.attr}() draws from the module's shared generator, "
                                               "not from game['seed']"))
        elif (isinstance(owner, ast.Attribute) and owner.attr == "random" and isinstance(owner.value, ast.Name)
              and modules.get(owner.value.id) == "numpy"):
            if function.attr in ("default_rng", "RandomState", "Generator"):
                if not node.args and not node.keywords:
                    hints.append(Hint(node.lineno, f"numpy.random.{function.attr}() without a seed: seed it from game['seed']"))
            else:
                hints.append(Hint(node.lineno, f"numpy.random.{function.attr}() draws from numpy's global generator, "
                                               "not from game['seed']"))
    return hints
