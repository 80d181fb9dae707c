"""The sandbox's limits as command-line flags (`csro run`, `csro eval`),
named as in csro.toml and `SandboxLimits`; defaults in brackets."""

from __future__ import annotations

import argparse

from csro_tui.config import SANDBOX_LIMIT_FIELDS


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "sandbox limits", "every limit is kept from outside the policy's process; not given: the default in brackets"
    )
    add = group.add_argument
    add("--move-timeout", type=float, metavar="S", help="wall-clock limit of each act/__init__ call [1 s]")
    add("--init-timeout", type=float, metavar="S", help="wall-clock limit of running the module's code [10 s]")
    add("--move-budget", type=float, metavar="S",
        help="chess clock: seconds per decision a policy may use on average, pooled over the episodes "
             "its host plays at once [0.02]")
    add("--budget-reserve", type=float, metavar="S", help="chess clock: reserve on top of --move-budget [2 s]")
    add("--init-budget", type=float, metavar="S",
        help="seconds per episode for the module's code and __init__, on top of --init-timeout [0.2]")
    add("--memory-mb", type=int, metavar="MB", help="address-space limit of a policy's host process [1024]")
    add("--episode-memory-mb", type=int, metavar="MB",
        help="memory each episode may hold; a host plays (memory_mb - 128) / this many episodes at once [8]")


def given_limits(args: argparse.Namespace) -> dict:
    """The limit flags given (name -> value), for RunConfig or `limits_from`."""
    return {name: getattr(args, name) for name in SANDBOX_LIMIT_FIELDS if getattr(args, name, None) is not None}
