"""Static validation of policy source: each problem reported on its own line."""

from __future__ import annotations

from pathlib import Path

import pytest

from csro_tui.sandbox.contract import MAX_SOURCE_BYTES
from csro_tui.sandbox.validation import ValidationIssue, imported_modules, validate_source

FIXTURES = Path(__file__).parents[1] / "sandbox_policies"

HEADER = "class Policy:\n    def __init__(self, player, game):\n        pass\n"


def policy_with_act(body: str) -> str:
    """A valid policy whose act body (indented 8 spaces) starts on line 5."""
    lines = "\n".join("        " + line for line in body.splitlines())
    return HEADER + "    def act(self, obs):\n" + lines + "\n"


def messages(source) -> list[str]:
    return [str(issue) for issue in validate_source(source)]


def test_issue_renders_as_line_and_message():
    issue = ValidationIssue(12, 3, "something is wrong")
    assert str(issue) == "line 12: something is wrong"
    with pytest.raises(AttributeError):
        issue.line = 1  # frozen


@pytest.mark.parametrize("name", ["random_policy.py", "numpy_policy.py", "answers.py", "crash.py", "counter.py", "idioms.py"])
def test_valid_fixture_policies_pass(name):
    assert validate_source((FIXTURES / name).read_text()) == []


def test_valid_policy_with_common_idioms_passes():
    source = '''\
from __future__ import annotations
import random
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
import numpy as np


@dataclass
class Memory:
    counts: Counter = field(default_factory=Counter)


class Base:
    __slots__ = ()

    def __init__(self, player, game):
        self.player = player


class Policy(Base):
    __slots__ = ("rng", "memory", "game")

    def __init__(self, player: int, game: dict) -> None:
        super().__init__(player, game)
        self.rng = random.Random(game["seed"])
        self.memory = Memory()
        self.game = game

    def __repr__(self):
        return f"{type(self).__name__}({self.player})"

    def act(self, obs: dict, *, explore: float = 0.1) -> int | dict[int, float]:
        input = obs["legal_actions"]  # a local that shadows a forbidden builtin is fine
        name = getattr(self, "game")["name"]
        weights = np.ones(len(input)) / len(input)
        match obs.get("phase"):
            case {"round": r}:
                pass
        if __name__ == "policy":
            pass
        return {a: float(w) for a, w in zip(input, weights)}
'''
    assert messages(source) == []


def test_bytes_source_is_decoded():
    assert validate_source(policy_with_act("return obs['legal_actions'][0]").encode()) == []


def test_size_limit():
    source = policy_with_act("return 0") + "#" * MAX_SOURCE_BYTES
    issues = validate_source(source)
    assert len(issues) == 1 and "limit" in issues[0].message and issues[0].line == 1


def test_invalid_utf8_reports_its_line():
    source = HEADER.encode() + b"    def act(self, obs):\n        return '\xff'\n"
    issues = validate_source(source)
    assert [(i.line, i.message) for i in issues] == [(5, "source is not valid UTF-8")]


def test_nul_character_reports_its_line():
    issues = validate_source(policy_with_act("x = 1\nreturn '\x00'"))
    assert [(i.line, i.message) for i in issues] == [(6, "source contains a NUL character")]


def test_syntax_error_reports_its_line():
    issues = validate_source(policy_with_act("x = (1,\nreturn x +"))
    assert len(issues) == 1
    assert issues[0].message.startswith("syntax error")
    assert issues[0].line in (5, 6)


def test_compile_time_errors_are_caught():
    assert messages("x = 1\nfrom __future__ import annotations\n" + HEADER) == [
        "line 2: syntax error: from __future__ imports must occur at the beginning of the file"
    ]
    assert messages(HEADER + "return 1\n")[0] == "line 4: syntax error: 'return' outside function"


def test_missing_policy_class():
    assert messages("class Agent:\n    def act(self, obs):\n        return 0\n") == [
        "line 1: no top-level `class Policy` defined"
    ]


def test_nested_policy_class_does_not_count():
    source = "def make():\n    class Policy:\n        pass\n    return Policy\n"
    assert messages(source) == ["line 1: no top-level `class Policy` defined"]


def test_missing_methods():
    assert messages("x = 1\nclass Policy:\n    pass\n") == [
        "line 2: `class Policy` must define `__init__(self, player, game)`",
        "line 2: `class Policy` must define `act(self, obs)`",
    ]


@pytest.mark.parametrize(
    "signature, ok",
    [
        ("def act(self, obs)", True),
        ("def act(self, obs, depth=3)", True),
        ("def act(self, *args)", True),
        ("def act(self, obs, *, k=1)", True),
        ("def act(self)", False),
        ("def act(self, obs, depth)", False),
        ("def act(self, obs, *, k)", False),
        ("@staticmethod\n    def act(obs)", True),
        ("async def act(self, obs)", False),
    ],
)
def test_act_signature(signature, ok):
    source = HEADER + f"    {signature}:\n        return 0\n"
    issues = validate_source(source)
    if ok:
        assert issues == []
    else:
        assert len(issues) == 1 and "Policy.act" in issues[0].message and issues[0].line >= 4


def test_init_signature_needs_player_and_game():
    source = "class Policy:\n    def __init__(self, player):\n        pass\n    def act(self, obs):\n        return 0\n"
    assert messages(source) == [
        "line 2: Policy.__init__ must accept (player, game) after self: it takes only 1 arguments"
    ]


