"""A policy host's process: started, set up, ended.

`start_host_process` spawns a host (`python -s -S -P host_start.py`, in
bubblewrap in that mode; or forks it from the zygote, zygote.py) in a fresh
temporary directory with a minimal environment and its own process group,
and sends it the first, policy-independent message of its set-up
(`_prepare_message`: the host applies its kernel layers at once, so a
pooled host has them while it waits).  `load_message` is the second, the
policy's module and limits, which `PolicyHost.launch` sends.  The isolation
itself (modes, the kernel-layer probe, the bwrap command line, the host's
environment) is isolation.py's.  `kill_process` ends a host's whole process
group; `log_tail` reads what the host wrote to its log (fd 2).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from csro_tui.sandbox import zygote
from csro_tui.sandbox.clock import ProgressPage, kill_host_process
from csro_tui.sandbox.contract import ALLOWED_IMPORTS
from csro_tui.sandbox.isolation import (
    _SANDBOX_SCRIPT,
    HOST_SCRIPT,
    _bubblewrap_command,
    _child_env,
    _site_dirs,
    _spawn,  # the one spawner thread: a host's parent-death signal follows it
    host_bytecode,
    host_uid,
    kernel_layers,
)
from csro_tui.sandbox.limits import SandboxLimits
from csro_tui.sandbox.validation import (
    ALLOWED_DUNDER_ATTRIBUTES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_BUILTINS,
    POLICY_FILENAME,
)
from csro_tui.sandbox.wire import FAILURE_TEXT_CHARS, PRINTED_HEAD_CHARS, TYPE_NAME_CHARS, encode_message
from csro_tui.text import clean_text

# Modules the host also loads before the policy runs: what allowed modules
# import lazily (Counter.most_common imports heapq, functools.singledispatch
# weakref, str.encode codecs, numpy 2 its submodules on first use, ...).
# After start-up no new executable memory may be mapped, so no extension
# module can load any more (host_kernel.forbid_executable_memory); and after
# the drop from root the installation may be unreadable (pyenv under /root).
# numpy's submodules loaded on first use, each with the words in a policy's
# source that may reach it.  numpy.ma is pure Python but its import parses
# signatures with ast (a compile the guard refuses once a policy is loaded);
# np.unique and the set functions import it.
_NUMPY_SUBMODULES = {
    "numpy.random": r"\brandom\b",
    "numpy.linalg": r"\blinalg\b",
    "numpy.fft": r"\bfft\b",
    "numpy.polynomial": r"\bpolynomial\b",
    "numpy.ma": r"\b(ma|unique\w*)\b|1d\b",
}
_LAZY_STDLIB = ("heapq", "weakref", "copy", "types", "encodings.latin_1", "encodings.ascii", "encodings.utf_16")
_LOG_NAME = "host.log"  # in the host's temporary directory: its fd 2


@dataclass
class StartedProcess:
    """A host process spawned, sent the policy-independent part of its
    set-up (`_prepare_message`), and waiting for the policy's module and
    limits; it has run nothing but the host's own code.
    `host_pool.HostPool` keeps a few ready; `PolicyHost.adopt` takes one, once."""

    process: subprocess.Popen  # or a zygote.ZygoteHost (the same interface)
    temp_dir: str
    mode: str
    page: ProgressPage | None = None  # the clock's page shared with the host
    claimed: bool = False

    def claim(self) -> None:
        if self.claimed:
            raise RuntimeError("this host process was already given to a policy")
        self.claimed = True

    def discard(self) -> None:
        """Kill the process (its whole group) and remove its temporary directory."""
        kill_process(self.process)
        _close_pipes(self.process)  # also when it had died already
        if self.page is not None:
            self.page.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def start_host_process(mode: str, *, fork: bool = True, numpy: bool = False) -> StartedProcess:
    """Spawn a host (`python -s -S -P host_start.py`, in bubblewrap in that
    mode) in a fresh temporary directory and send it the first part of its
    set-up; it then waits for the policy's module.  OSError if it cannot be
    started.  The host is forked by the zygote (zygote.py) when it is on
    and `fork` (by the one that has imported numpy if `numpy`), else spawned."""
    host_bytecode()  # the host's modules compiled once, not at every start
    temp_dir = tempfile.mkdtemp(prefix="csro-host-")
    page = None
    try:
        page = ProgressPage()
        work_dir = os.path.join(temp_dir, "work")
        os.mkdir(work_dir, 0o700)
        log_path = os.path.join(temp_dir, _LOG_NAME)
        if mode == "bubblewrap":
            command = _bubblewrap_command(shutil.which("bwrap") or "bwrap", work_dir)
            script = _SANDBOX_SCRIPT
        else:
            command = [sys.executable]
            script = str(HOST_SCRIPT)
        # -S: no site module (faster start, no .pth code, our editable install
        # stays invisible); the child adds the site dirs it needs itself.
        command += ["-s", "-S", "-P", script]
        forked = (zygote.spawn_host(mode, work_dir, log_path, page.fd, numpy) if fork and zygote.zygote_enabled(mode)
                  else None)
        if forked is not None:  # forked by the zygote (zygote.py); it runs the same host_main
            process, clock_fd = forked
        else:
            clock_fd = page.fd
            with open(log_path, "wb") as log:
                process = _spawn(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    cwd=work_dir,
                    env=_child_env(),
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=(page.fd,),
                )
    except BaseException:
        if page is not None:
            page.close()
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    started = StartedProcess(process, temp_dir, mode, page)
    drop_to = None
    if os.geteuid() == 0:  # its own uid, made from its pid (isolation.host_uid)
        drop_to = [host_uid(process.pid)] * 2
        os.chown(work_dir, *drop_to)
    prepare = _prepare_message(mode, drop_to)
    prepare["clock_fd"] = clock_fd  # the page the host maps for the parent's clock (clock.py)
    page.close_fd()  # the host has its own copy; the mapping stays
    # Part one of the host's set-up goes at once, so a pooled host has its
    # kernel layers in place before any policy is given to it.
    try:
        process.stdin.write(encode_message(prepare, "the host's set-up"))
        process.stdin.flush()
    except OSError:  # died at once: whoever loads a policy into it reports why
        pass
    return started


def _prepare_message(mode: str, drop_to: list | None) -> dict:
    """The host's first request: the part of its set-up that does not depend
    on the policy (host_main._prepare).  The same for every host of a mode
    but `drop_to`, the [uid, gid] it drops to as root (None: no drop)."""
    layers = kernel_layers()
    return {
        "seq": 0,
        "op": "prepare",
        # What allowed modules import lazily, loaded while the installation
        # is readable: after the drop to nobody it may not be (pyenv under /root).
        "preimport": ["__future__", *_LAZY_STDLIB],
        "site_dirs": list(_site_dirs()),
        "drop_to": drop_to,
        "allowed_imports": sorted(ALLOWED_IMPORTS),
        "forbidden_builtins": sorted(FORBIDDEN_BUILTINS),
        "forbidden_attributes": sorted(FORBIDDEN_ATTRIBUTES),
        "allowed_dunder_attributes": sorted(ALLOWED_DUNDER_ATTRIBUTES),
        "kernel": {"landlock": bool(layers["landlock"]), "seccomp": bool(layers["seccomp"])},
    }


def kill_process(process: subprocess.Popen | None) -> None:
    """SIGKILL a host's process group, reap it and close its pipes."""
    if process is None or process.returncode is not None:
        return
    kill_host_process(process)
    process.wait()
    _close_pipes(process)


