"""The review gate: every proposal is shown here before it can join the population."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from csro_tui.files import file_name, path_inside
from csro_tui.numbers import counted, duration, number
from csro_tui.text import clean_text, one_line, plain
from csro_tui.tui.adapt import call_tokens, with_preview
from csro_tui.tui.diffing import coloured_diff, unified_diff
from csro_tui.tui.model import ReviewDecision, ReviewInfo
from csro_tui.tui.screens.editor import EditorScreen
from csro_tui.tui.screens.reject import RejectReasonScreen


def summary_text(info: ReviewInfo, hint: str = "(keys 1-5 switch tabs)", diff_key: str = "2",
                 compact: bool = False) -> Text:
    """The header over a proposal's tabs; `diff_key` is the key of the Diff tab on that screen.

    `compact` (a small terminal): shorter wording and one row per fact, each cut at the
    screen's edge rather than wrapped, so the code below keeps most of the rows."""
    text = Text()
    text.append(one_line(info.name), style="bold")
    if info.seat is not None:  # two populations: it joins that seat's population if accepted
        text.append(f"  for seat {info.seat}", style="bold cyan")
    if compact:
        text.append(f"  {one_line(info.oracle)} · it {info.iteration} · try {info.attempt}")
        text.append(f"/{info.max_attempts}" if info.max_attempts else "")
        if info.proposal_id:
            text.append(f" · {one_line(info.proposal_id)}")
        if info.parent:
            text.append(f" · parent {member_label(info, info.parent)}")
    else:
        text.append(f"  by {one_line(info.oracle)}  iteration {info.iteration}  attempt {info.attempt}")
        if info.max_attempts:
            text.append(f" of {info.max_attempts}")
        if info.proposal_id:
            text.append(f"  proposal {one_line(info.proposal_id)}")
        if info.parent:
            text.append(f"  parent {member_label(info, info.parent)}")
        text.append(f"   {hint}", style="dim")
    text.append("\n")
    if info.history:
        original = info.history[0]
        text.append(f"✎ edited by {one_line(info.edited_by or 'a reviewer')}", style="bold magenta")
        text.append(f" from the oracle's proposal {one_line(original[0])}")
        if len(info.history) > 1:
            text.append(f" ({len(info.history)} edits)")
        text.append(f"; Diff ({diff_key}) shows oracle → edited\n")
    if info.oracle_failure:
        text.append_text(failed_proposal_note(info))
    if info.duplicate_of:
        text.append(f"⚠ duplicate of {member_label(info, info.duplicate_of)}", style="bold yellow")
        if info.duplicate_reason:
            text.append(f": {one_line(info.duplicate_reason)}", style="yellow")
        text.append("\n")
    failure = one_line(info.failure) if info.failure else ""
    if info.valid:
        text.append("✔ valid", style="bold green")
        if failure:
            text.append(f"  {failure}", style="red")
    else:  # "invalid" once: the validation's own summary starts with it
        text.append("✘ ", style="bold red")
        if not failure.startswith("invalid"):
            text.append("invalid", style="bold red")
            failure = f": {failure}" if failure else ""
        text.append(failure, style="red")
    if info.expected_payoff is not None:
        if compact:
            text.append(f"  vs {opponents_word(info)}meta {info.expected_payoff:+.4f}")
        else:
            text.append(f"  measured for this code: expected payoff vs {opponents_word(info)}meta-strategy "
                        f"{info.expected_payoff:+.4f}")
        if info.expected_stderr:
            text.append(f" ± {info.expected_stderr:.4f}")
        elif info.expected_stderr is not None:  # sampled, but too briefly for a standard error
            text.append(" (noise not measured: too few episodes)", style="dim")
        if info.seat_value is not None:  # the gate's bar with two populations, not 0
            text.append(f" (to beat: seat {info.seat}'s value {number(info.seat_value, 4, signed=True)})", style="dim")
        before = info.history[-1][3] if info.history else None
        if before is not None:
            text.append(f" (before the edit {number(before, signed=True)})", style="dim")
    if info.measuring:  # a progressive review: the figures are the first estimates so far
        text.append("\n⏳ " + one_line(info.measuring), style="cyan")
        text.append("; a decision now is recorded once it ends", style="dim")
    if info.valid and info.shortfall:
        would = "would reject it so far" if info.measuring else "would reject it"
        text.append(f"\n⚠ the auto reviewer {would}: {one_line(info.shortfall)}", style="yellow")
    if info.loosened_limits:
        text.append(f"\n⚠ {one_line(info.loosened_limits)}", style="yellow")
    if info.population_metrics:
        named = {METRIC_NAMES.get(key, key): value for key, value in info.population_metrics.items()}
        ordered = [name for name in METRIC_ORDER if name in named] + sorted(set(named) - set(METRIC_ORDER))
        text.append("\nvs the benchmark bots: " + "  ".join(f"{name} {number(named[name], signed=True)}" for name in ordered))
    if compact:
        text.no_wrap, text.overflow = True, "ellipsis"
    return text


