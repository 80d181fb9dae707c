"""The evolutionary search oracle: `llm-evolve` (LLM edits) and `evolve` (AST, offline).

One proposal is one search against the current meta-strategy:

1. Seeds: the population members, the game's seed policies (`game_seeds`)
   and the best programs of the previous searches (`carry_over`), each
   screened (preview) and added to every island.
2. Generations: on each island, `children` parents are sampled (by rank
   or uniformly) with their inspirations; the operator makes the children
   (the LLM operator concurrently); each new child is screened and offered
   to its parent's island.  Every `migration_interval` generations each
   island's best is offered to the next island.  The search ends when
   `budget` children have been asked for (for `llm-evolve`, one LLM call
   each) or the engine stops.
3. Promotion: the `finalists` fittest programs that are not population
   members are re-evaluated with more episodes (sampled games) and the best
   becomes the proposal; its parent is the population member its lineage
   starts from, if any.

With two populations (`OracleContext.seat`) the search is for one seat: its
seeds are that seat's own members (`own_population`), the game's seeds and
the best programs of that seat's earlier searches; fitness is the payoff in
that seat against the other seat's mixture (the engine's preview and
`play_candidate` play the seat); members and rejections of that seat are
what the proposal must not repeat.

Fitness is the expected payoff against the meta-strategy (`fitness.py`);
the grid's features are in `features.py`.  With the AST operator the whole
search is deterministic given the engine's seed for the iteration (and the
`seed` option): the random choices come from one `random.Random`, children
are made in a fixed order, and previews use fixed seeds.

Cost per proposal: `llm-evolve` makes exactly `budget` LLM calls (default
16) unless stopped; `evolve` makes none.  Sandboxed evaluations: one
preview per seed and per new child, plus the finalists' re-evaluation.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field
from typing import Any, Mapping

from csro_tui.errors import ConfigError
from csro_tui.oracles.base import LLMUse, OracleContext
from csro_tui.oracles.candidates import NoUsableCandidate, attach_calls, score_text
from csro_tui.oracles.evolve.ast_mutation import DEFAULT_MAX_TRIES, ASTMutation
from csro_tui.oracles.evolve.database import Program, ProgramDatabase, normalised_key
from csro_tui.oracles.evolve.features import behaviour_features, describe_features
from csro_tui.oracles.evolve.fitness import Fitness, mix_seed
from csro_tui.oracles.evolve.mutation import MutationOperator, MutationRequest
from csro_tui.oracles.options import LLM_KEYS, OptionReader
from csro_tui.oracles.registry import OracleExhausted
from csro_tui.records import Proposal

def code_key(source: str) -> str:
    """Identity of code regardless of comments and layout (the syntax tree), for exclusions."""
    try:
        return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError):
        return normalised_key(source)


class SearchExhausted(OracleExhausted):
    """The offline search found nothing that is not already in the population."""


# How many failure reasons the rationale quotes.
_FAILURES_SHOWN = 5


@dataclass(frozen=True)
class EvolutionSettings:
    budget: int = 16  # children asked for per proposal (LLM calls for llm-evolve)
    islands: int = 2
    children: int = 2  # per island and generation
    migration_interval: int = 2  # generations between migrations
    inspirations: int = 3
    exploitation: float = 0.7
    game_seeds: bool = True
    carry_over: int = 4
    finalists: int = 3
    reevaluation_episodes: int = 10
    seed: int = 0

    def check(self, oracle: str) -> None:
        for name in ("budget", "islands", "children", "migration_interval", "finalists"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{oracle} oracle: {name} must be at least 1, not {getattr(self, name)}")
        for name in ("inspirations", "carry_over", "reevaluation_episodes"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{oracle} oracle: {name} must be 0 or more, not {getattr(self, name)}")
        if not 0.0 <= self.exploitation <= 1.0:
            raise ConfigError(f"{oracle} oracle: exploitation must be in [0, 1], not {self.exploitation}")


@dataclass
class SearchLog:
    """What happened during one search, for the rationale."""

    generations: int = 0
    asked: int = 0
    evaluated: int = 0
    duplicates: int = 0
    elites_placed: int = 0
    failures: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    seed_failures: list[str] = field(default_factory=list)
    llm_errors: list[Exception] = field(default_factory=list)


@dataclass(frozen=True)
class SearchSummary:
    """The numbers of the last search (for the UI, reports and tests)."""

    best_seed_fitness: float
    champion_id: str
    champion_fitness: float  # screening (preview)
    champion_reevaluated: float | None  # re-evaluation, sampled games
    programs: int
    generations: int
    children: int
    failures: int
    llm_calls: int


class EvolutionOracle:
    """Evolutionary search with a pluggable mutation operator; see the module docstring."""

    def __init__(self, operator: MutationOperator, settings: EvolutionSettings | None = None, *, name: str) -> None:
        self.operator = operator
        self.settings = settings or EvolutionSettings()
        self.settings.check(name)
        self.name = name
        # The best programs of earlier searches, seeds of the next one, by seat (None: one
        # population): a program evolved for one seat is no seed for the other.
        self._carried: dict[int | None, list[tuple[str, str]]] = {}  # seat -> [(label, source)]
        self.last_search: SearchSummary | None = None
        self.last_database: ProgramDatabase | None = None  # the last search's programs, for inspection

    # ---------------------------------------------------------------- propose
    @property
    def llm(self) -> LLMUse | None:
        """The oracle contract's declaration: the operator's LLM client, `budget` calls a proposal (LLM
        mutations: one call per child); None with an offline operator."""
        return LLMUse(self.operator.backend, self.settings.budget) if self.operator.uses_llm else None

    def propose(self, context: OracleContext) -> Proposal:
        settings = self.settings
        fitness = Fitness(context, reevaluation_episodes=settings.reevaluation_episodes)
        database = ProgramDatabase(settings.islands, exploitation=settings.exploitation)
        rng = random.Random(mix_seed(context.seed, settings.seed, self.name))
        log = SearchLog()
        self.last_database = database
        member_ids = [m.id for m in context.population]
        self._seed(database, context, fitness, member_ids, log)
        if not len(database):
            raise NoUsableCandidate(
                f"{self.name} oracle: no seed program could be evaluated: " + "; ".join(log.seed_failures[:_FAILURES_SHOWN])
            )
        try:
            self._evolve(database, context, fitness, member_ids, rng, log)
        except BaseException as error:
            raise attach_calls(error, log.calls + list(getattr(error, "llm_calls", [])))
        champion, finalists = self._promote(database, context, fitness)
        if champion is None:
            raise attach_calls(self._nothing_new(log), log.calls)
        self._carried[context.seat] = [(p.id, p.source) for p in database.best(settings.carry_over)]
        lineage = database.lineage(champion)
        root = lineage[0]
        seeds = [p for p in database.programs.values() if p.generation == 0]
        self.last_search = SearchSummary(
            best_seed_fitness=max(p.fitness for p in seeds),
            champion_id=champion.id,
            champion_fitness=champion.fitness,
            champion_reevaluated=dict((p.id, v) for p, v in finalists).get(champion.id),
            programs=len(database),
            generations=log.generations,
            children=log.asked,
            failures=len(log.failures),
            llm_calls=len(log.calls),
        )
        seed_name = root.id.removeprefix("seed:") if root.member_id is None and root.id.startswith("seed:") else None
        origin_note = ""
        if seed_name is not None and champion is root:  # not the search's own: say so, and by its name
            origin_note = (f"This is the game's seed policy {seed_name}, unchanged: it is not a population member, and "
                           "no program the search made did better.\n")
        elif seed_name is not None:
            origin_note = (f"Derived from the game's seed policy {seed_name}, which is not a population member, so no "
                           "parent is recorded; the lineage below starts from it.\n")
        return Proposal(
            source=self._annotated(champion, lineage),
            oracle=self.name,
            name=context.proposal_name(seed_name if champion is root and seed_name else f"{self.name}-{context.iteration}"),
            parent=root.member_id,
            rationale=origin_note + self._rationale(database, context, champion, lineage, finalists, log),
            seat=context.seat,
            llm_calls=log.calls,
        )

    def _nothing_new(self, log: SearchLog) -> Exception:
        """The error for a search whose every program is a member or was rejected.

        If every child failed for want of the LLM, that error (the server is
        down, say).  With the offline operator the population's neighbourhood
        is used up - tiny programs have only a few mutants - so the oracle has
        finished (the run ends normally).  An LLM search may do better on the
        next attempt: a failed attempt.
        """
        if log.llm_errors and len(log.llm_errors) == log.asked:
            return log.llm_errors[0]
        message = (
            f"{self.name} oracle: none of {log.asked} mutations gave a new program that runs "
            f"({len(log.failures)} failed, {log.duplicates} duplicates, the rest population members or rejected code)"
        )
        if not self.operator.uses_llm:
            return SearchExhausted(message)
        return NoUsableCandidate(message)

    # ---------------------------------------------------------------- steps
    def _seed(
        self, database: ProgramDatabase, context: OracleContext, fitness: Fitness, member_ids: list[str], log: SearchLog
    ) -> None:
        sources: list[tuple[str, str, str, str | None]] = []  # (id, origin, source, member id)
        for member in context.own_members:  # parents: the seat's own members with two populations
            sources.append((f"member:{member.id}", f"population member {member.name} ({member.id})", member.source, member.id))
        if self.settings.game_seeds:
            try:
                seeds = context.spec.seed_policies()
            except Exception:  # noqa: BLE001 - a spec without seeds simply adds none
                seeds = {}
            for seed_name, source in sorted(seeds.items()):
                sources.append((f"seed:{seed_name}", f"seed {seed_name}", source, None))
        for label, source in self._carried.get(context.seat, []):
            sources.append((f"earlier:{label}", f"best of an earlier search ({label})", source, None))
        for program_id, origin, source, member_id in sources:
            if context.cancel.is_set() and not context.finish.is_set():  # finishing early still seeds: no LLM
                return
            if database.find(source) is not None or program_id in database.programs:
                continue
            screening = fitness.screen(source)
            if screening.score is None:
                log.seed_failures.append(f"{origin}: {screening.failure}")
                continue
            database.add(
                Program(
                    id=program_id,
                    source=source,
                    fitness=screening.score,
                    per_member=screening.per_member,
                    features=behaviour_features(source, screening.per_member, member_ids),
                    origin=origin,
                    member_id=member_id,
                )
            )

    def _evolve(
        self,
        database: ProgramDatabase,
        context: OracleContext,
        fitness: Fitness,
        member_ids: list[str],
        rng: random.Random,
        log: SearchLog,
    ) -> None:
        settings = self.settings
        while log.asked < settings.budget and not context.cancel.is_set():
            log.generations += 1
            generation = log.generations
            batch: list[tuple[int, MutationRequest]] = []
            for island in range(settings.islands):
                for child in range(settings.children):
                    if log.asked >= settings.budget:
                        break
                    parent = database.sample_parent(island, rng)
                    inspirations = database.sample_inspirations(island, parent, settings.inspirations, rng)
                    label = f"g{generation}.{island}.{child}"
                    batch.append((island, MutationRequest(parent, tuple(inspirations), rng.getrandbits(31), label)))
                    log.asked += 1
            results = self.operator.mutate_batch([request for _, request in batch], context)
            for (island, request), result in zip(batch, results):
                log.calls += result.llm_calls
                if result.error is not None:
                    log.llm_errors.append(result.error)
                if result.source is None:
                    log.failures.append(f"{request.label}: {result.failure}")
                    continue
                if database.find(result.source) is not None:
                    log.duplicates += 1
                    continue
                if context.cancel.is_set() and not context.finish.is_set():  # finishing: score what came
                    return
                screening = fitness.screen(result.source)
                log.evaluated += 1
                if screening.score is None:
                    log.failures.append(f"{request.label}: {screening.failure}")
                    continue
                placed = database.add(
                    Program(
                        id=request.label,
                        source=result.source,
                        fitness=screening.score,
                        per_member=screening.per_member,
                        features=behaviour_features(result.source, screening.per_member, member_ids),
                        origin=f"{result.kind}: {result.description}" if result.description else result.kind,
                        parent=request.parent.id,
                        generation=generation,
                    ),
                    island,
                )
                log.elites_placed += placed
            if generation % settings.migration_interval == 0:
                database.migrate()

    def _promote(
        self, database: ProgramDatabase, context: OracleContext, fitness: Fitness
    ) -> tuple[Program | None, list[tuple[Program, float | None]]]:
        """The proposal: the best new program after re-evaluating the finalists.

        Members are not new, and code the reviewer rejected is not proposed again.
        """
        known = {code_key(m.source) for m in context.own_members}
        known |= {code_key(proposal.source) for proposal, _ in context.seat_rejections()}
        new = [p for p in database.best(len(database)) if code_key(p.source) not in known]
        finalists = new[: self.settings.finalists]
        if not finalists:
            return None, []
        if not fitness.reevaluates or len(finalists) == 1:
            return finalists[0], [(p, None) for p in finalists]
        measured = [(p, fitness.reevaluate(p.source)) for p in finalists]
        scored = [(p, value) for p, value in measured if value is not None]
        if not scored:
            return finalists[0], measured
        champion = max(scored, key=lambda item: (item[1], -item[0].serial))[0]
        return champion, measured

    # ---------------------------------------------------------------- text
    def _annotated(self, champion: Program, lineage: list[Program]) -> str:
        """The AST operator drops comments and keeps the seed's docstring: say so at the top."""
        if getattr(self.operator, "uses_llm", True) or champion.parent is None:
            return champion.source
        steps = len(lineage) - 1
        header = (
            f"# Evolved offline by the `{self.name}` oracle ({steps} AST mutation{'s' if steps != 1 else ''} of "
            f"{lineage[0].origin}; no LLM involved).\n"
            "# Docstrings below were written for the original and may no longer describe this code.\n"
        )
        return header + champion.source

    def _rationale(
        self,
        database: ProgramDatabase,
        context: OracleContext,
        champion: Program,
        lineage: list[Program],
        finalists: list[tuple[Program, float | None]],
        log: SearchLog,
    ) -> str:
        settings = self.settings
        operator = "LLM SEARCH/REPLACE edits" if self.operator.uses_llm else "AST mutations, offline"
        seeds = [p for p in database.programs.values() if p.generation == 0]
        best_seed = max(seeds, key=lambda p: (p.fitness, -p.serial))
        lines = [
            (f"For {context.seat_words()}, against the other seat's meta-strategy. " if context.seat is not None else "")
            + f"Evolutionary search ({operator}): {log.asked} children asked for in {log.generations} generations "
            f"over {settings.islands} island{'s' if settings.islands > 1 else ''}; {log.evaluated} evaluated, "
            f"{len(log.failures)} failed, {log.duplicates} duplicates; {len(database)} programs, "
            f"elites per island {database.occupancy()}, {database.migrations} migrations."
            + (f" {len(log.calls)} LLM calls." if self.operator.uses_llm else ""),
            f"Best seed: {best_seed.origin}, expected payoff {best_seed.fitness:+.3f}. "
            f"Champion: {champion.id}, {champion.fitness:+.3f} ({describe_features(champion.features, [m.name for m in context.population])}).",
            "Lineage: " + " -> ".join(f"{p.id} [{p.origin}] {p.fitness:+.3f}" for p in lineage),
        ]
        if any(value is not None for _, value in finalists):
            lines.append(
                f"Finalists re-evaluated over {settings.reevaluation_episodes} episodes per weighted member: "
                + ", ".join(f"{p.id} {p.fitness:+.3f} -> {score_text(value)}" for p, value in finalists)
            )
        if log.failures:
            shown = "; ".join(log.failures[:_FAILURES_SHOWN])
            more = len(log.failures) - _FAILURES_SHOWN
            lines.append(f"Failures: {shown}" + (f" (and {more} more)" if more > 0 else ""))
        if log.seed_failures:
            lines.append("Seeds that failed: " + "; ".join(log.seed_failures[:_FAILURES_SHOWN]))
        return "\n".join(lines)


