"""Evolutionary code search (AlphaEvolve-style) as a CSRO oracle.

- `database`: programs, islands, and a MAP-Elites grid per island;
- `features`: the behaviour descriptors that place a program in the grid;
- `mutation`: the pluggable mutation operator's contract; the operators are
  `ast_mutation.ASTMutation` (offline, here) and
  `csro_tui.oracles.llm.mutation.LLMMutation` (SEARCH/REPLACE edits from the
  model, full rewrite as the fallback);
- `fitness`: screening by the engine's preview, re-evaluation of finalists;
- `search`: the oracle (the generation loop) and its configuration.

Two registered oracles share the search: `evolve` (AST mutations: no LLM,
runs fully offline, deterministic given the seed; `search.make_ast_evolve_oracle`)
and `llm-evolve` (LLM mutations; `csro_tui.oracles.llm.mutation.make_llm_evolve_oracle`).
"""
