"""An offline mutation operator: small random edits of a policy's syntax tree.

`ASTMutation` makes one change per child, chosen at random among the
places the parent offers:

- a numeric constant perturbed: an integer moved by 1 or 2 (staying
  non-negative: a negative literal is written `-x` in Python, so the sign
  stays with the operator), a float scaled by a log-normal factor;
- a comparison operator flipped: `<` to `>`, `<=` or `>=`; `==` to `!=`;
  `in` to `not in`; `is` to `is not` (and back);
- the branches of an `if`/`else` statement or an `a if c else b`
  expression swapped.

The child is the parent's tree written back out with `ast.unparse`, so
comments and formatting are not kept (docstrings are).  A change that
leaves the tree as it was, or code that `validate_source` rejects, is
drawn again, up to `max_tries` times; then `MutationError`.  The code is
parsed and rewritten, never run.  With the same `random.Random` state the
same child comes out, which makes the `evolve` oracle deterministic.

It plugs into the evolutionary search (`csro_tui.oracles.evolve`) as
its mutation operator, so evolution runs without any LLM.
"""

from __future__ import annotations

import ast
import copy
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from csro_tui.errors import CsroError
from csro_tui.oracles.evolve.mutation import MutationRequest, MutationResult
from csro_tui.sandbox.validation import validate_source

if TYPE_CHECKING:
    from csro_tui.oracles.base import OracleContext

DEFAULT_MAX_TRIES = 25

# Comparison operator -> what it may be flipped to.
_COMPARISON_FLIPS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.Gt, ast.LtE, ast.GtE),
    ast.LtE: (ast.GtE, ast.Lt, ast.Gt),
    ast.Gt: (ast.Lt, ast.GtE, ast.LtE),
    ast.GtE: (ast.LtE, ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_OPERATOR_TEXT = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}
_INT_STEPS = (-2, -1, 1, 2)


class MutationError(CsroError):
    """No valid, different child could be made from the parent."""


@dataclass(frozen=True)
class Mutant:
    source: str
    description: str  # e.g. "constant 0 -> 1 at line 9"


@dataclass(frozen=True)
class _Site:
    kind: str  # "constant", "comparison", "branches"
    index: int  # position in ast.walk order (the same in a deep copy)


def mutation_sites(tree: ast.AST) -> list[_Site]:
    """Every place a mutation can be made, in a fixed order."""
    sites = []
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Constant) and _is_number(node.value):
            sites.append(_Site("constant", index))
        elif isinstance(node, ast.Compare):
            sites.append(_Site("comparison", index))
        elif isinstance(node, ast.If) and node.orelse:
            sites.append(_Site("branches", index))
        elif isinstance(node, ast.IfExp):
            sites.append(_Site("branches", index))
    return sites


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class ASTMutation:
    """The offline mutation operator; see the module docstring."""

    name = "ast"
    uses_llm = False
    backend = None  # no LLM

    def __init__(self, max_tries: int = DEFAULT_MAX_TRIES) -> None:
        if max_tries < 1:
            raise ValueError(f"max_tries must be at least 1, not {max_tries}")
        self.max_tries = max_tries

    def mutate(self, source: str, rng: random.Random) -> Mutant:
        """One valid child of `source` that differs from it; raises `MutationError`."""
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError) as error:
            raise MutationError(f"the parent does not parse: {error}") from None
        sites = mutation_sites(tree)
        if not sites:
            raise MutationError("the parent has no numeric constant, comparison or if/else to mutate")
        original = ast.dump(tree)
        problems: list[str] = []
        for _ in range(self.max_tries):
            site = rng.choice(sites)
            child = copy.deepcopy(tree)
            node = list(ast.walk(child))[site.index]
            description = _MUTATORS[site.kind](node, rng)
            if ast.dump(child) == original:
                continue
            text = ast.unparse(ast.fix_missing_locations(child)) + "\n"
            issues = validate_source(text)
            if issues:
                problems.append(str(issues[0]))
                continue
            return Mutant(text, f"{description} at line {getattr(node, 'lineno', '?')}")
        detail = f" (last problem: {problems[-1]})" if problems else ""
        raise MutationError(f"no valid, different child in {self.max_tries} tries{detail}")

    def mutate_batch(self, requests: Sequence["MutationRequest"], context: "OracleContext") -> list["MutationResult"]:
        """The operator protocol of the evolutionary search: one child per request, in order."""
        results = []
        for request in requests:
            try:
                mutant = self.mutate(request.parent.source, random.Random(request.seed))
            except MutationError as error:
                results.append(MutationResult(None, "ast", failure=str(error)))
                continue
            results.append(MutationResult(mutant.source, "ast", mutant.description))
        return results


# --------------------------------------------------------------------- mutators
def _perturb_constant(node: ast.Constant, rng: random.Random) -> str:
    old = node.value
    if isinstance(old, int):
        steps = [s for s in _INT_STEPS if old + s >= 0]
        new: int | float = old + rng.choice(steps)
    elif old == 0:
        new = 0.1
    else:
        new = float(f"{old * math.exp(rng.gauss(0.0, 0.5)):.4g}")
    node.value = new
    return f"constant {old!r} -> {new!r}"


def _flip_comparison(node: ast.Compare, rng: random.Random) -> str:
    position = rng.randrange(len(node.ops))
    old = type(node.ops[position])
    new = rng.choice(_COMPARISON_FLIPS[old])
    node.ops[position] = new()
    return f"comparison {_OPERATOR_TEXT[old]} -> {_OPERATOR_TEXT[new]}"


def _swap_branches(node: ast.If | ast.IfExp, rng: random.Random) -> str:
    if isinstance(node, ast.IfExp):
        node.body, node.orelse = node.orelse, node.body
        return "conditional expression branches swapped"
    node.body, node.orelse = node.orelse, node.body
    return "if/else branches swapped"


_MUTATORS = {
    "constant": _perturb_constant,
    "comparison": _flip_comparison,
    "branches": _swap_branches,
}
