"""Export a session: standalone policy modules, the payoff matrix, a report.

`export_session(state, out)` writes

- `policies/<id>_<name>.py`: each member's code, unchanged, under a header
  comment (origin, parent, iteration, meta-strategy weight, scores); each
  file is a complete policy module that `csro eval` can load;
- `payoffs.csv`: the meta-game matrix, rows and columns by policy id;
- `report.md`: the run in Markdown (configuration, versions, iterations,
  population, meta-strategy, decisions), with
- `run.svg`: the headline figure per iteration (exploitability, benchmark
  AggScore with ± stderr, or each new policy's gain), drawn by
  `sessions/plot.py`, shown at the top of the report.

The session may come from anyone (docs/SECURITY.md, "Files from elsewhere"):
every path is built by `files.path_inside` from an id checked when the log
was read, every text of the log reaches `report.md` escaped
(`files.markdown_text`, `markdown_code`) and every CSV cell through
`files.csv_cell`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from csro_tui.errors import SessionError
from csro_tui.files import file_name, markdown_code as _code, markdown_text as _md, path_inside, quoted, write_csv
from csro_tui.numbers import counted, number as format_number, sparkline, stored_number
from csro_tui.sessions.events import ID_RULE, is_valid_id
from csro_tui.sessions.plot import line_chart_svg
from csro_tui.sessions.state import SessionState, best_metric
from csro_tui.sessions.summary import game_records, headline_series, iteration_rows, member_rows

PLOT_FILE = "run.svg"


def _number(value: float | None) -> str:
    return format_number(value)


def policy_filename(policy_id: str, name: str) -> str:
    """`<id>_<name>.py`: the id as checked when the log was read (refused otherwise), the name slugged."""
    if not is_valid_id(policy_id):
        raise SessionError(f"member id {quoted(policy_id)} is not an id ({ID_RULE}): not exported")
    return f"{policy_id}_{file_name(name)}.py"


def policy_header(state: SessionState, policy_id: str) -> str:
    """The comment block put above an exported policy's code (recorded text on one line each:
    a newline in it would end the comment and start code)."""
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    row = next(r for r in member_rows(state) if r.id == policy_id)
    started = state.started
    lines = [
        f"# csro-tui policy {row.id}: {one_line(row.name)}",
        f"# session: {one_line(started.session_id) if started else '?'} ({one_line(started.game) if started else '?'})",
        f"# origin: {one_line(row.origin_text)}; iteration {row.iteration}; parent: {one_line(row.parent or 'none')}",
        *([f"# seat: {row.seat} (a member of seat {row.seat}'s population; it plays only that seat)"]
          if row.seat is not None else []),
        f"# meta-strategy weight: {row.weight:.4f}" + (f" (in seat {row.seat}'s meta-strategy)" if row.seat is not None else ""),
        f"# expected payoff against the meta-strategy: {_number(row.payoff_vs_meta)}",
    ]
    if row.agg_score is not None:
        lines.append(f"# benchmark AggScore: {_number(row.agg_score)}")
    proposal_id = state.policy_proposal.get(policy_id)
    if proposal_id is not None:
        proposal = state.proposals[proposal_id]
        decision = proposal.decision
        who = one_line(decision.decided_by) if decision else "?"
        edited = f"; edited by {one_line(proposal.edited_by)}" if proposal.edited_by else ""
        lines.append(f"# accepted by {who} (proposal {proposal_id}{edited})")
    return "\n".join(lines) + "\n\n"


def _matrix_axes(state: SessionState) -> tuple[list[str], list[str], object]:
    """(row ids, column ids, matrix): every member both ways, or with two populations
    seat 0's members by seat 1's (the seat-0 member's return)."""
    if state.metagame.populations == 2:
        return [m.id for m in state.seat_members(0)], [m.id for m in state.seat_members(1)], state.seat_matrix()
    return state.ids, state.ids, state.matrix(state.ids)


def write_payoffs_csv(state: SessionState, path: Path) -> None:
    rows, cols, matrix = _matrix_axes(state)
    corner = "seat 0 \\ seat 1" if state.metagame.populations == 2 else "row \\ col"
    write_csv(path, [[corner, *cols], *([policy_id, *("" if value != value else stored_number(value) for value in values)]
                                        for policy_id, values in zip(rows, matrix))])


def report_markdown(state: SessionState) -> str:
    started = state.started
    if started is None:
        raise SessionError("the session has no session_started event")
    out: list[str] = [f"# CSRO session {_md(started.session_id)}", ""]
    closed = state.closed
    out += [
        f"- game: {_code(started.game)}, oracle: {_code(started.oracle)}, meta-solver: {_code(started.solver)}",
        f"- started {_md(started.ts)}; {iterations_text(state)}; population {len(state.population)}",
        "- status: " + (_md(closed.reason + (' — ' + closed.message if closed.message else '')) if closed
                        else "not closed (stopped or crashed; resumable)"),
    ]
    best = best_metric(state.metrics)
    if best is not None:
        out.append(f"- best {_md(best[0])}: {_number(best[1])}")
    rows = iteration_rows(state)
    name, values = headline_series(rows)
    known = [v for v in values if v is not None]
    if known:
        out += ["", f"![{name} per iteration]({PLOT_FILE})", "",
                f"{name} per iteration: `{sparkline(values)}` ({_number(known[0])} → {_number(known[-1])})"]
    out += ["", "## Configuration", "", "| setting | value |", "| --- | --- |"]
    out += [f"| {_md(key)} | {setting_text(key, value, started.game, started.ts)} |" for key, value in state.config.items()]
    out += ["", "Versions: " + ", ".join(f"{_md(k)} {_md(v)}" for k, v in started.versions.items()), ""]

    out += ["## Iterations", "", "Gain: the new policy's expected payoff against the meta-strategy it answered.", "",
            "| iteration | proposal | decision | population | gain | meta-NashConv | metric | why rejected (event) |",
            "| ---: | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for row in rows:
        metric = row.headline_text or "-"
        why = f"{_cell(row.reason)} ({row.reason_event})" if row.reason else ""
        out.append(f"| {row.iteration} | {_cell(row.proposal or '-')} | {_md(row.decision or '-')} | {row.population_size} "
                   f"| {format_number(row.gain, signed=True)} | {_number(row.meta_nash_conv)} | {metric} | {why} |")

    members = member_rows(state)
    two = state.metagame.populations == 2
    with_agg = any(row.agg_score is not None for row in members)  # games without benchmark bots have none
    if two:
        out += ["", "## Populations", "", "One population per seat; a member's weight is in its seat's meta-strategy, "
                "and vs meta is its payoff against the other seat's.", "",
                "| id | name | seat | origin | parent | iteration | weight | vs meta |" + (" AggScore |" if with_agg else ""),
                "| --- | --- | ---: | --- | --- | ---: | ---: | ---: |" + (" ---: |" if with_agg else "")]
    else:
        out += ["", "## Population", "", "| id | name | origin | parent | iteration | weight | vs meta |"
                + (" AggScore |" if with_agg else ""),
                "| --- | --- | --- | --- | ---: | ---: | ---: |" + (" ---: |" if with_agg else "")]
    for row in members:
        seat = f" {row.seat} |" if two else ""
        out.append(f"| {_md(row.id)} | {_md(row.name)} |{seat} {_md(row.origin_text)} | {_md(row.parent or '-')} | {row.iteration} "
                   f"| {row.weight:.4f} | {_number(row.payoff_vs_meta)} |"
                   + (f" {_number(row.agg_score)} |" if with_agg else ""))

    rows_ids, ids, matrix = _matrix_axes(state)
    about = ("Seat-0 member's (row) mean payoff against the seat-1 member (column), seats fixed."
             if two else "Row policy's mean payoff against the column policy (seats averaged).")
    out += ["", "## Payoff matrix", "", about, "",
            "| | " + " | ".join(_md(i) for i in ids) + " |", "| --- |" + " ---: |" * len(ids)]
    for policy_id, values in zip(rows_ids, matrix):
        out.append(f"| **{_md(policy_id)}** | " + " | ".join(_number(None if v != v else float(v)) for v in values) + " |")

    out += ["", "## Decisions", ""]
    for proposal in state.proposals.values():
        decision = proposal.decision
        verdict = "undecided" if decision is None else _md(decision.action)
        reason = f": {_md(decision.reason)}" if decision is not None and decision.reason else ""
        note = f" ({_md(decision.note)})" if decision is not None and decision.note else ""
        by = f" by {_md(decision.decided_by)}" if decision is not None else ""
        edit = f", edit of {_md(proposal.edited_from)}" if proposal.edited_from else ""
        if proposal.proposal.seat is not None:
            edit += f", for seat {_md(proposal.proposal.seat)}"
        out.append(f"- {_code(proposal.id)} {_md(proposal.proposal.name)} (iteration {proposal.iteration}{edit}): "
                   f"**{verdict}**{by}{reason}{note}")
    if state.games:
        out += ["", "## Games played by hand", "", "The person's record against each opponent.", "",
                "| opponent | games | won | lost | tied | total |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        out += [f"| {_md(r.opponent)} | {r.games} | {r.wins} | {r.losses} | {r.ties} | {_number(r.total)} |"
                for r in game_records(state)]
        out += ["", "| # | opponent | seat | your result | seed |", "| ---: | --- | ---: | ---: | ---: |"]
        for number, game in enumerate(state.games, start=1):
            mine = game.returns[game.seat] if 0 <= game.seat < len(game.returns) else None
            out.append(f"| {number} | {_md(game.opponent)} | {game.seat} | {_number(mine)} | {game.seed if game.seed is not None else '-'} |")
    return "\n".join(out) + "\n"


def iterations_text(state: SessionState) -> str:
    """How many oracle iterations ran, counted as the tables number them (row 0 is the seed population)."""
    done = state.completed_iterations
    if done == 0:
        return "no iterations after the seed population (row 0)"
    return f"{counted(done, 'iteration')} after the seed population (rows 0–{done})"


# Until this day an unset preview_episodes reused the smoke run's matches (one
# seat-swapped pair); a session recorded before it says so in its report.
PREVIEW_DEFAULT_SINCE = "2026-12-03"

# What a setting left unset (None or empty) means, as `csro run --help` says.
_UNSET_SETTINGS = {
    "smoke_episodes": "2 (default)",
    "preview_episodes": "10 in sampled games (default; exact games preview exactly)",
    "workers": "CPU count (default)",
    "seed_policies": "the game's first (default)",
}


def setting_text(key: str, value, game: str, started: str = "") -> str:
    """A configuration value for the report: what an unset one meant, never a bare `None`.

    `started` is the session's first timestamp (ISO), for defaults that changed since.
    """
    if value is None or value == [] or value == "" or value == {}:
        if key == "preview_episodes" and started and started < PREVIEW_DEFAULT_SINCE:
            return "the smoke run's matches (the default when this session was recorded)"
        if key == "episodes":
            try:
                from csro_tui.games.registry import get_game  # start-up time: importing it loads open_spiel, pyspiel

                spec = get_game(game)
                return "exact (computed, no episodes)" if spec.exact else f"{spec.default_episodes} (the game's default)"
            except Exception:  # noqa: BLE001 - an unknown game still gets a report
                return "the game's default"
        if key in _UNSET_SETTINGS:
            return _UNSET_SETTINGS[key]

        # a sandbox limit (a RunConfig field named as the SandboxLimits field it sets, the
        # config's SANDBOX_LIMIT_FIELDS): the sandbox's default at the time of the export
        from csro_tui.sandbox.sandbox import SandboxLimits  # start-up time: importing it loads orjson, rich

        if key in {f.name for f in dataclasses.fields(SandboxLimits)}:
            return f"{getattr(SandboxLimits(), key):g} (default)"
        return "-"
    return _code(value)


def export_session(state: SessionState, out: Path) -> list[Path]:
    """Write the export into `out` (created if needed); the files written."""
    out = Path(out)
    try:
        (out / "policies").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SessionError(f"{out}: cannot create the export directory ({error.strerror})") from None
    # Every path first, so a refused one leaves nothing half written.
    modules = [(path_inside(out, "policies", policy_filename(member.id, member.name)), member)
               for member in state.population]
    payoffs, report, plot = (path_inside(out, name) for name in ("payoffs.csv", "report.md", PLOT_FILE))
    try:
        for path, member in modules:
            path.write_text(policy_header(state, member.id) + member.source, encoding="utf-8")
        write_payoffs_csv(state, payoffs)
        report.write_text(report_markdown(state), encoding="utf-8")
        drawn = write_plot(state, plot)
    except OSError as error:
        raise SessionError(f"{out}: cannot write the export ({error.strerror or error})") from None
    return [path for path, _ in modules] + [payoffs, report] + ([drawn] if drawn else [])


def write_plot(state: SessionState, path: Path) -> Path | None:
    """The headline figure per iteration as SVG (None when there is nothing to draw)."""
    rows = iteration_rows(state)
    name, values = headline_series(rows)
    if not any(v is not None for v in values):
        return None
    errors = [row.metric_stderr for row in rows] if name == "AggScore" else None
    started = state.started
    title = f"{name} per iteration · {started.game if started else ''} · {started.oracle if started else ''}"
    path.write_text(line_chart_svg(title, [row.iteration for row in rows], values, y_label=name, errors=errors),
                    encoding="utf-8")
    return path


def _cell(text: str) -> str:
    """Text fit for a Markdown table cell: one line of at most 200 characters, escaped."""
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    return _md(one_line(text, 200))