def failed_proposal_note(info: ReviewInfo) -> Text:
    """The header's line for the oracle's last failed code (it found nothing that works)."""
    text = Text()
    text.append("✘ the oracle's code failed", style="bold red")
    # the reason once: the validation's line below says it when the gate saw the same failure
    reason = "" if info.oracle_failure.strip() in (info.failure or "") else f" ({one_line(info.oracle_failure)})"
    text.append(f"{reason}; nothing else was usable. ", style="red")
    text.append("e edits it (checked and previewed again), r rejects it\n", style="bold")
    return text


def member_label(info: ReviewInfo, member_id: str) -> str:
    """A member's name beside its id ("beat_last (p1)"), the id alone when the name is not known."""
    name = info.member_names.get(member_id)
    member_id = one_line(member_id)
    return f"{one_line(name)} ({member_id})" if name and name != member_id else member_id


def opponents_word(info: ReviewInfo) -> str:
    """Whose meta-strategy a proposal is measured against: the other seat's (two populations)."""
    return f"seat {1 - info.seat}'s " if info.seat is not None else ""


# the names the dashboard, the CLI and the README use for the preview's population metrics
METRIC_NAMES = {"agg_score": "AggScore", "pop_expl": "PopExpl", "pop_return": "PopReturn"}
METRIC_ORDER = ["AggScore", "PopReturn", "PopExpl"]


def edit_note(info: ReviewInfo) -> Text:
    """Above edited code: figures written in its text are not measurements of it."""
    return Text(
        "Edited code: any figure written in its text (docstring, comments) is the oracle's claim about "
        "its original, not a measurement of this code; the measured figures are in the header.",
        style="italic magenta",
    )


def regenerate_cost(info: ReviewInfo) -> str:
    """What `g` costs, said before it costs it."""
    llm = ""
    if info.llm_calls:  # the best guess of what asking again costs: what this proposal cost

        seconds = sum(float(call.get("latency_s") or 0) for call in info.llm_calls)
        took = counted(len(info.llm_calls), "LLM call") + (f", {duration(seconds)}" if seconds >= 1 else "")
        llm = f" (this proposal took {took}; the next may take as many)"
    if info.max_attempts and info.attempt >= info.max_attempts:
        return (f"Regenerate rejects this proposal; it is attempt {info.attempt} of {info.max_attempts}, "
                f"so iteration {info.iteration} then ends with nothing accepted. g again to confirm.")
    left = f"attempt {info.attempt + 1} of {info.max_attempts}" if info.max_attempts else "another attempt"
    return f"Regenerate rejects this proposal and asks the oracle again{llm}: uses {left}. g again to confirm."


def checks_text(info: ReviewInfo) -> Text:
    text = Text()
    text.append("Validation and smoke run\n", style="bold underline")
    if info.validation:
        for line in info.validation:
            line = clean_text(line)
            ok = line.startswith(("ok", "✔"))
            warning = line.startswith("warning")  # e.g. a slow act (the clock's timing)
            text.append(f"  {line}\n", style="green" if ok else "yellow" if warning else "red" if not info.valid else "")
    else:
        text.append("  no issues\n" if info.valid else "  (no details)\n")
    hints = code_hints(info.source)
    if hints:
        text.append("\nHints about the code (not reasons to reject)\n", style="bold underline")
        for hint in hints:
            text.append(f"  line {hint.line}: {one_line(hint.message)}\n", style="yellow")
    members = f"seat {1 - info.seat} member (its opponents)" if info.seat is not None else "member"
    text.append(f"\nPreview against each {members}\n", style="bold underline")
    if info.per_member:
        for member_id, value in info.per_member.items():
            style = "green" if value > 0 else "red" if value < 0 else ""
            noise = info.member_stderr.get(member_id)
            noise_text = f" ± {noise:.4f}" if noise else ""
            text.append(f"  vs {one_line(member_id):<5} {one_line(info.member_names.get(member_id, ''), 24):<24} "
                        f"{value:+.4f}{noise_text}\n", style=style)
        if info.measuring:
            text.append(f"  ({one_line(info.measuring)})\n", style="cyan")
    else:
        text.append("  no preview\n", style="dim")
    return text


