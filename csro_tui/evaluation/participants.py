"""Who plays: picklable descriptions of match participants.

A participant is a description, not a live object, so it can cross into a
worker process and be turned into a sandboxed host (code) or an in-process
agent (benchmark bot) by the referee on the far side.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from csro_tui.errors import CsroError, UnknownName
from csro_tui.names import did_you_mean

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

SEED_PREFIX = "seed:"


@dataclass(frozen=True)
class CodePolicy:
    """Untrusted policy source; it only ever runs inside a PolicyHost."""

    name: str
    source: str

    @property
    def source_hash(self) -> str:
        """Identity of the code itself (names can repeat, code cannot lie)."""
        return _sha256(self.source)


@functools.lru_cache(maxsize=256)
def _sha256(source: str) -> str:
    # Asked for every exact entry of every member each iteration (a Leduc
    # best response is ~100 kB of code): hashed once per source.
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class BotPolicy:
    """A trusted benchmark bot, a member of `spec.benchmark()` by name."""

    name: str


Participant = Union[CodePolicy, BotPolicy]


def benchmark_participants(spec: "GameSpec") -> list[BotPolicy]:
    """The game's benchmark population, in the spec's order."""
    return [BotPolicy(bot.name) for bot in spec.benchmark()]


def find_bot(spec: "GameSpec", name: str):
    """The benchmark bot called `name`, or a one-line error naming the choices."""
    for bot in spec.benchmark():
        if bot.name == name:
            return bot

    raise UnknownName(f"{name!r} is not a benchmark bot of {spec.name}"
                    f"{did_you_mean(name, [bot.name for bot in spec.benchmark()])}")


def resolve_participant(spec: "GameSpec", reference: str) -> Participant:
    """Turn a command-line reference into a participant.

    `seed:NAME` is one of the game's seed policies, an existing path is a
    policy file, and anything else must name a benchmark bot.  Code is not
    validated here; see `csro_tui.sandbox.validation.validate_source`.
    """
    if reference.startswith(SEED_PREFIX):
        name = reference[len(SEED_PREFIX):]
        seeds = spec.seed_policies()
        if name not in seeds:
            choices = ", ".join(sorted(seeds)) or "none"
            raise UnknownName(f"{spec.name} has no seed policy {name!r}{did_you_mean(name, seeds)}; seeds: {choices}")
        return CodePolicy(reference, seeds[name])
    path = Path(reference)
    if reference.endswith(".py") or path.exists():
        return CodePolicy(path.stem, read_policy_file(path))
    bot_names = [bot.name for bot in spec.benchmark()]
    if reference in bot_names:
        return BotPolicy(reference)

    known = [*bot_names, *(SEED_PREFIX + name for name in spec.seed_policies())]
    raise UnknownName(
        f"{reference!r} is neither seed:NAME, a policy file, nor a benchmark bot of {spec.name}"
        f"{did_you_mean(reference, known)}"
    )


def read_policy_file(path: Path) -> str:
    """The text of a policy file, or a one-line error saying why not."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CsroError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise CsroError(f"cannot read {path}: it is a directory") from None
    except UnicodeDecodeError:
        raise CsroError(f"cannot read {path}: not UTF-8 text") from None
    except OSError as error:
        raise CsroError(f"cannot read {path}: {error.strerror or error}") from None
