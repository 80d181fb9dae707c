"""Is this the same policy code? Its module's AST once docstrings are set aside.

Comments and formatting never reach the AST, so two sources with the same
`normalized_code` differ only in those and in docstrings. The engine's gate
(`engine/duplicates.py`) and the refining LLM oracle use this one rule.
"""

from __future__ import annotations

import ast
import functools


@functools.lru_cache(maxsize=512)
def normalized_code(source: str) -> str | None:
    """The module's AST as text without docstrings, or None if it does not parse.

    Cached by source (a pure function of it): every proposal is compared
    with every member and rejected proposal, which were parsed before (in a
    Kuhn run, re-parsing them was a third of an iteration's time).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)
