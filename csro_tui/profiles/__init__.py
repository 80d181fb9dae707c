"""Behaviour profiles: what a policy does, how two policies differ, how diverse a population is.

- `model.py`: `Profile` (situations with their action distributions, probe results), JSON both ways;
- `compute.py`: `profile_policy(spec, participant, seed=...)`, asking the game how
  (`GameSpec.exact`: from the policy's exact table, reach-weighted under the
  uniform random opponent in both seats; `behaviour_probes()`: matches against
  fixed probe opponents; otherwise moves and outcomes against the benchmark);
- `distance.py`: `compare(a, b)`: a distance with its noise and the situations
  or probes where two profiles differ; `distance_matrix`, clusters, effective
  number of distinct strategies;
- `describe.py`: words for a profile, no model needed;
- `hints.py`: static hints about a policy's code (methods never called, state
  never read, randomness not from game["seed"]);
- `coverage.py`: the branches of a policy's code that never ran while it was
  profiled (an instrumented copy, run in the sandbox, reports them).

Everything here is game-agnostic: game knowledge comes from the `GameSpec`.
"""
