"""Evolutionary code search (AlphaEvolve-style) as a CSRO oracle.

- `database`: programs, islands, and a MAP-Elites grid per island;
- `features`: the behaviour descriptors that place a program in the grid;
- `mutation`: the pluggable mutation operator protocol and `LLMMutation`
  (SEARCH/REPLACE edits from the model, full rewrite as the fallback);
  the offline operator is `csro_tui.oracles.ast_mutation.ASTMutation`;
- `fitness`: screening by the engine's preview, re-evaluation of finalists;
- `search`: the oracle (the generation loop) and its configuration.

Two registered oracles share the search: `llm-evolve` (LLM mutations) and
`evolve` (AST mutations: no LLM, runs fully offline, deterministic given
the seed).  The factories below import the search only when an oracle is
made.
"""

from __future__ import annotations

from typing import Any, Mapping


def make_evolve_oracle(config: Mapping[str, Any] | None = None):
    """Registry factory for `llm-evolve` (see `search.make_llm_evolve_oracle`)."""
    from csro_tui.oracles.llm.evolve.search import make_llm_evolve_oracle

    return make_llm_evolve_oracle(config)


def make_offline_evolve_oracle(config: Mapping[str, Any] | None = None):
    """Registry factory for `evolve` (see `search.make_ast_evolve_oracle`)."""
    from csro_tui.oracles.llm.evolve.search import make_ast_evolve_oracle

    return make_ast_evolve_oracle(config)
