"""extract_code and apply_edits on hand-written reply texts (test fixtures)."""

from __future__ import annotations

import pytest

from csro_tui.errors import CsroError
from csro_tui.oracles.llm.extract import EditError, NoCodeError, apply_edits, extract_code, parse_edits

POLICY = """\
import random


class Policy:
    def __init__(self, player, game):
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        return self.rng.choice(obs["legal_actions"])
"""


# ------------------------------------------------------------------ extract_code
def test_python_fence_with_prose_around():
    reply = f"Here is a policy that plays randomly.\n\n```python\n{POLICY}```\n\nIt is unexploitable in RPS."
    assert extract_code(reply) == POLICY


def test_fence_without_language():
    assert extract_code(f"```\n{POLICY}```") == POLICY


def test_crlf_and_tilde_fences():
    reply = "~~~py\r\n" + POLICY.replace("\n", "\r\n") + "~~~\r\n"
    assert extract_code(reply) == POLICY


def test_several_blocks_picks_the_last_defining_policy():
    helper = "def helper(x):\n    return x\n"
    older = POLICY.replace("rng.choice", "rng.sample")
    reply = (
        f"First draft:\n```python\n{older}```\nA helper:\n```python\n{helper}```\n"
        f"Final version:\n```python\n{POLICY}```\nUsage:\n```bash\ncsro run\n```\n"
    )
    assert extract_code(reply) == POLICY


def test_unterminated_fence_of_a_truncated_reply():
    cut = POLICY[: POLICY.index("return")]
    assert extract_code(f"Sure.\n```python\n{cut}") == cut.rstrip() + "\n"


def test_longer_fence_can_contain_a_shorter_one():
    code = POLICY + '\nDOC = """\n```\nnot a fence end\n```\n"""\n'
    assert extract_code(f"````python\n{code}````\n") == code


def test_unfenced_whole_reply_is_code():
    assert extract_code(POLICY) == POLICY


def test_unfenced_code_with_prose_before_and_after():
    reply = f"Here is my policy:\n{POLICY}\nThis mixes uniformly, so it cannot be exploited."
    assert extract_code(reply) == POLICY


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("", "the reply is empty"),
        ("   \n", "the reply is empty"),
        ("I cannot help with that.", "no code block and no class Policy"),
        ("```python\ndef helper():\n    pass\n```", "none of the reply's code block defines class Policy"),
        ("```json\n{}\n```\n```text\nhi\n```", "the reply's 2 code blocks hold no Python code"),
        ("Policy idea:\nclass Policy is easy, ) just ( do it", "not valid Python"),
    ],
)
def test_no_code_errors_say_why(reply, reason):
    with pytest.raises(NoCodeError) as info:
        extract_code(reply)
    assert reason in str(info.value)
    assert isinstance(info.value, CsroError)


# ------------------------------------------------------------------ apply_edits
def edit(search: str, replace: str) -> str:
    replace_lines = f"{replace}\n" if replace else ""  # an empty REPLACE section deletes
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace_lines}>>>>>>> REPLACE\n"


def test_exact_edit():
    reply = "I will play the first action.\n" + edit(
        "        return self.rng.choice(obs[\"legal_actions\"])", "        return obs[\"legal_actions\"][0]"
    )
    expected = POLICY.replace('self.rng.choice(obs["legal_actions"])', 'obs["legal_actions"][0]')
    assert apply_edits(POLICY, reply) == expected


def test_several_blocks_apply_in_order_inside_a_fence():
    reply = (
        "```\n"
        + edit("import random", "import math\nimport random")
        + edit("    def act(self, obs):", "    def act(self, obs):\n        self.last = obs")
        + "```\n"
    )
    result = apply_edits(POLICY, reply)
    assert result.startswith("import math\nimport random\n")
    assert "    def act(self, obs):\n        self.last = obs\n        return" in result


def test_whitespace_insensitive_match():
    # trailing spaces, doubled inner spaces and a missing blank line
    search = (
        "    def __init__(self,  player, game):   \n"
        "        self.rng = random.Random(game[\"seed\"])\n"
        "    def act(self, obs):"
    )
    replace = "    def __init__(self, player, game):\n        self.rng = random.Random(0)\n\n    def act(self, obs):"
    result = apply_edits(POLICY, edit(search, replace))
    assert "random.Random(0)" in result and 'game["seed"]' not in result
    assert result.count("def act") == 1


def test_indentation_difference_is_reindented():
    # The model quoted the method body without its class indentation.
    search = "def act(self, obs):\n    return self.rng.choice(obs[\"legal_actions\"])"
    replace = "def act(self, obs):\n    legal = obs[\"legal_actions\"]\n    return legal[-1]"
    result = apply_edits(POLICY, edit(search, replace))
    assert result.endswith('    def act(self, obs):\n        legal = obs["legal_actions"]\n        return legal[-1]\n')
    compile(result, "<edited>", "exec")


def test_crlf_reply_applies_to_lf_source():
    reply = edit("import random", "import random  # seeded").replace("\n", "\r\n")
    assert apply_edits(POLICY, reply).startswith("import random  # seeded\n")


def test_deleting_lines_with_an_empty_replace():
    reply = edit("import random\n", "")
    assert apply_edits("x = 1\nimport random\ny = 2\n", reply) == "x = 1\ny = 2\n"


def test_failing_block_is_named():
    reply = edit("import random", "import math") + edit("return 42", "return 0")
    with pytest.raises(EditError) as info:
        apply_edits(POLICY, reply)
    assert info.value.block == 2
    assert str(info.value) == "edit block 2 of 2: SEARCH text not found in the code (it starts 'return 42')"


def test_ambiguous_search_is_an_error():
    source = "a = 1\nb = 2\na = 1\n"
    with pytest.raises(EditError, match="matches 2 places") as info:
        apply_edits(source, edit("a = 1", "a = 3"))
    assert info.value.block == 1


def test_inconsistent_indentation_does_not_match():
    search = "def __init__(self, player, game):\n        self.rng = random.Random(game[\"seed\"])"
    with pytest.raises(EditError, match="not found"):
        apply_edits(POLICY.replace("    def __init__", "  def __init__"), edit(search, "pass"))


@pytest.mark.parametrize(
    "reply, message, block",
    [
        ("Rewrote it:\n```python\nclass Policy: ...\n```", "no SEARCH/REPLACE blocks", None),
        ("<<<<<<< SEARCH\nimport random\n=======\nimport math\n", "edit block 1 is incomplete", 1),
        ("<<<<<<< SEARCH\nimport random\n", "edit block 1 is incomplete (no =======)", 1),
        ("<<<<<<< SEARCH\n=======\nx = 1\n>>>>>>> REPLACE", "edit block 1 of 1 has an empty SEARCH", 1),
    ],
)
def test_malformed_edit_replies(reply, message, block):
    with pytest.raises(EditError) as info:
        apply_edits(POLICY, reply)
    assert message in str(info.value)
    assert info.value.block == block


def test_parse_edits_returns_the_blocks():
    blocks = parse_edits(edit("a\nb", "c") + "prose\n" + edit("d", "e\nf"))
    assert [(b.search, b.replace) for b in blocks] == [(["a", "b"], ["c"]), (["d"], ["e", "f"])]
