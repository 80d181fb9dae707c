"""Export the README's screenshots (SVG) from a real session, headless.

    .venv/bin/python docs/screenshots/make_screenshots.py

Runs Kuhn poker with the exact best-response oracle in a temporary sessions
folder, accepts three proposals through the review screen and saves the
start screen, a review, a person's edit (the diff oracle -> edited), the
dashboard, the inspector, a member compared with the others by behaviour, the
population's diversity, a match being played, the session timeline and one
of its proposals opened from it, at 160x48.  Then an `llm-refine` session
against the test suite's scripted OpenAI-compatible server (tests/llm_server.py;
its reply is fixed test text, not model output) is caught mid-call: the status
line and the reply as it streams in.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from textual.widgets import OptionList  # noqa: E402

from csro_tui.tui.app import CsroApp  # noqa: E402
from csro_tui.tui.screens.compare_policies import ComparePoliciesScreen, DiversityScreen  # noqa: E402
from csro_tui.tui.screens.dashboard import DashboardScreen  # noqa: E402
from csro_tui.tui.screens.editor import EditorScreen  # noqa: E402
from csro_tui.tui.screens.play import PlayScreen  # noqa: E402
from csro_tui.tui.screens.review import ReviewScreen  # noqa: E402
from csro_tui.tui.screens.sessions import TimelineScreen  # noqa: E402
from tests.tui.helpers import start_screen, wait_until  # noqa: E402


async def main() -> None:
    sessions = Path(tempfile.mkdtemp(prefix="csro-shots-"))
    app = CsroApp(sessions_dir=sessions)

    def save(name: str) -> None:
        app.save_screenshot(filename=f"{name}.svg", path=str(HERE))
        print(f"saved {name}.svg")

    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        save("start")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the seeds", steps=4000)
        for n in range(3):
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "a review", steps=4000)
            if n == 1:  # a person's edit: the review shows oracle -> edited and both measured payoffs
                await pilot.press("e")
                await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen), "the editor")
                area = app.screen.query_one("#editor-area")
                area.text = area.text.replace('"Pass",', '"Bet",  # edited by hand:', 1)
                review = app.screen_stack[-2]
                await pilot.press("ctrl+s")
                await wait_until(
                    pilot, lambda: isinstance(app.screen, ReviewScreen) and app.screen is not review, "the edit's review",
                    steps=4000,
                )
                app.screen.query_one("#review-tabs").active = "tab-diff"
                await pilot.pause()
                save("review-edit")
            if n == 2:
                save("review")
                app.screen.query_one("#review-tabs").active = "tab-checks"
                await pilot.pause()
                save("review-checks")
            await pilot.press("a")
            await wait_until(
                pilot, lambda: isinstance(app.screen, DashboardScreen) and not app._busy(), "the engine", steps=4000
            )
        table = app.screen.query_one("#payoff-table")
        table.focus()
        table.move_cursor(row=3, column=1)
        await pilot.pause()
        save("dashboard")
        await pilot.press("i")
        await pilot.pause()
        save("inspector")
        await pilot.press("escape")
        # behaviour: the selected member against the others, then the population's diversity
        await pilot.press("d")  # the payoff matrix's row member (its cursor is on row 3)
        await wait_until(pilot, lambda: isinstance(app.screen, ComparePoliciesScreen), "compare")
        await wait_until(pilot, lambda: "head to head:" in str(app.screen.query_one("#compare-behaviour").render())
                         and "playing" not in str(app.screen.query_one("#compare-behaviour").render()),
                         "the comparison", steps=4000)
        save("compare")
        await pilot.press("escape")
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, DiversityScreen), "diversity")
        await wait_until(pilot, lambda: "profiling" not in str(app.screen.query_one("#diversity-header").render()),
                         "the diversity", steps=4000)
        save("diversity")
        await pilot.press("escape")
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, PlayScreen) and app.screen.spec is not None, "play")
        play = app.screen
        options = play.query_one(OptionList)
        options.highlighted = options.get_option_index("bot:cfr_plus")
        options.action_select()
        await wait_until(pilot, lambda: play.session is not None and len(play.query("#play-actions Button")) > 0, "a hand")
        for hand in range(2):  # two hands played out, the third dealt: the match so far shows
            while not play.session.finished:
                await wait_until(pilot, lambda: len(play.query("#play-actions Button")) > 0 or play.session.finished, "a move")
                if play.session.finished:
                    break
                before = len(play.session.moves)
                await pilot.press("2" if hand == 0 else "1")
                await wait_until(pilot, lambda: len(play.session.moves) > before, "the move")
            await wait_until(pilot, lambda: play.match is not None and len(play.match.games) == hand + 1, "the game counted")
            finished = play.session
            await pilot.press("n")
            await wait_until(pilot, lambda: play.session is not finished and play.session is not None, "the next hand")
        await wait_until(pilot, lambda: len(play.query("#play-actions Button")) > 0, "the third hand")
        save("play")
        await pilot.press("escape")
        session_id = app.live.session_id
        await wait_until(pilot, lambda: isinstance(app.screen, DashboardScreen), "the dashboard")
        app.open_recorded(session_id)
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.step > 0, "the timeline")
        await pilot.press("home")
        for _ in range(14):
            await pilot.press("right")
        await wait_until(pilot, lambda: app.screen.step == 15, "step 15")
        await pilot.pause(0.5)
        save("timeline")
        timeline = app.screen
        await pilot.press("home")
        for _ in range(3):  # proposals i1.1, i2.1, then i2.2: the edit of iteration 2
            await pilot.press("right_square_bracket")
            await pilot.pause(0.2)
        await pilot.press("o")
        await wait_until(pilot, lambda: app.screen is not timeline and hasattr(app.screen, "proposal_id"), "a proposal")
        await pilot.press("3")
        await pilot.pause(0.5)
        save("timeline-proposal")


SCRIPTED_REPLY = '''Bet with the king; with the jack, bluff now and then.

```python
import random


class Policy:
    def __init__(self, player, game):
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        legal = obs["legal_actions"]
        if obs["card"] == "K":
            return legal[-1]
        if obs["card"] == "J" and obs["to_call"] == 0:
            return legal[-1] if self.rng.random() < 0.33 else legal[0]
        return legal[0]
```
'''


async def llm_call() -> None:
    """A call in flight, as a person sees it while a slow model writes (scripted server)."""
    from csro_tui.tui.model import LaunchOptions
    from tests.llm_server import ScriptedLLMServer, ScriptedReply

    sessions = Path(tempfile.mkdtemp(prefix="csro-shots-llm-"))
    with ScriptedLLMServer() as server:
        # about 10 tokens a second after a pause for the prompt, as the local 1.5B model writes
        server.script(ScriptedReply(SCRIPTED_REPLY, delay_s=1.0, chunk_delay_s=0.1, chunk_chars=4))
        options = LaunchOptions(game="kuhn_poker", oracle="llm-refine", model="scripted-model", base_url=server.base_url)
        app = CsroApp(options, sessions_dir=sessions, show_start=False)
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the seeds", steps=4000)
            await pilot.press("n")
            reply = app.screen.query_one("#llm-reply")
            await wait_until(pilot, lambda: "return legal[-1] if" in str(reply.render()), "the reply streaming", steps=4000)
            await pilot.pause(0.6)
            app.save_screenshot(filename="llm-call.svg", path=str(HERE))
            print("saved llm-call.svg")
            await pilot.press("ctrl+c")
            await pilot.pause(1.0)


if __name__ == "__main__":
    asyncio.run(main())
    asyncio.run(llm_call())
