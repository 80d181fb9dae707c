"""Exact tables of code policies kept on disk, across evaluations and sessions.

Tabularising a code policy (exact.py) asks its sandbox about every
information state; the answer is a function of what the policy is given:
its code, the game (`game_info`, and the observation of every step the
tabulariser shows it), the episode seed (`TABULARIZE_SEED`), the host that
runs it and reads its answers, the libraries it may import, and the
sandbox it runs in.  The key is a hash of all of those (`table_key`), so
a table is reused only where asking again would ask the same questions of
the same code in the same conditions.  A policy that draws unseeded random
numbers is tabularised as one draw anyway (exact.py's caveat); the cache
keeps the first, as the in-memory cache already does within a session.

Files are `<key>.npz` (numpy, loaded with allow_pickle=False) under
`$CSRO_TABLE_CACHE_DIR`, else `$XDG_CACHE_HOME/csro-tui/tables`, else
`~/.cache/csro-tui/tables`; `CSRO_TABLE_CACHE_DIR=off` turns the cache off.
A file is never trusted blindly: it must hold its own key, and a finite,
non-negative array of the game's shape whose rows sum to 1 and put nothing
on illegal actions.  Anything else is ignored with one logged line (the
policy is asked again and the file rewritten).  Those checks catch
accidents, not a writer: the key is a hash of public inputs, so whoever can
write the directory could plant a table for any code.  The cache is
therefore used only in a directory owned by this user and writable by
nobody else (made 0700); any other is skipped with one logged line.  Writes are atomic
(a temporary file, then rename); a cache that cannot be written is skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from csro_tui.sandbox.contract import ALLOWED_IMPORTS
from csro_tui.sandbox.isolation import HOST_MODULES, HOST_SCRIPT, isolation_mode, kernel_layers

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

log = logging.getLogger(__name__)

CACHE_DIR_ENV_VAR = "CSRO_TABLE_CACHE_DIR"
# Bumped when the file layout or what a key covers changes.
CACHE_FORMAT = 1
_ROW_TOLERANCE = 1e-6


def cache_dir() -> Path | None:
    """Where tables are kept, or None when the cache is off."""
    configured = os.environ.get(CACHE_DIR_ENV_VAR, "").strip()
    if configured.lower() in ("off", "0", "none"):
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "csro-tui" / "tables"


def fingerprinted_files() -> list[Path]:
    """What runs and reads a policy: the host's files, the parent's side of the
    sandbox (sandbox.PARENT_MODULES: what it sends, its answer checks, the
    host's set-up and environment), exact.py, the contract and the names the
    host's guard forbids (validation.py)."""
    from csro_tui.evaluation import exact  # start-up time: importing it loads open_spiel, pyspiel
    # start-up time: importing it loads orjson, rich
    from csro_tui.sandbox import contract, sandbox, validation

    parent_side = (exact, contract, validation)
    return [Path(HOST_SCRIPT), *HOST_MODULES, *sandbox.PARENT_MODULES, *(Path(module.__file__) for module in parent_side)]


@functools.lru_cache(maxsize=1)
def _runtime_fingerprint() -> str:
    """`fingerprinted_files`, the interpreter and numpy."""
    digest = hashlib.sha256()
    for path in fingerprinted_files():
        digest.update(path.name.encode())
        digest.update(Path(path).read_bytes())
    digest.update(f"python {sys.version_info[:3]} numpy {np.__version__}".encode())
    return digest.hexdigest()


def table_key(spec: "GameSpec", source_hash: str, observations: str) -> str:
    """The cache key of a code policy's table in this game (see the module doc).

    `observations`: a digest of every observation the tabulariser shows the
    policy, in order (exact._observation_digest).
    """
    from csro_tui.evaluation.exact import TABULARIZE_SEED  # start-up time: importing it loads open_spiel, pyspiel

    parts = {
        "format": CACHE_FORMAT,
        "game": str(spec.load()),
        "spec": spec.name,
        "game_info": spec.game_info(),
        "observations": observations,
        "code": source_hash,
        "seed": TABULARIZE_SEED,
        "imports": sorted(ALLOWED_IMPORTS),
        "sandbox": [isolation_mode(), sorted(kernel_layers().items())],
        "runtime": _runtime_fingerprint(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


_refused_dirs: set[str] = set()


def _usable_dir() -> Path | None:
    """`cache_dir()` if it is off-limits to other users (or does not exist yet), else None."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        info = directory.stat()
    except FileNotFoundError:
        return directory  # made 0700 by `store`
    except OSError:
        return None
    problem = None
    if info.st_uid != os.getuid():
        problem = "it belongs to another user"
    elif info.st_mode & 0o022:
        problem = "others may write to it"
    if problem is None:
        return directory
    if str(directory) not in _refused_dirs:
        _refused_dirs.add(str(directory))
        log.warning("not using the policy table cache %s: %s (a table there could be planted)", directory, problem)
    return None


def load(key: str, legal_mask: np.ndarray) -> np.ndarray | None:
    """The cached probabilities for `key`, checked against the game's legal
    actions (`legal_mask`, rows x actions); None if absent or not usable."""
    directory = _usable_dir()
    if directory is None:
        return None
    path = directory / f"{key}.npz"
    try:
        with np.load(path, allow_pickle=False) as data:
            stored_key = str(data["key"])
            probabilities = np.array(data["probabilities"], dtype=np.float64)
    except FileNotFoundError:
        return None
    except Exception as error:  # noqa: BLE001 - any unreadable file is ignored the same way
        log.warning("ignoring the cached policy table %s: unreadable (%s)", path, type(error).__name__)
        return None
    problem = table_problem(probabilities, legal_mask) if stored_key == key else "it is another table's"
    if problem:
        log.warning("ignoring the cached policy table %s: %s", path, problem)
        return None
    return probabilities


def table_problem(probabilities: np.ndarray, legal_mask: np.ndarray) -> str | None:
    """Why `probabilities` is not a policy table of this shape, or None."""
    if probabilities.shape != legal_mask.shape:
        return f"shape {probabilities.shape}, not {legal_mask.shape}"
    if not np.all(np.isfinite(probabilities)) or np.any(probabilities < 0):
        return "probabilities that are negative or not finite"
    if np.any(probabilities[legal_mask == 0] > 0):
        return "probability on an illegal action"
    if not np.allclose(probabilities.sum(axis=1), 1.0, atol=_ROW_TOLERANCE):
        return "rows that do not sum to 1"
    return None


def store(key: str, probabilities: np.ndarray) -> None:
    """Keep a table (best effort: a cache that cannot be written is skipped)."""
    directory = _usable_dir()
    if directory is None:
        return
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".table-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as file:
                np.savez(file, key=np.array(key), probabilities=probabilities)
            os.replace(temporary, directory / f"{key}.npz")
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        log.debug("could not keep a policy table in %s: %s", directory, error)
