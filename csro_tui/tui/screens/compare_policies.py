"""Compare policies (issue 22): one policy (a proposal under review, or a member)
against the members, nearest by behaviour first: the code diff, then where they
act differently (situations with both distributions, or probes with both results),
then the head-to-head payoff with its error.  And the population's diversity.

Profiles and matches run in thread workers (the sandbox runs the code), never
on the event loop; what they compute for a live run is recorded in its session.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from csro_tui.text import clean_text, one_line
from csro_tui.tui.adapt import seat_view, session_populations
from csro_tui.tui.behaviour import BehaviourContext, deliver, remembered_profile, seat_context
from csro_tui.tui.diffing import coloured_diff, unified_diff


def behaviour_text(subject: str, other: str, comparison, head_to_head: dict | None, description: list[str],
                   hints: list | None = None, summary: dict | str | None = None, seat: int | None = None) -> Text:
    """`summary`: the model's summary of the subject's code ({"model", "text"}), or a
    line saying where asking for it stands.  `seat` (two populations): both play that
    seat, so there is no head to head."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.profiles.report import comparison_lines
    from csro_tui.profiles.model import Profile

    text = Text()
    placeholder = Profile("", subject, "", "")
    against = Profile("", other, "", "")
    for line in comparison_lines(placeholder, against, comparison, head_to_head):
        style = "bold" if line.startswith(("behaviour distance", "they behave", "head to head")) else ""
        indent = " " * (len(line) - len(line.lstrip(" ")))  # one_line strips it; A: and B: sit under their situation
        line = line.replace("(--json lists them all)", "(csro diff --json lists them all)")
        text.append(indent + one_line(line, 300) + "\n", style=style)
    if seat is not None:  # two members of one seat's population never meet in the meta-game
        text.append(f"head to head: none (both play seat {seat})\n", style="dim")
    elif head_to_head is None:
        text.append("head to head: playing…\n", style="dim")
    text.append_text(subject_text(subject, description, hints, summary))
    return text


def subject_text(subject: str, description: list[str], hints: list | None = None,
                 summary: dict | str | None = None) -> Text:
    """What the subject does (words from its profile), the hints about its code and the
    model's summary, marked as model text."""
    text = Text()
    if description:
        text.append(f"\nWhat {one_line(subject, 40)} does\n", style="bold underline")
        for sentence in description:
            text.append("  " + one_line(sentence, 300) + "\n")
    if hints:
        text.append(f"\nHints about {one_line(subject, 40)}'s code (not reasons to reject)\n", style="bold underline")
        for hint in hints:
            text.append(f"  line {hint.line}: {one_line(hint.message, 300)}\n", style="yellow")
    if isinstance(summary, dict):
        text.append(f"\nModel summary (model text from {one_line(summary.get('model', '?'), 60)}, "
                    "not checked against the profile)\n", style="bold underline")
        for line in clean_text(str(summary.get("text", ""))).strip().splitlines():
            text.append("  " + one_line(line, 300) + "\n", style="italic")
    elif summary:
        text.append("\n" + one_line(summary, 300) + "\n", style="dim")
    return text


