"""Help: the keys of every screen and the policy contract."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from csro_tui.policies.contract import POLICY_CONTRACT

KEYS = """\
## Keys

| Where | Key | Does |
| --- | --- | --- |
| everywhere | `?` / `f1` | this help |
| everywhere | `ctrl+p` | command palette (every action by name) |
| everywhere | `ctrl+q` | quit |
| dashboard | `n` | run the next iteration (or `N` for 5) |
| dashboard | `c` | cancel the work in progress |
| dashboard | `enter` / `i` | inspect the selected policy |
| dashboard | `p` | play against a population member or a bot |
| dashboard | `s` | recorded sessions and their timelines |
| review | `a` | accept the proposal |
| review | `e` | edit it in the built-in editor (`E`: in `$EDITOR`) |
| review | `r` | reject it, with a reason the oracle receives |
| review | `g` | regenerate: ask the oracle again |
| review | `1`…`5` | code, diff, rationale, LLM exchange, checks |
| review | `c` | stop the run (the proposal is not decided) |
| editor | `ctrl+s` | send the edited code (validated and previewed again) |
| editor | `escape` | discard the edit |
| timeline | `left` / `right` | step back / forward through the session's events |
| timeline | `home` / `end` | first / last step |
| timeline | `R` | resume the session here (new iterations) |
| play | `t` / `n` | switch seat / new game against the highlighted opponent |
| play | `r` `p` `s` | rock, paper, scissors (RRPS) |
| play | `1`…`9` | the legal actions shown as buttons (poker) |
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

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
