"""Print the corpus table for docs/SECURITY.md from real runs.

    python tests/adversarial/make_table.py            # every case, both modes
    python tests/adversarial/make_table.py NAME ...   # only these cases

Each case is validated statically and played in a real referee match in
each sandbox mode available here (the same runs as test_corpus.py); the
table shows what actually happened, with the failure summary when it
differs from what the case expects (marked "UNEXPECTED").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from csro_tui.sandbox.sandbox import bubblewrap_problem  # noqa: E402
from tests.adversarial.harness import (  # noqa: E402
    MODES,
    Arena,
    arena_environment,
    load_cases,
    play_case,
    static_issues,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    parser.add_argument("--verbose", "-v", action="store_true", help="also print each failure summary")
    args = parser.parse_args(argv)
    cases = [case for case in load_cases() if not args.cases or case.name in args.cases]
    modes = [mode for mode in MODES if mode != "bubblewrap" or not bubblewrap_problem()]
    header = ["case", "tries", "static"] + [f"runtime: {mode}" for mode in modes]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    unexpected = 0
    for case in cases:
        arena = Arena()
        try:
            issues = static_issues(case, arena)
            static = f"rejected (line {issues[0].line})" if issues else "accepted"
            if bool(issues) != (case.static == "invalid"):
                static += " UNEXPECTED"
                unexpected += 1
            cells = [f"`{case.name}`", case.tries, static]
            for mode in modes:
                with arena_environment(arena):
                    run = play_case(case, arena, mode)
                cell = run.outcome if run.outcome != "ok" else "ok (harmless)"
                if run.outcome != case.runtime(mode):
                    cell += f" UNEXPECTED ({run.summary})"
                    unexpected += 1
                cells.append(cell)
                if args.verbose:
                    print(f"{case.name} [{mode}]: {run.summary}", file=sys.stderr)
        finally:
            arena.close()
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    print("\n".join(lines))
    if unexpected:
        print(f"\n{unexpected} unexpected outcome(s)", file=sys.stderr)
    return 1 if unexpected else 0


if __name__ == "__main__":
    os.environ.setdefault("CSRO_SANDBOX", "rlimits")
    sys.exit(main())