def code_hints(source: str) -> list:
    """Static hints (csro_tui/profiles/hints.py): methods the referee never calls, state never
    read, randomness not from game["seed"]; read from the code, nothing runs."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.profiles.hints import static_hints

    return static_hints(source)


def exchange_text(info: ReviewInfo) -> Text:
    """Every LLM call of the proposal: its reply first (what a person reviews), then the
    prompt, where a message sent in an earlier call is named, not repeated (a refinement
    chain resends the same ~2,000-token system prompt with every call)."""
    if not info.llm_calls:
        return Text("This oracle made no LLM calls.", style="dim")
    text = Text()
    sent: dict[tuple[str, str], int] = {}  # (role, content) -> the call that first sent it
    for n, call in enumerate(info.llm_calls, 1):
        facts = [one_line(call[k]) for k in ("purpose", "model") if call.get(k)]
        tokens = call_tokens(call)
        if tokens:
            prompt, written = call.get("prompt_tokens"), call.get("completion_tokens")
            split = f" ({prompt:,} prompt + {written:,} reply)" if isinstance(prompt, int) and isinstance(written, int) else ""
            facts.append(f"{tokens:,} tokens{split}" + (" (estimated)" if call.get("usage_estimated") else ""))
        if call.get("latency_s"):
            facts.append(f"{call['latency_s']:.1f} s")
        if call.get("attempts", 1) and call.get("attempts", 1) > 1:
            facts.append(f"{call['attempts']} attempts")
        if call.get("cost_usd") is not None:
            facts.append(f"${call['cost_usd']:.4f}")
        text.append(f"── call {n} of {len(info.llm_calls)}", style="bold")
        if facts:
            text.append("  " + " · ".join(facts), style="dim")
        text.append("\n")
        reply = call.get("response", "")
        if not isinstance(reply, str):
            reply = json.dumps(reply, indent=1)
        text.append("[reply]\n", style="bold magenta")
        text.append(clean_text(reply).rstrip() + "\n\n")
        if call.get("error"):
            kind = one_line(call.get("error_kind") or "failed")
            text.append(f"error ({kind}): {clean_text(call['error'])}\n\n", style="red")
        for message in call.get("messages", []):
            role = message.get("role", "?") if isinstance(message, dict) else "?"
            content = message.get("content", "") if isinstance(message, dict) else str(message)
            if not isinstance(content, str):
                content = json.dumps(content, indent=1)
            role = one_line(role)
            first = sent.setdefault((role, content), n)
            if first != n:
                text.append(f"[{role}] ", style="bold cyan")
                text.append(f"the same as in call {first} ({len(content.splitlines())} lines)\n\n", style="dim")
                continue
            text.append(f"[{role}]\n", style="bold cyan")
            text.append(clean_text(content).rstrip() + "\n\n")
    return text


def diff_text(info: ReviewInfo) -> Text:
    """The person's edit (oracle's original -> this code) first, then parent -> proposal."""
    text = Text()
    name = one_line(info.name) or "proposal"
    if info.history:
        original_id, original_source = info.history[0][0], info.history[0][1]
        text.append(f"Edit by {one_line(info.edited_by or 'a reviewer')}: the oracle's original → this code\n",
                    style="bold magenta")
        lines = unified_diff(clean_text(original_source), clean_text(info.source),
                             f"oracle {one_line(original_id)}", f"edited {one_line(info.proposal_id) or name}")
        text.append_text(coloured_diff(lines) if lines else Text("No change.", style="dim"))
        text.append("\n\n")
    if info.parent_source is None:
        text.append("No parent member (the Rationale tab says what it was derived from, if anything).", style="dim")
        return text
    text.append(f"Parent {one_line(info.parent or 'parent')} → this proposal\n", style="bold")
    lines = unified_diff(clean_text(info.parent_source), clean_text(info.source), one_line(info.parent or "parent"), name)
    text.append_text(coloured_diff(lines) if lines else Text("Identical to its parent.", style="dim"))
    return text


def behaviour_line(app, info: ReviewInfo):
    """The proposal's nearest member by behaviour (issue 22), when a live session can profile it."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.tui.behaviour import live_context, seat_context

    context = live_context(app) if info.valid else None
    if context is not None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.screens.compare_policies import ReviewBehaviourLine

        # two populations: nearest among its own seat's members (issue 23)
        yield ReviewBehaviourLine(seat_context(context, info.seat, keep_meta=False), info.proposal_id or "proposal", info.source,
                                  info.seat if info.seat in (0, 1) else None)


