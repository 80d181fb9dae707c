"""`csro diff A B --game G [--json]`: how two policies differ in behaviour.

A and B are each a policy file, `seed:NAME`, a benchmark bot, or
`session:ID:MEMBER`.  Both are profiled (csro_tui/profiles/; the sandbox runs
the code) with the same seed, then compared: the behaviour distance with its
noise, the situations (exact games) or probes (sampled games) where they
differ, and the head-to-head payoff of A against B.  Sampled profiles use
--seed, else a seed derived from the session's when A or B is a session
member, else 0; the seed is printed, so the comparison repeats.
"""

from __future__ import annotations

import argparse
import json
import sys

from csro_tui.commands.eval import EXIT_INVALID, InvalidPolicy, load_game
from csro_tui.commands.sessions import add_sessions_dir_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="compare two policies' behaviour: distance, differing situations, head to head",
        description="Profile A and B (a file, seed:NAME, a benchmark bot or session:ID:MEMBER) in game G and show "
        "how their behaviour differs: the behaviour distance with its noise, each situation or probe where they "
        "differ with both policies' moves or results, and A's payoff against B.",
    )
    parser.add_argument("a", metavar="A", help="policy file, seed:NAME, a benchmark bot, or session:ID:MEMBER")
    parser.add_argument("b", metavar="B", help="the policy to compare it with (same forms)")
    parser.add_argument("--game", required=True, help="game name, e.g. kuhn_poker, rrps, liars_dice")
    parser.add_argument("--seed", type=int, help="seed of the sampled profiles and the head-to-head match")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_sessions_dir_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.profiles.compute import head_to_head, profile_policy
    from csro_tui.profiles.distance import compare
    from csro_tui.profiles.references import profile_seed
    from csro_tui.profiles.report import comparison_json, comparison_lines

    spec = load_game(args.game)
    try:
        a = checked(spec, args.a, args.sessions_dir)
        b = checked(spec, args.b, args.sessions_dir)
    except InvalidPolicy:
        return EXIT_INVALID
    seed = profile_seed(a.session_seed if a.session_seed is not None else b.session_seed, args.seed)
    # A member of one seat's population (two populations) is profiled in its seat; two of
    # the same seat are compared in its states only.
    profile_a = profile_policy(spec, a.participant, seed=seed, seat=a.seat)
    profile_b = profile_policy(spec, b.participant, seed=seed, seat=b.seat)
    comparison = compare(profile_a, profile_b, seat=a.seat if a.seat == b.seat else None)
    match = head_to_head(spec, a.participant, b.participant, seed)
    if args.json:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.numbers import plain_numbers

        print(json.dumps(plain_numbers(comparison_json(profile_a, profile_b, comparison, match)), indent=2))
        return 0
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.text import clean_text

    for line in comparison_lines(profile_a, profile_b, comparison, match):
        print(clean_text(line, keep_newlines=False))  # names and moves of recorded policies
    if not spec.exact:
        print(f"seed {seed} (repeat with --seed {seed})")
    return 0


def checked(spec, reference: str, sessions_dir):
    """A named policy, its code validated (issues printed, InvalidPolicy raised)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.sandbox.validation import validate_source
    from csro_tui.profiles.references import resolve_policy

    named = resolve_policy(spec, reference, sessions_dir)
    if isinstance(named.participant, CodePolicy):
        issues = validate_source(named.participant.source)
        if issues:
            # imported when used, not at the top: keeps csro's start-up fast
            from csro_tui.text import one_line

            print(one_line(f"csro: error: {reference} is not a valid policy ({len(issues)} issue(s)):"), file=sys.stderr)
            for issue in issues[:20]:
                print(one_line(f"{reference}:{issue.line}:{issue.col}: {issue.message}"), file=sys.stderr)
            raise InvalidPolicy(reference)
    return named
