"""Branches of a policy that never ran while it was profiled (a static hint's
dynamic sibling, issue 22: "branches that never ran against any probe").

The policy's code is instrumented here as text (parsed, never run): every
condition of an `if`, `elif`, `while` or conditional expression inside a
function becomes `csro_coverage_taken_(N, condition)`, which notes whether
it was true or false and returns its truth, and `Policy.act` is wrapped so
that one extra observation, `{"csro_coverage_report": True, ...}`, makes it
answer with the outcomes it saw, as a distribution over outcome ids (the
sandbox's ordinary answer, checked like any other).  Only insertions within
lines are made, so every line number stays the policy's own.  Conditions at
module or class level run while the module loads, before the helper exists,
and are left alone.

The instrumented code runs only in the sandbox, like the policy.  A policy
could forge its report; it would only change its own hints.  When any host
could not report (the policy failed, or the wrapper could not be installed),
the coverage is incomplete and no branch is said to have never run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

from csro_tui.profiles.hints import Hint

REPORT_KEY = "csro_coverage_report"
TAKEN = "csro_coverage_taken_"
MAX_CONDITION_CHARS = 50
# Over what a profile's coverage was measured, by profile kind (model.py).
WHERE = {"exact": "in any information state", "probes": "against any probe", "sampled": "against the benchmark bots"}

_HELPER = '''


# csro: branch coverage for the behaviour profile (added to this copy only)
csro_coverage_hits_ = set()


def csro_coverage_taken_(branch, condition):
    taken = not not condition
    csro_coverage_hits_.add(2 * branch + (0 if taken else 1))
    return taken


def csro_coverage_wrap_(cls):
    act = cls.__dict__.get("act")
    if type(act).__name__ != "function":
        return

    def act_reporting_coverage(self, obs, *args, **kwargs):
        if type(obs) is dict and obs.get("csro_coverage_report") is True:
            outcomes = sorted(csro_coverage_hits_) + [obs["legal_actions"][-1]]
            return {outcome: 1.0 / len(outcomes) for outcome in outcomes}
        return act(self, obs, *args, **kwargs)

    cls.act = act_reporting_coverage


try:
    csro_coverage_wrap_(Policy)
except Exception:
    pass
'''


@dataclass(frozen=True)
class Branch:
    """One instrumented condition: its kind ("if", "elif", "while", "expression"),
    its line, the condition's text, and the line of its else part (None: none)."""

    kind: str
    line: int
    condition: str
    else_line: int | None
    function: int  # index of the enclosing function (for "did this function run at all")
    inside: tuple[int, ...]  # outcome ids whose code contains this branch (innermost last)
    # The branch of an earlier `if` (no else) in the same block whose code always
    # leaves (return, raise, break, continue): if it was always true, this never ran.
    after: int | None = None
    leaves: bool = False  # an `if` with no else whose code always leaves (return, raise, break, continue)


@dataclass
class Instrumented:
    source: str
    branches: list[Branch]

    @property
    def sentinel(self) -> int:
        """The outcome id every report carries (an empty report is not a failure)."""
        return 2 * len(self.branches)


