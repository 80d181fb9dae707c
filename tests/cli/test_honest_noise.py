"""Honest noise (issue 27, item 4): a figure from fewer than two seat-swapped pairs has no standard error."""

from __future__ import annotations

import json

from csro_tui.cli import main
from csro_tui.records import Preview, Proposal, ReviewRequest, ValidationResult
from csro_tui.reviewers import AutoReviewer

GAME = "rrps(num_repetitions=20)"


def test_eval_on_one_pair_prints_the_error_as_not_measurable(capsys):
    assert main(["eval", "--game", GAME, "seed:beat_last", "--episodes", "2", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "± ?" in out and "± 0.0000" not in out
    assert "± ?: measured on one seat-swapped pair (2 episodes), which cannot measure its own noise" in out
    assert main(["eval", "--game", GAME, "seed:beat_last", "--episodes", "4", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "± ?" not in out and " ± " in out


def test_eval_json_says_the_error_is_not_measurable(capsys):
    assert main(["eval", "--game", GAME, "seed:beat_last", "--episodes", "2", "--seed", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(r["stderr"] is None and r["stderr_measurable"] is False for r in report["results"])
    metrics = report["metrics"]
    assert metrics["stderr_measurable"] is False
    assert metrics["pop_return_stderr"] is None and metrics["agg_score_stderr"] is None
    assert main(["eval", "--game", GAME, "seed:beat_last", "--episodes", "4", "--seed", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(r["stderr_measurable"] is True and r["stderr"] is not None for r in report["results"])
    assert report["metrics"]["stderr_measurable"] is True and report["metrics"]["agg_score_stderr"] is not None


def test_crosstable_on_one_pair_says_so_in_print_and_json(tmp_path, capsys):
    out_file = tmp_path / "table.json"
    assert main(["crosstable", "--game", GAME, "--participants", "rockbot", "randbot", "copybot",
                 "--episodes", "2", "--seed", "1", "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "± ?" in out and "± 0.0000" not in out and "cannot measure its own noise" in out
    document = json.loads(out_file.read_text())
    assert document["stderr_measurable"] is False
    assert document["stderr"][0][1] is None and document["stderr"][1][0] is None


def one_pair_review(expected: float = 5.0) -> ReviewRequest:
    preview = Preview(expected_payoff=expected, per_member={"p0": expected}, stderr={"p0": 0.0},
                      expected_stderr=0.0, pairs=1)
    return ReviewRequest(proposal_id="i1.1", proposal=Proposal(source="", oracle="test", name="x"), iteration=1,
                         attempt=1, validation=ValidationResult(valid=True), preview=preview)


def test_the_auto_reviewer_cannot_accept_on_one_pair():
    decision = AutoReviewer().decide(one_pair_review(expected=5.0))
    assert decision.action == "reject"
    assert decision.reason.startswith("no improvement shown: expected payoff +5.000 against the meta-strategy was "
                                      "measured on one seat-swapped pair per member")
    # Two pairs and a clear margin: accepted, as before.
    review = one_pair_review(expected=5.0)
    review.preview.pairs, review.preview.expected_stderr = 2, 0.1
    assert AutoReviewer().decide(review).action == "accept"
    # --review valid accepts every valid proposal, one pair or not.
    assert AutoReviewer(threshold=None).decide(one_pair_review()).action == "accept"


def test_the_review_text_says_the_noise_was_not_measured():
    from csro_tui.tui.adapt import review_info
    from csro_tui.tui.screens.review import summary_text

    review = one_pair_review()
    review.preview.expected_stderr = 0.25  # whatever one pair's episodes spread by: not a standard error
    text = summary_text(review_info(review)).plain
    assert "noise not measured" in text and "± 0.2500" not in text
    assert "the auto reviewer would reject it: no improvement shown" in text
