"""The sandbox, parent side: run one policy's code in an isolated child process.

`PolicyHost` starts `host_main.py` (stdlib only) in a fresh process with a
minimal environment, its own process group and temporary working directory,
and talks to it in line-delimited JSON over pipes.  This module is where
callers outside the sandbox import it from; each concern has a module of
its own, as the child's side has (host_main.py and its layers):

- policy_host.py: `PolicyHost`, the façade: a host's life and its requests;
- host_process.py: `start_host_process`, `StartedProcess`: spawning (or
  forking from the zygote, zygote.py), the set-up messages, killing;
- channel.py: the parent's end of the channel (lines over the pipes);
- wire.py: messages and observations as bytes (`PRINTED_HEAD_CHARS`);
- checks.py: the checks of everything a host sends back;
- limits.py: `SandboxLimits`, `limits_from`, `HOST_BASE_MB`;
- isolation.py: the isolation set-up (modes, the kernel-layer probe, the
  bwrap command line, the description); clock.py: deadlines and budgets.

Isolation comes in two strengths (`isolation_mode()`), both with Landlock
and seccomp applied by the host to itself (host_kernel.py):

- "bubblewrap": the child runs under `bwrap` with no network, its own PID,
  IPC and UTS namespaces, a private /tmp, and read-only binds of only what
  the interpreter needs (never /work, the sessions directory or $HOME).
- "rlimits": no namespaces; the child relies on resource limits, dropping
  root, and the runtime guard alone.

Both modes apply, inside the child and before the policy loads: resource
limits (address space, CPU seconds, processes, file size, open files, no
core dumps), dropping root to a uid of the host's own (so the process limit and file
permissions apply), and an audit hook plus restricted builtins that block
imports outside the allowlist, file writes, reads outside the Python
installation, processes, sockets, signals, ctypes and frame introspection.

Deadlines and budgets are kept by the parent (clock.py): each request has
a deadline from when it is sent, which the parent's wait holds; each host
shares a page of memory with the parent where it counts the calls it
starts (checked, and only ever making detection sooner), and one watchdog
thread SIGKILLs a host whose call runs past its limit or whose policy runs
out of its time budget, charged the host's own CPU time; the parent then
reports the failure.  Every reply is checked; any
failure kills the host's whole process group and is raised as a
`PolicyFailure`, again on every later call.

Lists in observations (except `legal_actions`) are sent as appended
suffixes: per episode and key, the host remembers what the child holds
(wire.py says how).
"""

from pathlib import Path

# The parent side's files that decide what a policy is sent and what its
# answers become, and the host's set-up and environment: part of every exact
# table's key (evaluation/table_cache.fingerprinted_files).
PARENT_MODULES = tuple(
    Path(__file__).with_name(name)
    for name in ("sandbox.py", "policy_host.py", "host_process.py", "channel.py", "wire.py", "checks.py",
                 "limits.py", "isolation.py")
)

# The public names of the parent side, importable from here as before the split.
from csro_tui.sandbox.host_process import StartedProcess, start_host_process  # noqa: F401
from csro_tui.sandbox.isolation import _spawn  # noqa: F401 - the one spawner thread (isolation.py)
from csro_tui.sandbox.isolation import _PASSTHROUGH_ENV, _SANDBOX_SCRIPT, HOST_MODULES, HOST_SCRIPT, SANDBOX_ENV_VAR, WEAK_SANDBOX_ENV_VAR, _bubblewrap_command, _child_env, _python_roots, _site_dirs, bubblewrap_problem, describe_isolation, host_bytecode, host_uid, isolation_mode, kernel_boundary_problem, kernel_layers  # noqa: F401 - re-exported: callers import them from here
from csro_tui.sandbox.limits import HOST_BASE_MB, SandboxLimits, limits_from  # noqa: F401
from csro_tui.sandbox.policy_host import PolicyHost  # noqa: F401
from csro_tui.sandbox.wire import PRINTED_HEAD_CHARS  # noqa: F401
from csro_tui.sandbox.wire import encode_message as _encode_message  # noqa: F401 - tests/evaluation use it