def instrument(source: str) -> Instrumented | None:
    """The policy's code with its conditions noted, or None when it cannot be
    instrumented faithfully (it does not parse, the copy does not compile, or the
    copy read without its notes is not the original)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    finder = _Finder(source)
    for node in tree.body:
        finder.top_level(node)
    if not finder.branches:
        return Instrumented(source, [])
    # Lines as the parser counts them (\n, \r\n, \r; not str.splitlines' form feeds and
    # separators), as bytes: ast's columns are UTF-8 byte offsets.
    encoded = source.encode("utf-8").splitlines(keepends=True)
    # Insertions at (line, byte column); applied from the end so earlier positions hold.
    for (line, column, order), text in sorted(finder.edits, reverse=True):
        row = encoded[line - 1]
        encoded[line - 1] = row[:column] + text.encode("utf-8") + row[column:]
    text = b"".join(encoded).decode("utf-8")
    if not text.endswith("\n"):
        text += "\n"
    text += _HELPER
    try:
        instrumented = ast.parse(text)
        compile(instrumented, "<policy coverage>", "exec", dont_inherit=True)  # compiled only, never run
    except (SyntaxError, ValueError):
        return None
    # The copy must be the policy plus the notes and nothing else: with every
    # csro_coverage_taken_(N, condition) read as the condition, its code is the original's.
    unwrapped = _Unwrap().visit(instrumented)
    if ast.dump(ast.Module(unwrapped.body[: len(tree.body)], [])) != ast.dump(ast.Module(tree.body, [])):
        return None
    return Instrumented(text, finder.branches)


class _Unwrap(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id == TAKEN and len(node.args) == 2:
            return self.visit(node.args[1])
        return self.generic_visit(node)


_LEAVING = (ast.Return, ast.Raise, ast.Break, ast.Continue)


class _Finder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.branches: list[Branch] = []
        self.edits: list[tuple[tuple[int, int, int], str]] = []
        self.functions = 0
        self.after: int | None = None

    def top_level(self, node: ast.AST) -> None:
        """Module and class bodies run at load: only the functions in them are instrumented."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node)
        elif isinstance(node, ast.ClassDef):
            for child in node.body:
                self.top_level(child)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions += 1
        saved, self.after = self.after, None
        self.block(node.body, self.functions, ())
        self.after = saved

    def block(self, statements: list[ast.stmt], function: int, inside: tuple[int, ...], elif_: bool = False) -> None:
        """Statements in order, each knowing the latest earlier `if` here that always leaves."""
        saved = self.after
        for statement in statements:
            number = len(self.branches)
            self.visit(statement, function, inside, elif_)
            if isinstance(statement, ast.If) and self.branches[number].leaves:
                self.after = number
        self.after = saved

    def visit(self, node: ast.AST, function: int, inside: tuple[int, ...], elif_: bool = False) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for default in [*node.args.defaults, *node.args.kw_defaults, *node.decorator_list]:
                if default is not None:
                    self.visit(default, function, inside)
            self.function(node)
            return
        if isinstance(node, ast.Lambda):
            self.functions += 1
            saved, self.after = self.after, None
            self.visit(node.body, self.functions, ())
            self.after = saved
            return
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            kind = "expression" if isinstance(node, ast.IfExp) else "while" if isinstance(node, ast.While) else (
                "elif" if elif_ else "if")
            number = len(self.branches)
            orelse = node.orelse if isinstance(node, (ast.If, ast.While)) else [node.orelse]
            else_line = None
            if isinstance(node, ast.If) and orelse:
                else_line = orelse[0].lineno
            elif isinstance(node, ast.IfExp):
                else_line = node.orelse.lineno
            leaves = isinstance(node, ast.If) and not node.orelse and isinstance(node.body[-1], _LEAVING)
            self.branches.append(Branch(kind, node.lineno, self._text(node.test), else_line, function, inside,
                                        self.after, leaves))
            self._wrap(node.test, number)
            self.visit(node.test, function, inside)
            if isinstance(node, ast.IfExp):
                self.visit(node.body, function, (*inside, 2 * number))
                self.visit(node.orelse, function, (*inside, 2 * number + 1))
                return
            self.block(node.body, function, (*inside, 2 * number))
            is_elif = isinstance(node, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If) and (
                self._starts_with_elif(orelse[0]))
            # a while's else runs when the condition turns false, so it is not the loop's code
            self.block(orelse, function, inside if isinstance(node, ast.While) else (*inside, 2 * number + 1),
                       elif_=is_elif)
            return
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and all(isinstance(item, ast.stmt) for item in value):
                self.block(value, function, inside)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item, function, inside)
            elif isinstance(value, ast.AST):
                self.visit(value, function, inside)

    def _wrap(self, test: ast.expr, number: int) -> None:
        # ast's columns are UTF-8 byte offsets, as the lines are edited here
        start = (test.lineno, test.col_offset, 1)
        end = (test.end_lineno, test.end_col_offset, 0)
        self.edits.append((start, f"{TAKEN}({number}, "))
        self.edits.append((end, ")"))

    def _starts_with_elif(self, node: ast.If) -> bool:
        lines = self.source.splitlines()
        if node.lineno - 1 >= len(lines):
            return False
        return lines[node.lineno - 1].lstrip().startswith("elif")

    def _text(self, test: ast.expr) -> str:
        text = ast.get_source_segment(self.source, test) or ""
        text = " ".join(text.split())
        return text if len(text) <= MAX_CONDITION_CHARS else text[: MAX_CONDITION_CHARS - 1] + "…"


