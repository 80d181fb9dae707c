"""The mutation operators' contract for the evolutionary search.

An operator turns a batch of `MutationRequest`s (a parent, inspirations, a
seed for its own randomness) into `MutationResult`s, in the same order:
new source, or a failure with a one-line reason.  Two exist:

- `csro_tui.oracles.llm.mutation.LLMMutation`: the model sees the parent, how it fared against each
  opponent, and the inspirations with their scores, and answers with
  SEARCH/REPLACE edits (`prompts/mutate.md`).  The edits are applied with
  `apply_edits`; if they do not apply, a full module in the reply is used
  instead (`extract_code`).  One LLM call per child; calls run concurrently
  up to the client's limit.
- `csro_tui.oracles.evolve.ast_mutation.ASTMutation`: offline, no LLM.

Every child is checked with `validate_source`; nothing here runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from csro_tui.oracles.base import OracleContext

if TYPE_CHECKING:
    from csro_tui.oracles.evolve.database import Program
    from csro_tui.oracles.llm.client import LLMBackend


@dataclass(frozen=True)
class MutationRequest:
    """Make one child of `parent`."""

    parent: "Program"
    inspirations: tuple["Program", ...] = ()
    seed: int = 0  # for the operator's own random choices
    label: str = ""  # the child's id, e.g. "g2.1.0"


@dataclass
class MutationResult:
    """A child's source, or why there is none."""

    source: str | None
    kind: str  # "edit", "rewrite", "ast", ...
    description: str = ""  # what changed
    failure: str | None = None
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None  # the LLM error behind the failure, if that was the cause


class MutationOperator(Protocol):
    name: str
    uses_llm: bool
    backend: "LLMBackend | None"  # the LLM client when `uses_llm`, else None

    def mutate_batch(self, requests: Sequence[MutationRequest], context: OracleContext) -> list[MutationResult]:
        """One result per request, in order."""


