"""Help: the keys of the screen it is opened on first, then every other screen's, and the policy contract."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

from csro_tui.sandbox.contract import POLICY_CONTRACT

KEYS = """\
## Keys

Every key below is also in the command palette (`ctrl+p`) by name. `enter`
drills in and `esc` goes back on every screen; at the bottom is the start screen.

| Where | Key | Does |
| --- | --- | --- |
| everywhere | `?` `f1` | this help |
| everywhere | `ctrl+p` | command palette: every action of the screen, plus Start screen, Open / Close / Export session, Play |
| everywhere | `ctrl+c` | cancel the work in progress (oracle, evaluation); a text field keeps it for copying |
| everywhere | `ctrl+q` | quit (the live session is recorded closed; it says what it waits for) |
| start | `ctrl+n` | start the session in the form (also `enter` in a field) |
| start | `ctrl+o` | open the selected recorded session (also `enter` on its row) |
| start | `ctrl+l` | list the LLM server's models |
| dashboard | `n` | run the next iteration (or `N` for 5) |
| dashboard | `c` | cancel the work in progress |
| dashboard | `l` | the LLM call in flight, whole: its state, earlier replies' scores, the reply as it streams in |
| dashboard | `i` | inspect the selected policy (also `enter`) |
| dashboard | `p` | play against a population member or a bot |
| dashboard | `s` | recorded sessions and their timelines |
| dashboard | `d` | compare the selected policy with the other members, nearest by behaviour first (also `d` in the inspector) |
| dashboard | `b` | the population's behaviour diversity: distance heat map, clusters, effective number of strategies |
| dashboard | `esc` | close the session (resumable) and go back to the start screen; twice while work runs |
| review | `a` | accept the proposal |
| review | `e` | edit it in the built-in editor (`E`: in `$EDITOR`) |
| review | `r` | reject it, with a reason (recorded; LLM oracles get it in their next prompt) |
| review | `g` | regenerate: ask the oracle again |
| review | `1`…`5` | code, diff, rationale, LLM exchange, checks |
| review | `c` | stop the run (the proposal is not decided) |
| review | `d` | compare the proposal with the members, nearest by behaviour first: code diff, behaviour diff, head to head |
| review | `esc` | back to the dashboard; the proposal waits, undecided (`n` opens it again) |
| LLM call | `c` | cancel the call (and the oracle's work); `esc` back to the dashboard |
| editor | `ctrl+s` | send the edited code (validated and previewed again) |
| editor | `esc` | discard the edit |
| timeline | `←` `→` | step back / forward through the session's events |
| timeline | `home` `end` | first / last step |
| timeline | `i` | inspect a policy as it was at this step (also `enter`); `p` there plays it, in this session's game |
| timeline | `p` | play against a member of this session or a bot, in its game |
| timeline | `d` `b` | compare the selected policy with the others / the behaviour diversity, as the population was at this step |
| timeline | `R` | resume the session here (new iterations) |
| play | `enter` | play the highlighted opponent (members of the session on screen, then the game's bots) |
| play | `n` | next game against the same opponent (a fresh deal; the match total runs on) |
| play | `t` | switch seat from the next game (against a two-population member you take the seat other than its own) |
| play | `o` | back to the opponent list |
| play | `r` `p` `s` | rock, paper, scissors (RRPS) |
| play | `1`…`9` | the legal moves shown as buttons: Check / Bet / Call / Raise / Fold as the situation names them |
"""


# The "Where" of KEYS for each screen: `?` lists that screen's rows first.
WHERE_BY_SCREEN = {
    "StartScreen": "start",
    "DashboardScreen": "dashboard",
    "ReviewScreen": "review",
    "LLMCallScreen": "LLM call",
    "EditorScreen": "editor",
    "TimelineScreen": "timeline",
    "PlayScreen": "play",
}


def key_rows() -> list[tuple[str, str]]:
    """(where, the whole table row) of every row of KEYS."""
    rows = []
    for line in KEYS.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 3 and cells[0] not in ("Where", "---"):
            rows.append((cells[0], line))
    return rows


def bound_keys(screen, *, focused_only: bool) -> list[tuple[str, str]]:
    """(key, description) of the bindings active on `screen`: those of its focused widget
    (and the containers around it) with `focused_only`, else the screen's own."""
    try:
        active = screen.active_bindings
    except Exception:  # noqa: BLE001 - a screen not mounted yet has none to show
        return []
    keys: dict[str, list[str]] = {}
    for key, item in active.items():
        node, binding = item.node, item.binding
        mine = node is not screen and node is not screen.app if focused_only else node is screen
        if mine and binding.description:
            keys.setdefault(binding.description, []).append(screen.app.get_key_display(binding))
    return [(" ".join(f"`{k}`" for k in dict.fromkeys(shown)), what) for what, shown in keys.items()]


def contextual_keys(screen) -> str:
    """The help's keys for `screen`: its own first (and the focused widget's), then every
    other screen's."""
    where = WHERE_BY_SCREEN.get(type(screen).__name__, "") if screen is not None else ""
    name = where or _screen_title(screen)
    rows = key_rows()
    header = "| Where | Key | Does |\n| --- | --- | --- |\n"
    parts = [f"## Keys here: {name}\n\n"]
    here = [line for w, line in rows if w == where]
    if not here and screen is not None:  # a screen without rows in the table: its bindings as Textual has them
        here = [f"| {name} | {key} | {what} |" for key, what in bound_keys(screen, focused_only=False)]
    parts.append(header + "\n".join(here) + "\n" if here else "No keys of its own beyond those below.\n")
    focused = bound_keys(screen, focused_only=True) if screen is not None else []
    if focused:
        widget = type(screen.focused).__name__ if getattr(screen, "focused", None) is not None else "widget"
        parts.append(f"\n### The focused {widget}\n\n| Key | Does |\n| --- | --- |\n"
                     + "\n".join(f"| {key} | {what} |" for key, what in focused) + "\n")
    everywhere = [line for w, line in rows if w == "everywhere"]
    parts.append("\n## Everywhere\n\n" + header + "\n".join(everywhere) + "\n")
    others = [line for w, line in rows if w not in (where, "everywhere")]
    parts.append("\n## Other screens\n\n" + header + "\n".join(others) + "\n")
    return "".join(parts)


def _screen_title(screen) -> str:
    name = type(screen).__name__ if screen is not None else "this screen"
    return name.removesuffix("Screen").lower() or "this screen"


class HelpScreen(ModalScreen[None]):
    """`?`: the keys of the screen it was opened on (and its focused widget) first."""

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, over=None) -> None:
        super().__init__()
        # Read now: once this screen is on top, the one under it is not the active one.
        self.keys = contextual_keys(over)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(
                "# csro-tui\n\nCode-Space Response Oracles: an oracle proposes a policy as "
                "Python code each iteration; you review it before it joins the population. "
                "`enter` drills in and `esc` goes back on every screen; every key is also in the "
                "command palette (`ctrl+p`) by name.\n\n"
                + self.keys
                + "\n## The policy contract\n\n"
                + POLICY_CONTRACT
            )
        yield Footer()  # this screen's keys, not those of the screen under it

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
