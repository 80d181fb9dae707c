"""`csro explain POLICY --game G [--json]`: what a policy does, in its profile and in words.

The behaviour profile (csro_tui/profiles/; the code runs only in the
sandbox), a description in words made from it (no model), and static hints
about the code with their line numbers (methods the referee never calls,
state written but never read, randomness not from game["seed"]): hints, not
verdicts.  Exit 1 when the policy fails before any profile exists (an exact
game's table could not be built); a failure against one probe is part of
the profile.
"""

from __future__ import annotations

import argparse
import json

from csro_tui.commands.eval import EXIT_INVALID, EXIT_POLICY_FAILED, InvalidPolicy, load_game
from csro_tui.commands.sessions import add_sessions_dir_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="a policy's behaviour profile, a description in words and hints about its code",
        description="Profile POLICY (a file, seed:NAME, a benchmark bot or session:ID:MEMBER) in game G: what it "
        "does in each situation (exact games) or against fixed probe opponents (sampled games), a description "
        "in words made from that profile (no model), and static hints about its code with line numbers.",
    )
    parser.add_argument("policy", metavar="POLICY", help="policy file, seed:NAME, a benchmark bot, or session:ID:MEMBER")
    parser.add_argument("--game", required=True, help="game name, e.g. kuhn_poker, rrps, liars_dice")
    parser.add_argument("--seed", type=int, help="seed of a sampled profile (default: from the session, else 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--summary", action="store_true",
                        help="also ask the configured LLM for a summary of the code (model text, shown as such)")
    parser.add_argument("--model", help="model for --summary (default: csro.toml [llm], CSRO_MODEL)")
    parser.add_argument("--base-url", help="OpenAI-compatible base URL for --summary (default: OPENAI_BASE_URL)")
    add_sessions_dir_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.commands.diff import checked
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.profiles.compute import profile_policy
    from csro_tui.profiles.describe import describe
    from csro_tui.profiles.hints import profile_hints
    from csro_tui.profiles.references import profile_seed
    from csro_tui.profiles.report import profile_lines
    from csro_tui.text import clean_text, one_line

    spec = load_game(args.game)
    try:
        named = checked(spec, args.policy, args.sessions_dir)
    except InvalidPolicy:
        return EXIT_INVALID
    seed = profile_seed(named.session_seed, args.seed)
    profile = profile_policy(spec, named.participant, seed=seed, branches=True, seat=named.seat)
    words = describe(profile)
    source = named.participant.source if isinstance(named.participant, CodePolicy) else ""
    hints = profile_hints(source, profile)
    summary = None
    if args.summary and source:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.oracles.llm.keys import KeyTrust
        from csro_tui.profiles.summary import model_summary

        summary = model_summary(spec, source, model=args.model, base_url=args.base_url,
                                key_trust=KeyTrust.of_user(base_urls=(args.base_url,)))
    if args.json:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.numbers import plain_numbers

        print(json.dumps(plain_numbers({
            "game": spec.name,
            "policy": profile.policy,
            "profile": profile.to_dict(),
            "description": words,
            "hints": [hint.to_dict() for hint in hints],
            "model_summary": summary,
            "benchmark_row": named.benchmark_row,
        }), indent=2))
        return EXIT_POLICY_FAILED if profile.failure else 0
    print(f"{one_line(profile.policy, 80)} in {spec.title}")
    print("what it does:")
    for sentence in words:
        print(f"  {one_line(sentence, 160)}")
    headers = {"exact": "profile (reach against the uniform random opponent; what it does):",
               "probes": "profile (mean return per match against each probe; first / middle / last third):",
               "sampled": "profile (mean return per episode against each benchmark bot; its most common situations):"}
    print(headers.get(profile.kind, "profile:"))
    for line in profile_lines(profile):
        print(clean_text(line, keep_newlines=False))  # moves and names of a recorded policy
    if named.benchmark_row:
        row = named.benchmark_row
        worst = sorted(row.items(), key=lambda item: item[1])[:3]
        print(f"against the benchmark (recorded in the session): mean {sum(row.values()) / len(row):+.4g} over "
              f"{len(row)} bots; worst: " + ", ".join(f"{one_line(bot, 30)} {value:+.4g}" for bot, value in worst))
    if summary is not None:
        print(f"model summary (model text from {one_line(summary['model'], 60)}, not checked against the profile):")
        for line in clean_text(summary["text"]).strip().splitlines():
            print(f"  {line}")
    if hints:
        print("hints about the code (not reasons to reject):")
        for hint in hints:
            print(f"  line {hint.line}: {one_line(hint.message, 140)}")
    if not spec.exact:
        print(f"seed {seed} (repeat with --seed {seed})")
    # No profile at all (the exact table could not be built): exit 1, as `csro eval` on a policy failure.
    return EXIT_POLICY_FAILED if profile.failure else 0