# --------------------------------------------------------------------- factories
def read_evolution_settings(options: OptionReader, default_budget: int) -> EvolutionSettings:
    return EvolutionSettings(
        budget=options.integer("budget", default_budget, minimum=1),
        islands=options.integer("islands", 2, minimum=1),
        children=options.integer("children", 2, minimum=1),
        migration_interval=options.integer("migration_interval", 2, minimum=1),
        inspirations=options.integer("inspirations", 3, minimum=0),
        exploitation=options.number("exploitation", 0.7, minimum=0.0, maximum=1.0),
        game_seeds=options.boolean("game_seeds", True),
        carry_over=options.integer("carry_over", 4, minimum=0),
        finalists=options.integer("finalists", 3, minimum=1),
        reevaluation_episodes=options.integer("reevaluation_episodes", 10, minimum=0),
        seed=options.integer("seed", 0),
    )


def make_ast_evolve_oracle(config: Mapping[str, Any] | None = None) -> EvolutionOracle:
    """`evolve`: the search with `ASTMutation`, no LLM; budget = children per proposal (default 24)."""
    options = OptionReader("evolve", config)
    settings = read_evolution_settings(options, default_budget=24)
    max_tries = options.integer("max_tries", DEFAULT_MAX_TRIES, minimum=1)
    # The run passes its model and base URL to every oracle; this one needs neither.
    options.finish(ignore=LLM_KEYS)
    settings.check("evolve")
    return EvolutionOracle(ASTMutation(max_tries), settings, name="evolve")
