"""The program database: islands, each with a MAP-Elites grid.

Every evaluated program is kept in `programs` (for lineages and to skip
duplicates).  Each island keeps one elite per cell of its grid - the cell is
the program's behaviour features (`features.py`) - replacing an elite only
with a strictly fitter program.  Islands evolve apart (a child joins the
island of its parent) and exchange their best programs by `migrate()` (a
ring: island i's best is offered to island i+1), which keeps diversity
without letting one lineage take over everywhere at once.

Sampling, as in AlphaEvolve/FunSearch: a parent is, with probability
`exploitation`, drawn from the island's elites by rank (the best twice as
likely as the second, three times as the third, ...), otherwise uniformly
from them (exploration).  Inspirations are the island's best other elites
plus one elite from another island.  All randomness comes from the
`random.Random` the caller passes, so a search is reproducible.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field
from typing import Iterable


@dataclass
class Program:
    """One evaluated program."""

    id: str  # "seed:NAME", "member:ID" or the child's label "g3.1.0"
    source: str
    fitness: float  # expected payoff against the meta-strategy (screening)
    per_member: dict[str, float] = field(default_factory=dict)
    features: tuple[int, ...] = ()
    origin: str = ""  # how it came about: "population member X", "seed X", "edit", "ast: ..."
    parent: str | None = None  # program id
    generation: int = 0
    member_id: str | None = None  # population id when it is a member
    serial: int = 0  # insertion order, for stable ties


def normalised_key(source: str) -> str:
    """Identity of a program for duplicate detection (trailing spaces and blank edges ignored)."""
    text = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rank_key(program: Program) -> tuple[float, int]:
    return (-program.fitness, program.serial)


class Island:
    """A MAP-Elites grid: one elite per feature cell."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.cells: dict[tuple[int, ...], Program] = {}

    def offer(self, program: Program) -> bool:
        """Keep `program` if its cell is empty or it beats the cell's elite."""
        current = self.cells.get(program.features)
        if current is not None and (current.id == program.id or program.fitness <= current.fitness):
            return False
        self.cells[program.features] = program
        return True

    def elites(self) -> list[Program]:
        """The elites, best first."""
        return sorted(self.cells.values(), key=_rank_key)

    def best(self) -> Program | None:
        elites = self.elites()
        return elites[0] if elites else None


class ProgramDatabase:
    """Programs, islands and sampling; see the module docstring."""

    def __init__(self, islands: int = 2, *, exploitation: float = 0.7) -> None:
        if islands < 1:
            raise ValueError(f"islands must be at least 1, not {islands}")
        if not 0.0 <= exploitation <= 1.0:
            raise ValueError(f"exploitation must be in [0, 1], not {exploitation}")
        self.islands = [Island(index) for index in range(islands)]
        self.exploitation = exploitation
        self.programs: dict[str, Program] = {}
        self._by_key: dict[str, str] = {}
        self._serial = itertools.count()
        self.migrations = 0  # programs that moved into another island's grid

    # ---------------------------------------------------------------- adding
    def find(self, source: str) -> Program | None:
        """The program with this source (up to trailing spaces), if evaluated before."""
        program_id = self._by_key.get(normalised_key(source))
        return self.programs.get(program_id) if program_id is not None else None

    def add(self, program: Program, island: int | None = None) -> bool:
        """Record `program` and offer it to `island` (None: every island).

        Returns whether it became an elite anywhere.  A program whose id or
        source is already known raises ValueError: callers check `find`.
        """
        if program.id in self.programs or self.find(program.source) is not None:
            raise ValueError(f"program {program.id} is already in the database")
        program.serial = next(self._serial)
        self.programs[program.id] = program
        self._by_key[normalised_key(program.source)] = program.id
        targets = self.islands if island is None else [self.islands[island]]
        placed = [target.offer(program) for target in targets]
        return any(placed)

    # ---------------------------------------------------------------- sampling
    def sample_parent(self, island: int, rng: random.Random) -> Program:
        """A parent from `island`: by rank with probability `exploitation`, else uniform."""
        elites = self.islands[island].elites() or self.best(1)
        if not elites:
            raise ValueError("the database is empty")
        if rng.random() < self.exploitation:
            weights = [1.0 / (rank + 1) for rank in range(len(elites))]
            return rng.choices(elites, weights=weights, k=1)[0]
        return rng.choice(elites)

    def sample_inspirations(self, island: int, parent: Program, count: int, rng: random.Random) -> list[Program]:
        """Up to `count` programs other than `parent`: the island's best, plus one from elsewhere."""
        if count <= 0:
            return []
        own = [p for p in self.islands[island].elites() if p.id != parent.id]
        own_ids = {p.id for p in own}
        others = [
            p
            for other in self.islands
            if other.index != island
            for p in other.elites()
            if p.id != parent.id and p.id not in own_ids
        ]
        if not others:
            return own[:count]
        # Distinct programs from other islands, in a stable order, one drawn at random.
        distinct = list({p.id: p for p in sorted(others, key=_rank_key)}.values())
        return own[: count - 1] + [rng.choice(distinct)]

    # ---------------------------------------------------------------- migration
    def migrate(self) -> list[tuple[int, int, str]]:
        """Offer each island's best to the next island (a ring); returns (from, to, id) of moves kept.

        The bests are taken before any move, so one round moves each program one step.
        """
        if len(self.islands) < 2:
            return []
        bests = [island.best() for island in self.islands]
        moved = []
        for index, best in enumerate(bests):
            if best is None:
                continue
            target = self.islands[(index + 1) % len(self.islands)]
            if target.offer(best):
                moved.append((index, target.index, best.id))
        self.migrations += len(moved)
        return moved

    # ---------------------------------------------------------------- reading
    def best(self, count: int = 1, *, exclude: Iterable[str] = ()) -> list[Program]:
        """The fittest programs overall (elites or not), skipping ids in `exclude`."""
        skip = set(exclude)
        ranked = sorted((p for p in self.programs.values() if p.id not in skip), key=_rank_key)
        return ranked[:count]

    def lineage(self, program: Program) -> list[Program]:
        """The program's ancestors, root first, ending with the program."""
        chain = [program]
        while chain[-1].parent is not None and chain[-1].parent in self.programs and len(chain) <= len(self.programs):
            chain.append(self.programs[chain[-1].parent])
        return list(reversed(chain))

    def occupancy(self) -> list[int]:
        """Filled cells per island."""
        return [len(island.cells) for island in self.islands]

    def __len__(self) -> int:
        return len(self.programs)