@dataclass
class Coverage:
    """The outcomes the policy's conditions had over a profile's episodes."""

    instrumented: Instrumented
    hits: set[int] = field(default_factory=set)
    complete: bool = True

    def report(self, host: Any, episode_ids: list[int]) -> None:
        """Ask each of `host`'s episodes (their play done, the host still running) for
        the outcomes its module saw; a host that cannot answer makes the coverage incomplete."""
        if not episode_ids:
            return
        sentinel = self.instrumented.sentinel
        question = {REPORT_KEY: True, "legal_actions": list(range(sentinel + 1))}
        try:
            answers = host.act([(episode, dict(question)) for episode in episode_ids])
        except Exception:  # noqa: BLE001 - the policy failed or forged nonsense: no coverage from it
            self.complete = False
            return
        for answer in answers:
            outcomes = answer if isinstance(answer, dict) else {}
            if sentinel not in outcomes:  # the wrapper is not there: act answered as the policy
                self.complete = False
                return
            self.hits.update(int(outcome) for outcome in outcomes if 0 <= int(outcome) < sentinel)

    def never_ran(self, where: str) -> list[Hint]:
        """Hints for the code that never ran, outermost only, each at its line;
        nothing when the coverage is incomplete.  `where` says over what
        ("against any probe", "in any information state")."""
        if not self.complete:
            return []
        branches = self.instrumented.branches
        evaluated = [2 * n in self.hits or 2 * n + 1 in self.hits for n in range(len(branches))]
        ran_functions = {branch.function for branch, seen in zip(branches, evaluated) if seen}
        silent: set[int] = set()  # outcome ids already reported as never run (their code is covered by that)
        cut: set[int] = set()  # branches reported as always leaving: the code after them never ran
        hints = []
        for number, branch in enumerate(branches):
            if (branch.function not in ran_functions or silent.intersection(branch.inside)
                    or branch.after in cut):
                continue
            code = f"`{branch.condition}`"
            if not evaluated[number]:
                hints.append(Hint(branch.line, f"the {_what(branch)} {code} was never reached {where}"))
                silent.update((2 * number, 2 * number + 1))
                continue
            if 2 * number not in self.hits:
                unused = {"while": "the loop's body never ran",
                          "expression": "the value before `if` was never used"}.get(branch.kind,
                                                                                     "the code under it never ran")
                hints.append(Hint(branch.line, f"{code} was never true {where}: {unused}"))
                silent.add(2 * number)
            if 2 * number + 1 not in self.hits:
                if branch.else_line is not None:
                    unused = ("the value after `else` was never used" if branch.kind == "expression"
                              else "this else part never ran")
                    at = "" if branch.else_line == branch.line else f" (line {branch.line})"
                    hints.append(Hint(branch.else_line, f"{code}{at} was never false {where}: {unused}"))
                    silent.add(2 * number + 1)
                elif branch.leaves:
                    hints.append(Hint(branch.line, f"{code} was always true {where}: its branch leaves, so the "
                                                   "code after it never ran"))
                    cut.add(number)
        return hints


def _what(branch: Branch) -> str:
    return {"expression": "conditional expression on", "while": "loop on"}.get(branch.kind, branch.kind)



def coverage_host_factory(factory: Callable, coverage: Coverage) -> Callable:
    """A host factory whose hosts ask every episode for its coverage report just before
    the episodes end (the tabulariser ends them all when it has asked every state)."""

    def make(*args: Any, **kwargs: Any) -> Any:
        return _ReportingHost(factory(*args, **kwargs), coverage)

    return make


class _ReportingHost:
    def __init__(self, host: Any, coverage: Coverage) -> None:
        self._host = host
        self._coverage = coverage

    def end_episodes(self, episode_ids: list[int]) -> None:
        self._coverage.report(self._host, list(episode_ids))
        self._host.end_episodes(episode_ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)
