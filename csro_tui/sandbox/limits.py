"""The limits of one policy host (`SandboxLimits`) and how run settings give them.

Every time limit here is kept by the parent's clock (clock.py); memory and
CPU limits are applied by the host to itself before the policy loads
(host_kernel.py), with the values `host_process.load_message` sends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

from csro_tui.errors import ConfigError

# The host's own address space before any episode: measured here at 16 MB
# (stdlib only) and 110 MB with numpy loaded (VmSize of the host process,
# both sandbox modes), rounded up.
HOST_BASE_MB = 128
# The limits given in seconds (the others are counts, bytes, or megabytes when named *_mb).
SECONDS_LIMITS = (
    "init_timeout", "move_timeout", "batch_timeout", "call_grace", "move_budget", "budget_reserve", "init_budget"
)


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one policy host.

    Every time limit is enforced from outside the host (clock.py): the
    parent's watchdog SIGKILLs a host that passes one, whatever the host did
    to its own signals; the host's own timer only words the failure first.

    init_timeout: wall-clock limit of one run of the module's code (the
        first load includes interpreter start and imports such as numpy at
        ~0.3 s; each episode runs the module afresh), and the reserve of the
        set-up budget.
    move_timeout: wall-clock limit of each single policy call (`__init__`,
        `act`, the end of an episode), whatever the batch size.
    call_grace: seconds past a call's limit after which a host whose policy
        caught the timeout (or is stuck in C code) ends itself, or is killed.
    batch_timeout: seconds a host may take before its first call of a
        request, and to send its reply after the last.
    move_budget: the chess clock: seconds per decision (`act` call) a policy
        may use on average, pooled over the episodes a host plays at once,
        charged the host's own time (its CPU time, and sleep while its
        reply is due; never its waits for a CPU: clock.py)...
    budget_reserve: ...plus this many seconds.  A policy that runs out fails
        with a timeout (episode budget: budget_reserve + move_budget x its
        decisions).
    init_budget: seconds per episode for running the module's code and
        `Policy.__init__`, pooled likewise, on top of init_timeout.
    memory_mb: address-space limit (RLIMIT_AS) of the host process, shared
        by the episodes it plays at once.
    episode_memory_mb: memory each episode may hold: a host plays at most
        `episodes_per_host()` episodes at once, so that many episodes of
        this size fit in memory_mb beside the host itself (the referee
        plays larger evaluations in waves).
    cpu_seconds: CPU time for the host's whole lifetime (RLIMIT_CPU).
    max_processes: RLIMIT_NPROC (counts threads; the host needs no more).
    max_file_bytes: RLIMIT_FSIZE, largest file the host could write.
    max_open_files: RLIMIT_NOFILE.
    max_message_bytes: longest reply line accepted from the host, whatever
        its request (each reply is also bounded by what its request allows,
        wire.ReplyBound, which is far less).
    output_tail_chars: how much of the policy's printed output is kept for
        failure reports.
    recursion_limit: cap on sys.setrecursionlimit inside the host.
    """

    init_timeout: float = 10.0
    move_timeout: float = 1.0
    batch_timeout: float = 2.0
    call_grace: float = 2.0
    move_budget: float = 0.02
    budget_reserve: float = 2.0
    init_budget: float = 0.2
    memory_mb: int = 1024
    episode_memory_mb: int = 8
    cpu_seconds: int = 600
    max_processes: int = 1
    max_file_bytes: int = 1 << 20
    max_open_files: int = 64
    max_message_bytes: int = 64 << 20
    output_tail_chars: int = 2000
    recursion_limit: int = 10_000

    def __post_init__(self) -> None:
        for field_name in SECONDS_LIMITS:
            value = getattr(self, field_name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"SandboxLimits.{field_name} must be a positive number of seconds, not {value!r}")
        for field_name in (
            "memory_mb", "episode_memory_mb", "cpu_seconds", "max_processes", "max_open_files", "max_message_bytes"
        ):
            value = getattr(self, field_name)
            if not (isinstance(value, int) and value > 0):
                raise ValueError(f"SandboxLimits.{field_name} must be a positive integer, not {value!r}")
        for field_name in ("max_file_bytes", "output_tail_chars", "recursion_limit"):
            value = getattr(self, field_name)
            if not (isinstance(value, int) and value >= 0):
                raise ValueError(f"SandboxLimits.{field_name} must be a non-negative integer, not {value!r}")

    def episodes_per_host(self) -> int:
        """How many episodes one host may play at once: what memory_mb holds
        beside the host's own address space (HOST_BASE_MB) at
        episode_memory_mb each; at least one."""
        return max(1, (self.memory_mb - HOST_BASE_MB) // self.episode_memory_mb)


def loosened_limits(values: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The limits `values` (a run configuration, recorded or not) sets above their defaults:
    name -> {"value", "default"}, in `SandboxLimits` order.  A value that is no number is
    left to `limits_from` to refuse (a recorded configuration is read as it is)."""
    loosened = {}
    for limit in fields(SandboxLimits):
        value = values.get(limit.name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > limit.default:
            loosened[limit.name] = {"value": value, "default": limit.default}
    return loosened


def loosened_text(loosened: Mapping[str, Mapping[str, float]]) -> str:
    """One line naming each loosened limit, its value and its default; "" when none is (issue 35)."""
    if not loosened:
        return ""

    def shown(name: str, value: float) -> str:
        unit = " s" if name in SECONDS_LIMITS + ("cpu_seconds",) else " MB" if name.endswith("_mb") else ""
        return f"{value:g}{unit}"

    return "sandbox limits above their defaults: " + ", ".join(
        f"{name} {shown(name, entry['value'])} (default {shown(name, entry['default'])})"
        for name, entry in loosened.items())


def limits_from(values: dict) -> SandboxLimits | None:
    """SandboxLimits with the given options (a name -> value mapping where None
    means the default: RunConfig's fields, `csro eval`'s flags); None when no
    option is given.  ConfigError for a value the limits refuse."""
    given = {name: value for name, value in values.items() if value is not None}
    if not given:
        return None
    try:
        return SandboxLimits(**given)
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None
