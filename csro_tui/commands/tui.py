"""`csro tui`: the terminal workbench (also what `csro` alone opens).

With no flags it shows the start screen, pre-filled from the configuration
(defaults < csro.toml < CSRO_* environment); with --game or --oracle it
starts that session at once; with SESSION it opens a recorded session's
timeline.
"""

from __future__ import annotations

import argparse

from csro_tui.config import load_run_config
from csro_tui.oracles.llm.keys import KeyTrust
from csro_tui.sessions.store import SessionStore
from csro_tui.tui.model import LaunchOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tui",
        help="open the terminal workbench (the default command)",
        description="Open the terminal workbench: start a session, review proposals, play, replay sessions.",
    )
    parser.add_argument("session", nargs="?", help="a recorded session (id under --sessions-dir, or its folder) to open")
    parser.add_argument("--game", help="start a session on this game at once (e.g. kuhn_poker, rrps)")
    parser.add_argument("--oracle", help="start a session with this oracle at once (e.g. best-response, seed, llm)")
    parser.add_argument("--model", help="model name for LLM oracles")
    parser.add_argument("--base-url", dest="base_url", help="OpenAI-compatible base URL for LLM oracles")
    parser.add_argument("--trust-base-url", action="store_true",
                        help="send the API key to the base URL that csro.toml or a resumed session names "
                             "(without it a key goes only where you named: --base-url, OPENAI_BASE_URL, "
                             "~/.config/csro/config.toml)")
    parser.add_argument("--solver", help="meta-solver (default nash)")
    parser.add_argument("--episodes", type=int, help="evaluation budget: episodes per matchup")
    parser.add_argument("--seed", type=int, help="session seed")
    parser.add_argument("--populations", type=int, choices=(1, 2),
                        help="1: one population playing both seats (default); 2: one population per seat (psro_v2)")
    parser.add_argument("--iterations", type=int, help="with --game/--oracle: run this many iterations at once")
    parser.add_argument("--sessions-dir", dest="sessions_dir", help="where sessions are recorded")
    parser.add_argument("--config", help="a csro.toml configuration file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    flags = {
        "game": args.game,
        "oracle": args.oracle,
        "model": args.model,
        "base_url": args.base_url,
        "solver": args.solver,
        "episodes": args.episodes,
        "seed": args.seed,
        "populations": args.populations,
        "sessions_dir": args.sessions_dir,
    }
    config = load_run_config(flags, config_file=args.config)
    options = LaunchOptions.from_config(config, iterations=args.iterations, config_file=args.config)
    options.key_trust = KeyTrust.of_user(base_urls=(args.base_url,), confirmed=args.trust_base_url)
    start_now = args.game is not None or args.oracle is not None
    if args.session:
        SessionStore(config.sessions_dir).resolve(args.session)  # a wrong id is one line here, not a UI error

    from csro_tui.tui.app import CsroApp  # start-up time: importing it loads numpy, pygments, rich, textual, tree_sitter; textual is imported only for the UI

    app = CsroApp(options, session=args.session, sessions_dir=config.sessions_dir, show_start=not start_now)
    app.run()
    return int(app.return_code or 0)