class ComparePoliciesScreen(Screen[None]):
    """`subject_id` with `source` against every member (itself left out), nearest first."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="compare.back"),
        Binding("m", "model_summary", "Model summary", id="compare.model_summary"),
    ]

    def __init__(self, context: BehaviourContext, subject_id: str, source: str, *, proposal: bool = False,
                 seat: int | None = None) -> None:
        super().__init__()
        self.context = context
        self.seat = seat  # two populations: the seat whose members it is compared with (the context's)
        self.subject_id = subject_id
        self.source = source
        self.proposal = proposal
        self.review = None  # profiles.session.ReviewBehaviour, once computed
        self.sources: dict[str, str] = {}
        self.matches: dict[str, dict] = {}
        self.selected: str | None = None
        # The model's summary of the subject's code: {"model", "text"} (recorded or just
        # asked), a line saying how asking stands, or None.
        self.summary: dict | str | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Compare {one_line(self.subject_id, 40)}: profiling the policies (sandboxed)…"),
                     id="compare-header")
        with Horizontal(id="compare-body"):
            yield OptionList(id="compare-members")
            with VerticalScroll(id="compare-detail"):
                yield Static("", id="compare-behaviour")
                yield Static("", id="compare-code")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#compare-members", OptionList).styles.width = 30
        self.run_worker(self._profile, thread=True, exclusive=True, group="compare")

    def _profile(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.profiles.session import review_behaviour

        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.profiles.session import recorded_summary

        state = self.context.state()
        self.sources = {member.id: member.source for member in state.population}
        self.summary = recorded_summary(state, self.subject_id, self.source)  # replayed without the model
        others_state = state
        if not self.proposal:
            # A member against the others: leave itself out of the ranking.
            import copy

            others_state = copy.copy(state)
            others_state.population = [m for m in state.population if m.id != self.subject_id]
        try:
            review = review_behaviour(self.context.spec, others_state, self.subject_id, self.source, seat=self.seat)
        except Exception as error:  # noqa: BLE001 - a failed profile is shown, never a crash
            deliver(self, self._failed, error)
            return
        self.context.record_all(review.events)
        deliver(self, self._show_ranking, review)

    def _failed(self, error: Exception) -> None:
        self.query_one("#compare-header", Static).update(
            Text(f"Could not profile: {one_line(str(error), 200)}", style="red"))

    def _show_ranking(self, review) -> None:
        self.review = review
        members = f"seat {self.seat}'s members" if self.seat is not None else "the members"
        header = Text(f"Compare {one_line(self.subject_id, 40)} with {members}, nearest by behaviour first")
        hint = review.hint()
        if hint:
            header.append("\n⚠ " + one_line(hint, 200), style="bold yellow")
        self.query_one("#compare-header", Static).update(header)
        options = self.query_one("#compare-members", OptionList)
        options.clear_options()
        for position, (member_id, comparison) in enumerate(review.ranked):
            noise = "" if comparison.stderr is None else f"±{comparison.stderr:.2f}"
            mark = " =" if comparison.same_within_noise else ""
            # Text, not a string: an option's string prompt would be read as markup.
            options.add_option(Option(Text(f"{one_line(member_id, 12):<12} {comparison.distance:.3f}{noise}{mark}"),
                                      id=f"member-{position}"))  # ids are identifiers; member ids need not be
        if review.ranked:
            options.highlighted = 0
            self._select(review.ranked[0][0])
        else:
            self._render_detail()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if self.review is not None and event.option.id and event.option.id.startswith("member-"):
            self._select(self.review.ranked[int(event.option.id.removeprefix("member-"))][0])

    def _select(self, member_id: str) -> None:
        self.selected = member_id
        self._render_detail()
        if member_id not in self.matches and self.seat is None:
            self.run_worker(lambda: self._play(member_id), thread=True, group=f"match-{member_id}")

    def _play(self, member_id: str) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.profiles.compute import head_to_head
        from csro_tui.evaluation.participants import CodePolicy
        from csro_tui.profiles.session import session_profile_seed

        state = self.context.state()
        try:
            match = head_to_head(self.context.spec, CodePolicy(self.subject_id, self.source),
                                 CodePolicy(member_id, self.sources.get(member_id, "")), session_profile_seed(state))
        except Exception as error:  # noqa: BLE001 - shown as the match's failure
            match = {"mean": 0.0, "stderr": None, "failure": str(error)}
        deliver(self, self._played, member_id, match)

    def action_model_summary(self) -> None:
        """Ask the configured LLM for a summary of the subject's code (a worker), recorded in
        a live session beside its profile; a recorded one is shown without asking again."""
        if isinstance(self.summary, dict):
            self.notify("The model's summary is shown below the profile (recorded in the session).")
            return
        if self.review is None:
            self.notify("Wait for the profile first.", severity="warning")
            return
        self.summary = "Model summary: asking the configured LLM…"
        self._render_detail()
        self.run_worker(self._ask_model, thread=True, exclusive=True, group="model-summary")

    def _ask_model(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.profiles.session import summary_event
        from csro_tui.profiles.summary import model_summary

        state = self.context.state()
        started = state.started
        try:
            summary = model_summary(self.context.spec, self.source, model=getattr(started, "model", "") or None,
                                    base_url=getattr(started, "base_url", "") or None)
        except Exception as error:  # noqa: BLE001 - no model, a refusal, a network error: one line
            deliver(self, self._summarised, f"Model summary: not available: {one_line(str(error), 200)}")
            return
        if self.context.record is not None:
            self.context.record_all([summary_event(state, self.subject_id, self.source, self.review.profile, summary)])
        else:
            deliver(self, self.notify, "Shown, not recorded: this session is not running here.")
        deliver(self, self._summarised, summary)

    def _summarised(self, summary: dict | str) -> None:
        self.summary = summary
        self._render_detail()
        # The detail shows it under the profile and the code, out of sight on a small
        # terminal: `m` must visibly answer (no model configured is one line).
        if isinstance(summary, dict):
            self.notify("The model's summary is shown below the profile.")
        else:
            self.notify(summary, severity="warning")

    def _played(self, member_id: str, match: dict) -> None:
        self.matches[member_id] = match
        if member_id == self.selected:
            self._render_detail()

    def _render_detail(self) -> None:
        member_id = self.selected
        if self.review is None:
            return
        if member_id is None:
            alone = Text("No other member to compare with.\n", style="dim")
            alone.append_text(subject_text(self.subject_id, self.review.description, self.review.hints, self.summary))
            self.query_one("#compare-behaviour", Static).update(alone)
            return
        comparison = dict(self.review.ranked)[member_id]
        self.query_one("#compare-behaviour", Static).update(
            behaviour_text(self.subject_id, member_id, comparison, self.matches.get(member_id), self.review.description,
                           self.review.hints, self.summary, self.seat))
        lines = unified_diff(clean_text(self.sources.get(member_id, "")), clean_text(self.source), member_id,
                             self.subject_id)
        code = Text(f"\nCode: {one_line(member_id, 30)} → {one_line(self.subject_id, 30)}\n", style="bold underline")
        code.append_text(coloured_diff(lines) if lines else Text("The same code.", style="dim"))
        self.query_one("#compare-code", Static).update(code)


class DiversityScreen(Screen[None]):
    """The population's behaviour distances (heat map ordered so clusters show), its
    clusters of near-identical members and the effective number of distinct strategies;
    arrows move a cursor cell whose members (with names) and distance are shown above the map."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="diversity.back"),
        Binding("up", "move(-1, 0)", "Up", id="diversity.up", show=False, priority=True),
        Binding("down", "move(1, 0)", "Down", id="diversity.down", show=False, priority=True),
        Binding("left", "move(0, -1)", "Left", id="diversity.left", show=False, priority=True),
        Binding("right", "move(0, 1)", "Right", id="diversity.right", show=False, priority=True),
        Binding("tab", "other_seat", "Other seat", id="diversity.seat", show=False),
    ]

    def __init__(self, context: BehaviourContext) -> None:
        super().__init__()
        self.context = context
        self.diversity: Any = None  # one population's Diversity, or [(seat, Diversity)] for two
        self.names: dict[str, str] = {}  # member id -> name
        self.cursor = (0, 0)  # (row, column) in the shown map's order
        self.seat_shown = 0  # two populations: the map the cursor is in

    def compose(self) -> ComposeResult:
        yield Static(Text("Behaviour diversity: profiling the members (sandboxed)…"), id="diversity-header")
        yield Static("", id="diversity-cursor")
        with VerticalScroll(id="diversity-scroll"):
            yield Static("", id="diversity-map")
        yield Footer()

    def on_mount(self) -> None:
        self._progress = ""  # the worker's count, shown by a timer (a blocking hand-over per member cost seconds)
        self._ticker = self.set_interval(0.25, self._show_progress)
        self.run_worker(self._compute, thread=True, exclusive=True, group="diversity")

    def _show_progress(self) -> None:
        if self.diversity is not None:
            self._ticker.stop()
        elif self._progress:
            self.query_one("#diversity-header", Static).update(Text(self._progress))

    def _compute(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.profiles.session import population_diversity

        try:
            state = self.context.state()
        except Exception as error:  # noqa: BLE001 - a log the fold rejects
            self._failed(error)
            return
        members, done = len(state.population), [0]
        record = self.context.record is not None  # a viewed session records nothing: no events to build

        def cancelled() -> bool:  # asked once before each member is profiled: the progress
            done[0] += 1
            self._progress = (f"Behaviour diversity: profiling the members (sandboxed, recorded ones reused) "
                              f"{min(done[0], members)}/{members}…")
            return not self.is_attached

        try:
            if session_populations(state) == 2:  # each seat's population on its own (issue 23)
                diversity: Any = [
                    (seat, population_diversity(self.context.spec, seat_view(state, seat), cancelled=cancelled, seat=seat,
                                                profile=remembered_profile, record=record))
                    for seat in (0, 1)
                ]
                events = [event for _, each in diversity for event in each.events]
            else:
                diversity = population_diversity(self.context.spec, state, cancelled=cancelled, profile=remembered_profile,
                                                 record=record)
                events = diversity.events
        except Exception as error:  # noqa: BLE001
            self._failed(error)
            return
        self.context.record_all(events)
        names = {m.id: m.name for m in state.population}
        deliver(self, self._computed, diversity, names)

    def _failed(self, error: Exception) -> None:
        self._progress = ""
        deliver(self, self.query_one("#diversity-header", Static).update,
                Text(f"Could not profile: {one_line(str(error), 200)}", style="red"))

    def _computed(self, diversity, names: dict[str, str]) -> None:
        self.names = names
        self._show(diversity)

    def _maps(self) -> list[tuple[int | None, Any]]:
        return self.diversity if isinstance(self.diversity, list) else [(None, self.diversity)]

    def _show(self, diversity) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.widgets.behaviour_heatmap import cursor_line, heat_map_text

        self.diversity = diversity
        self.query_one("#diversity-header", Static).update(Text(
            "Behaviour distance between members (0: the same behaviour), ordered so clusters show"
            " · arrows: cursor" + (" · tab: other seat" if isinstance(diversity, list) else ""), style="bold"))
        maps = self._maps()
        text = Text()
        for index, (seat, each) in enumerate(maps):
            if seat is not None:
                text.append(f"{'' if seat == 0 else chr(10)}Seat {seat}'s population\n", style="bold underline")
            text.append_text(heat_map_text(each, self.app.size.width, self.cursor if index == self.seat_shown else None,
                                           self.names))
        self.query_one("#diversity-map", Static).update(text)
        shown = maps[self.seat_shown][1]
        line = cursor_line(shown, self.cursor, self.names) if len(shown.ids) >= 2 else ""
        self.query_one("#diversity-cursor", Static).update(Text(line, style="bold"))

    def action_move(self, rows: int, columns: int) -> None:
        if self.diversity is None:
            return
        count = len(self._maps()[self.seat_shown][1].ids)
        if count < 2:
            return
        row, column = self.cursor
        self.cursor = (min(max(row + rows, 0), count - 1), min(max(column + columns, 0), count - 1))
        self._show(self.diversity)
        # the cursor's row in view: below the column ids (at most 5 lines) and any seat heading
        self.query_one("#diversity-scroll", VerticalScroll).scroll_to(y=max(self.cursor[0] - 3, 0), animate=False)

    def action_other_seat(self) -> None:
        if isinstance(self.diversity, list):
            self.seat_shown, self.cursor = 1 - self.seat_shown, (0, 0)
            self._show(self.diversity)

    def on_resize(self) -> None:
        if self.diversity is not None:
            self._show(self.diversity)


class ReviewBehaviourLine(Static):
    """The review's "what is new": the proposal's nearest member by behaviour, the
    distance, where they differ most and a "behaves like member X" hint (a hint only:
    the auto reviewer's rule is unchanged).  Computed in a worker; `d` opens the comparison."""

    def __init__(self, context: BehaviourContext, proposal_id: str, source: str, seat: int | None = None) -> None:
        super().__init__(Text("behaviour: profiling (sandboxed)…  d compares with the members", style="dim"),
                         id="review-behaviour")
        self.context = context
        self.seat = seat  # two populations: the proposal's seat (the context holds its members)
        self.proposal_id = proposal_id
        self.source = source

    def on_mount(self) -> None:
        self.run_worker(self._profile, thread=True, exclusive=True, group="review-behaviour")

    def _profile(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.profiles.session import review_behaviour

        try:
            state = self.context.state()
            review = review_behaviour(self.context.spec, state, self.proposal_id, self.source, seat=self.seat)
        except Exception as error:  # noqa: BLE001 - shown, never a crash
            deliver(self, self.update, Text(f"behaviour: not profiled: {one_line(str(error), 160)}", style="red"))
            return
        self.context.record_all(review.events)
        deliver(self, self.update, review_line(review, {m.id: m.name for m in state.population}))


def review_line(review, names: dict[str, str] | None = None) -> Text:
    """`names`: member id -> name, shown beside the ids."""
    text = Text()
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.profiles.describe import describe_frequencies

    profile = getattr(review, "profile", None)
    throws = describe_frequencies(profile) if profile is not None else []  # RRPS: what it throws, with its noise, first
    if throws:
        text.append("behaviour: " + one_line(throws[0], 200) + "\n")
    if not review.ranked:
        text.append("behaviour: " + one_line("; ".join(review.description[:2]), 200))
        return text
    member_id, comparison = review.ranked[0]
    noise = "" if comparison.stderr is None else f" ± {comparison.stderr:.3f}"
    name = (names or {}).get(member_id)
    member = f"{one_line(name, 30)} ({one_line(member_id, 20)})" if name and name != member_id else one_line(member_id, 20)
    text.append(f"behaviour: nearest member {member} at distance {comparison.distance:.3f}{noise}")
    if review.distance_under_meta is not None:
        text.append(f" (under the meta-strategy: {review.distance_under_meta:.3f})")
    if comparison.differences:
        text.append("; differs most: " + "; ".join(one_line(d["situation"], 60) for d in comparison.differences[:3]))
    hint = review.hint()
    if hint:
        text.append("\n⚠ " + one_line(hint, 200), style="bold yellow")
    for hint_line in review.hints[:3]:
        text.append(f"\nhint: line {hint_line.line}: {one_line(hint_line.message, 160)}", style="dim")
    text.append("   (d: compare)", style="dim")
    return text


def context_for(app, session_id: str = "", events: list | None = None, *,
                fold_later: bool = False) -> BehaviourContext | None:
    """The live run's context when it is that session; else the recorded events' (`events`,
    or the session's log), which computes but records nothing; `fold_later` as in `events_context`."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.tui.behaviour import events_context, live_context

    live = getattr(app, "live", None)
    if live is not None and (not session_id or getattr(live, "session_id", None) == session_id) and events is None:
        return live_context(app)
    try:
        if events is None:
            backend = getattr(app, "backend", None)
            if backend is None or not session_id:
                return None
            events = backend.read_events(session_id)
        return events_context(events, fold_later=fold_later) if events else None
    except Exception:  # noqa: BLE001 - an unreadable log: the caller says so
        return None


def compare_member(app, data, member_id: str, events: list | None = None) -> None:
    """Open the comparison of a member with the other members of its session."""
    context = context_for(app, getattr(data, "session_id", ""), events)
    member = data.member(member_id)
    if context is None or member is None:
        app.notify("Comparing policies needs a session (live or recorded).", severity="warning")
        return
    # two populations: against the members of its own seat (no meta-strategy distance: see seat_view)
    context = seat_context(context, member.seat, keep_meta=False)
    app.push_screen(ComparePoliciesScreen(context, member_id, member.source, seat=member.seat))


def show_diversity(app, session_id: str = "", events: list | None = None) -> None:
    context = context_for(app, session_id, events, fold_later=True)  # DiversityScreen folds in its worker
    if context is None:
        app.notify("The diversity view needs a session (live or recorded).", severity="warning")
        return
    app.push_screen(DiversityScreen(context))