def _close_pipes(process: subprocess.Popen) -> None:
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except OSError:
            pass


def load_message(source: str, game_info: dict, limits: SandboxLimits, imported: set[str]) -> dict:
    """The host's second message (host_main's `load`): the policy's module and
    limits.  `imported`: the modules the source imports
    (validation.imported_modules); the allowed ones are imported by the host
    before it drops root and forbids new executable memory."""
    preimport = sorted(imported & ALLOWED_IMPORTS)
    if "numpy" in preimport:
        # numpy 2 loads these on first use (40-50 ms for all of them):
        # those the source names, so honest code finds them loaded; code
        # that reaches one otherwise fails, naming the refused mmap.
        preimport += [name for name, words in _NUMPY_SUBMODULES.items() if re.search(words, source)]
    return {
        "op": "load",
        "source": source,
        "game_info": game_info,
        "policy_filename": POLICY_FILENAME,
        "preimport": preimport,
        "recursion_limit": limits.recursion_limit,
        "output_tail_chars": limits.output_tail_chars,
        "output_head_chars": PRINTED_HEAD_CHARS,
        "failure_text_chars": FAILURE_TEXT_CHARS,
        "type_name_chars": TYPE_NAME_CHARS,
        "limits": {
            "call_seconds": limits.move_timeout,
            "call_grace_seconds": limits.call_grace,
            "load_seconds": limits.init_timeout,
            "memory_bytes": limits.memory_mb << 20,
            "cpu_seconds": limits.cpu_seconds,
            "max_processes": limits.max_processes,
            "max_file_bytes": limits.max_file_bytes,
            "max_open_files": limits.max_open_files,
        },
    }


def log_tail(temp_dir: str | None, chars: int = 1500) -> str:
    """The end of a host's log (what it wrote to fd 2), cleaned; "" if none."""
    if temp_dir is None:
        return ""
    try:
        with open(os.path.join(temp_dir, _LOG_NAME), "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - chars))
            return clean_text(log.read().decode("utf-8", "replace")).strip()
    except OSError:
        return ""
