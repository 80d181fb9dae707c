"""Why a policy failed: one category plus the text that explains it.

Failures travel from the sandbox to the referee, the engine, the session log
and the LLM oracles (which feed them back to the model), so they are plain
data with a one-line summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FailureCategory(StrEnum):
    INVALID = "invalid"  # static validation failed; the code never ran
    TIMEOUT = "timeout"  # a call or the whole match overran its time limit
    MEMORY = "memory"  # the host ran out of its memory limit
    CRASH = "crash"  # an exception in the policy, or the host died
    ILLEGAL_ACTION = "illegal_action"  # an action not in obs["legal_actions"]
    MALFORMED = "malformed"  # an answer of the wrong type or shape, NaN, ...
    FORBIDDEN = "forbidden"  # a blocked operation: import, file, network, ...


@dataclass
class PolicyFailure(Exception):
    category: FailureCategory
    message: str
    traceback: str = ""
    policy: str = ""

    def __post_init__(self) -> None:
        super().__init__(self.summary())

    def summary(self) -> str:
        """One line for a CLI error, a notification or a table cell."""
        who = f" ({self.policy})" if self.policy else ""
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        return f"{self.category.value}: {first}{who}"

    def to_dict(self) -> dict:
        return {
            "category": self.category.value,
            "message": self.message,
            "traceback": self.traceback,
            "policy": self.policy,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "PolicyFailure":
        return cls(
            FailureCategory(data["category"]),
            data.get("message", ""),
            data.get("traceback", ""),
            data.get("policy", ""),
        )