# Below this many rows or columns the header is compact (one row per fact, cut, not wrapped).
COMPACT_BELOW_ROWS = 32
COMPACT_BELOW_COLUMNS = 100
# How often the screen looks for newer figures of a preview still being measured.
ESTIMATE_POLL_SECONDS = 0.25


class ReviewScreen(Screen[ReviewDecision]):
    """Dismisses with the decision; the app hands it to the waiting engine."""

    BINDINGS = [
        Binding("a", "accept", "Accept", id="review.accept"),
        Binding("e", "edit", "Edit", id="review.edit"),
        Binding("E", "edit_external", "Edit in $EDITOR", id="review.edit_external", show=False),
        Binding("r", "reject", "Reject", id="review.reject"),
        Binding("g", "regenerate", "Regenerate", id="review.regenerate"),
        Binding("c", "app.cancel_work", "Stop the run", id="review.cancel"),
        Binding("escape", "app.hide_review", "Back (it waits)", id="review.back", tooltip="Back to the dashboard; n opens the review again"),
        Binding("1", "tab('tab-code')", "Code", id="review.tab_code", show=False),
        Binding("2", "tab('tab-diff')", "Diff", id="review.tab_diff", show=False),
        Binding("3", "tab('tab-rationale')", "Rationale", id="review.tab_rationale", show=False),
        Binding("4", "tab('tab-llm')", "LLM exchange", id="review.tab_llm", show=False),
        Binding("5", "tab('tab-checks')", "Checks", id="review.tab_checks", show=False),
        Binding("question_mark", "app.help", "Help", id="review.help"),
        Binding("d", "compare", "Compare", id="review.compare", show=False),
    ]

    def __init__(self, info: ReviewInfo) -> None:
        super().__init__()
        self.info = info
        self._regenerate_armed = False
        self._compact: bool | None = None  # the header's form for the screen's size, once known
        self._estimate_seen = -1  # the live preview's version shown

    def compose(self) -> ComposeResult:
        info = self.info
        yield Static(summary_text(info, compact=self._is_compact()), id="review-summary")
        yield from behaviour_line(self.app, info)
        with TabbedContent(id="review-tabs"):
            with TabPane("Code", id="tab-code"):
                with VerticalScroll():
                    if info.history:
                        yield Static(edit_note(info), id="review-edit-note")
                    yield Static(
                        Syntax(clean_text(info.source), "python", line_numbers=True, theme="monokai", word_wrap=False),
                        id="review-code",
                    )
            with TabPane("Diff", id="tab-diff"):
                with VerticalScroll():
                    yield Static(self._diff(), id="review-diff")
            with TabPane("Rationale", id="tab-rationale"):
                with VerticalScroll():
                    yield Static(plain(info.rationale) if info.rationale else Text("No rationale given.", style="dim"), id="review-rationale")
            with TabPane("LLM exchange", id="tab-llm"):
                with VerticalScroll():
                    yield Static(exchange_text(info), id="review-llm")
            with TabPane("Checks", id="tab-checks"):
                with VerticalScroll():
                    yield Static(checks_text(info), id="review-checks")
        yield Footer()

    def _diff(self) -> Text:
        return diff_text(self.info)

    # --- the header's size, the code's focus, the live preview -------------------------

    def _is_compact(self) -> bool:
        size = self.app.size
        return size.height < COMPACT_BELOW_ROWS or size.width < COMPACT_BELOW_COLUMNS

    def on_mount(self) -> None:
        self._show_summary()  # the header's form and the screen's `compact` class for its size
        # once laid out, the body of whichever tab is active then (the Code tab unless one was chosen)
        self.call_after_refresh(lambda: self._focus_tab_body(self.query_one(TabbedContent).active))
        if self.info.live_preview is not None:
            self._refresh_estimate()
            self.set_interval(ESTIMATE_POLL_SECONDS, self._refresh_estimate, name="review-estimate")

    def on_screen_resume(self) -> None:
        self._focus_tab_body(self.query_one(TabbedContent).active)  # back from esc, the editor, a comparison

    def on_resize(self) -> None:
        if self._is_compact() != self._compact:
            self._show_summary()

    def _show_summary(self) -> None:
        self._compact = self._is_compact()
        self.set_class(self._compact, "compact")
        self.query_one("#review-summary", Static).update(summary_text(self.info, compact=self._compact))

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # the body that had the keys is hidden now: the new tab's body takes them (the tab
        # bar keeps them when it had them, so its arrows go on switching tabs)
        if isinstance(self.focused, VerticalScroll) and event.pane.id:
            self._focus_tab_body(event.pane.id)

    def _focus_tab_body(self, tab: str) -> None:
        """The tab's scrolling body takes the keys, so arrows and PgUp/PgDn scroll the code at once."""
        for body in self.query(f"#{tab} VerticalScroll"):
            # at once, not deferred as `focus()` is: focus landing later in a pane that is no
            # longer active would make TabbedContent switch back to it
            self.set_focus(body)
            return

    def _refresh_estimate(self) -> None:
        """Poll the preview the engine is still measuring; redraw when it has news."""
        live = self.info.live_preview
        if live is None:
            return
        version, estimate = live.latest()
        if version == self._estimate_seen or estimate is None:
            return
        self._estimate_seen = version
        self.info = with_preview(self.info, estimate.preview, measuring=estimate.describe())
        if estimate.done:
            self.info.live_preview = None
        self._show_summary()
        self.query_one("#review-checks", Static).update(checks_text(self.info))

    def action_compare(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.behaviour import live_context, seat_context
        from csro_tui.tui.screens.compare_policies import ComparePoliciesScreen

        context = live_context(self.app)
        if context is None or not self.info.valid:
            self.notify("Comparing needs a valid proposal of a live session.", severity="warning")
            return
        self.app.push_screen(ComparePoliciesScreen(seat_context(context, self.info.seat, keep_meta=False),
                                                   self.info.proposal_id or "proposal", self.info.source, proposal=True,
                                                   seat=self.info.seat))

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._focus_tab_body(tab)

    def action_accept(self) -> None:
        if not self.info.valid:
            self.notify("This proposal failed validation: edit, reject or regenerate it.", severity="error")
            return
        self.dismiss(ReviewDecision("accept"))

    def action_reject(self) -> None:
        def done(reason: str | None) -> None:
            if reason:
                self.dismiss(ReviewDecision("reject", reason=reason))

        self.app.push_screen(RejectReasonScreen(self.info.oracle), done)

    def action_regenerate(self) -> None:
        """First g says what it costs; a second g does it."""
        if not self._regenerate_armed:
            self._regenerate_armed = True
            self.notify(regenerate_cost(self.info), severity="warning", timeout=8)
            return
        self.dismiss(ReviewDecision("regenerate"))

    def action_edit(self) -> None:
        def done(source: str | None) -> None:
            if source is not None:
                self.dismiss(ReviewDecision("edit", source=source))

        self.app.push_screen(EditorScreen(clean_text(self.info.source), one_line(self.info.name)), done)

    def action_edit_external(self) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.notify("Set $EDITOR (or $VISUAL) to edit in your own editor; `e` opens the built-in one.", severity="warning")
            return
        with tempfile.TemporaryDirectory() as folder:
            path = path_inside(folder, f"{file_name(self.info.name)}.py")  # the name is the oracle's: never a path
            path.write_text(self.info.source, encoding="utf-8")
            failure = run_external_editor(self.app, editor, path)
            if failure:
                self.notify(failure, severity="error", timeout=15)
                return
            source = path.read_text(encoding="utf-8")
        if source == self.info.source:
            self.notify("No change made in the editor.")
            return
        self.dismiss(ReviewDecision("edit", source=source))


def run_external_editor(app, editor: str, path: Path) -> str | None:
    """Run `editor path` with the app suspended; None, or one line saying why it did not run.

    Nothing may raise inside `app.suspend()`: Textual restores the terminal only when
    the block ends normally, so an editor that could not start left the screen blank
    and the app unable to exit."""
    how_to_fix = "set $VISUAL or $EDITOR to an editor that runs here, or press e for the built-in one"
    try:
        command = [*shlex.split(editor), str(path)]
    except ValueError as error:  # unbalanced quotes
        return f"Could not read $VISUAL/$EDITOR ({one_line(editor)}): {error}; {how_to_fix}."
    failure: BaseException | None = None
    status = 0
    try:
        with app.suspend():
            try:
                status = subprocess.run(command, check=False).returncode
            except (OSError, subprocess.SubprocessError) as error:
                failure = error
    except Exception as error:  # noqa: BLE001 - SuspendNotSupported (tests, textual-web)
        failure = error
    if failure is not None:
        reason = failure.strerror if isinstance(failure, OSError) and failure.strerror else failure
        return f"The editor could not run ({one_line(editor)}: {one_line(reason)}); {how_to_fix}."
    if status != 0:
        return f"The editor ({one_line(editor)}) exited with status {status}; the proposal is unchanged. To use another, {how_to_fix}."
    return None
