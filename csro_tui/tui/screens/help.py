"""Help: the keys of every screen and the policy contract."""

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


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(
                "# csro-tui\n\nCode-Space Response Oracles: an oracle proposes a policy as "
                "Python code each iteration; you review it before it joins the population.\n\n"
                + KEYS
                + "\n## The policy contract\n\n"
                + POLICY_CONTRACT
            )
        yield Footer()  # this screen's keys, not those of the screen under it

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