def test_methods_inherited_from_module_level_base():
    source = "class Base:\n    def act(self, obs):\n        return 0\n\nclass Policy(Base):\n" + (
        "    def __init__(self, player, game):\n        pass\n"
    )
    assert validate_source(source) == []


def test_imports_outside_allowlist_are_reported_on_their_lines():
    source = "import os\nimport math\nfrom subprocess import run\nimport numpy.linalg\nfrom . import sibling\n" + HEADER
    source += "    def act(self, obs):\n        import socket\n        return 0\n"
    got = [(i.line, i.message.split(";")[0]) for i in validate_source(source)]
    assert got == [
        (1, "import of 'os' is not allowed"),
        (3, "import from 'subprocess' is not allowed"),
        (5, "relative imports are not allowed"),
        (10, "import of 'socket' is not allowed"),
    ]


def test_import_message_lists_allowed_modules():
    message = validate_source("import pickle\n" + HEADER + "    def act(self, obs):\n        return 0\n")[0].message
    assert "numpy" in message and "random" in message


@pytest.mark.parametrize(
    "name", ["exec", "eval", "compile", "open", "__import__", "globals", "locals", "vars", "breakpoint",
             "input", "memoryview", "exit", "quit", "help"]
)
def test_forbidden_builtins(name):
    issues = validate_source(policy_with_act(f"x = 1\ny = {name}('0')\nreturn 0"))
    assert [i.line for i in issues] == [6]
    assert name in issues[0].message


def test_forbidden_builtin_smuggled_through_a_default_argument():
    issues = validate_source(policy_with_act("def helper(run=exec):\n    return run\nreturn 0"))
    assert [(i.line, "exec" in i.message) for i in issues] == [(5, True)]


@pytest.mark.parametrize(
    "expression, line_offset",
    [
        ("getattr(obs, name)", 0),
        ("getattr(obs, '__class__')", 0),
        ("setattr(self, '__dict__', {})", 0),
        ("delattr(self, attribute_name)", 0),
        ("getattr(self, 'gi_frame')", 0),
        ("(getattr)", 0),
    ],
)
def test_attribute_builtins_need_literal_plain_names(expression, line_offset):
    issues = validate_source(policy_with_act(f"name = attribute_name = 'x'\nv = {expression}\nreturn 0"))
    assert [i.line for i in issues] == [6 + line_offset]


def test_getattr_with_literal_name_is_fine():
    assert validate_source(policy_with_act("return getattr(self, 'count', 0)")) == []


@pytest.mark.parametrize(
    "expression",
    [
        "().__class__",
        "obs.__class__.__base__.__subclasses__()",
        "self.act.__globals__",
        "self.__dict__",
        "random.__builtins__",
        "__builtins__",
        "__loader__",
        "(lambda: 0).__code__",
    ],
)
def test_dunder_access_is_rejected(expression):
    issues = validate_source(policy_with_act(f"x = 1\nv = {expression}\nreturn 0"))
    assert issues and {i.line for i in issues} == {6}
    assert all("dunder" in i.message for i in issues)


@pytest.mark.parametrize(
    "expression",
    ["random._os", "typing.sys", "gen.gi_frame", "frame.f_back.f_globals", "err.__traceback__.tb_frame"],
)
def test_introspection_attributes_are_rejected(expression):
    issues = validate_source(policy_with_act(f"gen = frame = err = random = typing = None\nv = {expression}\nreturn 0"))
    assert issues and {i.line for i in issues} == {6}


def test_dunder_via_format_string_and_match_pattern():
    assert [i.line for i in validate_source(policy_with_act("x = 1\nreturn '{0.__class__}'.format(obs)"))] == [6]
    source = policy_with_act("match obs:\n    case dict(__class__=c):\n        pass\nreturn 0")
    assert [i.line for i in validate_source(source)] == [6]


def test_defining_dunder_methods_is_fine():
    source = HEADER + "    def __repr__(self):\n        return 'p'\n    def __eq__(self, other):\n"
    source += "        return False\n    def act(self, obs):\n        return 0\n"
    assert validate_source(source) == []


def test_global_and_nonlocal_are_fine():
    source = "COUNT = 0\n" + HEADER + "    def act(self, obs):\n        global COUNT\n        COUNT += 1\n"
    source += "        def inner():\n            nonlocal obs\n            obs = {}\n        inner()\n        return 0\n"
    assert validate_source(source) == []


def test_several_issues_sorted_by_line():
    source = "import os\n" + HEADER + "    def act(self, obs):\n        x = ().__class__\n        return eval('1')\n"
    assert [i.line for i in validate_source(source)] == [1, 6, 7]


def test_deep_nesting_is_an_issue_not_a_crash():
    issues = validate_source("x = " + "(" * 5000 + ")" * 5000)
    assert len(issues) == 1 and issues[0].line == 1


def test_non_text_source_is_an_issue():
    assert messages(12345) == ["line 1: source must be text, not int"]


def test_imported_modules():
    assert imported_modules("import numpy.linalg as la\nfrom collections import deque\nimport os, re\n") == {
        "numpy",
        "collections",
        "os",
        "re",
    }
    assert imported_modules("def (") == set()


def test_escape_fixture_is_rejected_statically():
    issues = validate_source((FIXTURES / "escape.py").read_text())
    lines = {i.line for i in issues}
    # random._os, __import__, open, .sys, .gi_frame, import os ... all caught
    assert len(lines) >= 8
