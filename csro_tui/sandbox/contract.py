"""The policy-code contract: the one place it is written down.

The text below is rendered into the LLM prompts, docs/policies.md and the TUI's
help screen, so the three never drift apart.  Static validation
(`csro_tui.sandbox.validation`) and the sandbox host enforce it.
"""

from __future__ import annotations

import textwrap

# Modules a policy may import.  Everything else is rejected before the code
# runs (static check) and blocked again at run time inside the sandbox.
ALLOWED_IMPORTS: frozenset[str] = frozenset(
    {
        "math",
        "random",
        "collections",
        "itertools",
        "functools",
        "statistics",
        "heapq",
        "bisect",
        "dataclasses",
        "typing",
        "re",
        "numpy",
    }
)

# Source larger than this is rejected before parsing: no sensible policy
# needs it, and it keeps prompts, sessions and the sandbox bounded.
MAX_SOURCE_BYTES = 100_000

POLICY_CLASS_NAME = "Policy"

# Wrapped like the rest of the text, which is shown in 80-column terminals.
_ALLOWED_IMPORTS_RULE = textwrap.fill(
    "- Allowed imports: " + ", ".join(sorted(ALLOWED_IMPORTS)) + ",",
    width=76,
    subsequent_indent="  ",
)

POLICY_CONTRACT = f"""\
A policy is one Python module that defines `class {POLICY_CLASS_NAME}`:

```python
class {POLICY_CLASS_NAME}:
    def __init__(self, player: int, game: dict) -> None:
        # player: your seat (0 or 1).
        # game: name, num_players, num_actions, action_names, rules,
        #       params, player (your seat again), and seed (an int for
        #       your own random.Random).
        ...

    def act(self, obs: dict) -> int | dict[int, float]:
        # obs: what you may know now; obs["legal_actions"] lists legal ids.
        # Return one legal action id, or a probability for each legal action.
        ...
```

Rules:
- One instance plays one episode (a whole match); state kept on `self`
  lasts for that episode only.
- Return a legal action id, or a dict {{action id: probability}} over legal
  actions whose probabilities are non-negative and sum to 1.
- For randomness use `random.Random(game["seed"])`; never global state.
{_ALLOWED_IMPORTS_RULE}
  and `from __future__ import annotations`. Nothing else:
  no files, network, processes, `exec`/`eval`, or dunder tricks
  (`x.__class__`, ...).
- Each call has a time limit; keep `act` fast (well under a millisecond for
  repeated games with thousands of moves).
- At most {MAX_SOURCE_BYTES // 1000} kB of source.
"""
