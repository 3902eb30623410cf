"""The scores of bench.qa: the LoCoMo paper's token F1, ROUGE as QMSum reports it, span hits."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import qa
from bench.common import percentile
from bench.qa import locomo_f1, rouge_f1, span_scores, token_f1, without_citations


def test_token_f1_normalises_case_punctuation_articles_and_stems() -> None:
    assert token_f1("The Adoption agencies!", "adoption agency") == 1.0
    assert token_f1("in May 2023", "7 May 2023") == pytest.approx(2 / 3)
    assert token_f1("nothing alike", "7 May 2023") == 0.0


def test_multi_hop_scores_each_gold_part_by_its_best_predicted_part() -> None:
    # gold parts "pottery", "camping"; predicted parts "camping", "painting"
    assert locomo_f1("camping, painting", "pottery, camping", 1) == pytest.approx(0.5)
    assert locomo_f1("Sweden", "Sweden; she moved from there", 3) == 1.0  # open-domain: cut at ;
    assert locomo_f1("Sweden", "Sweden; she moved from there", 4) < 1.0


def test_rouge_uses_stemming_and_citations_are_not_scored() -> None:
    answer = without_citations("They wanted batteries [1]. It is cheap [2, 3] [unverified].")
    assert answer == "They wanted batteries. It is cheap."
    scores = rouge_f1(answer, "They want a battery. It is cheap.")
    assert scores["rouge1"] > 80 and set(scores) == {"rouge1", "rouge2", "rougeLsum"}


def test_a_search_hits_when_a_gold_turn_is_among_its_results_turns() -> None:
    hit, share = span_scores([["m:1", "m:2"], ["m:9"]], ["m:2", "m:3"])
    assert hit and share == pytest.approx(1 / 3)
    assert span_scores([["m:1"]], ["m:2"]) == (False, 0.0)
    assert span_scores([], ["m:2"]) == (False, 0.0)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 0.5) == 10.0 and percentile(values, 0.95) == 19.0
    assert percentile([3.0], 0.95) == 3.0


def test_the_daemon_runs_from_the_checkout_given(tmp_path: Path) -> None:
    """``start_daemon(root=...)`` (``bench.qa --daemon-root``) runs that checkout's daemon, not
    this one: here a stand-in that says READY and writes where it runs from."""
    from daemon.ipc.testing import start_daemon

    other = tmp_path / "before"
    (other / "daemon").mkdir(parents=True)
    (other / "daemon" / "__init__.py").write_text("")
    (other / "daemon" / "__main__.py").write_text(
        "import os, pathlib, signal, socket, sys\n"
        "pathlib.Path(os.environ['BRAINCUE_HOME'], 'ran-from').write_text(\n"
        "    str(pathlib.Path(__file__).resolve().parents[1]))\n"
        "with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:\n"
        "    s.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])\n"
        "signal.sigwait({signal.SIGTERM})\n")
    home = tmp_path / "home"
    home.mkdir()
    daemon = start_daemon(home, root=other, timeout=30)
    try:
        assert (home / "ran-from").read_text() == str(other.resolve())
    finally:
        daemon.stop()


def test_never_said_questions_are_asked_and_their_declines_counted_apart() -> None:
    conversation = {"qa": [
        {"question": "When?", "answer": "7 May 2023", "evidence": ["D1:3"], "category": 2},
        {"question": "What did Caroline realize?", "evidence": ["D2:3"], "category": 5,
         "adversarial_answer": "self-care is important"},
        {"question": "No evidence?", "answer": "x", "evidence": [], "category": 4}]}
    assert [q["category"] for q in qa.locomo_questions(conversation)] == [2]
    assert [q["category"] for q in qa.locomo_questions(conversation, never_said=True)] == [2, 5]

    def asked(category: str, f1: float | None, declined: bool, gold: bool) -> qa.Asked:
        return qa.Asked(dataset="locomo", space="s", question="q", gold="g", answer="a",
                        first_token_s=1.0, answer_s=2.0, echo=False, category=category, f1=f1,
                        declined=declined, evidence_gold=gold)

    table = qa.locomo_table([asked("temporal", 50.0, False, True),
                             asked("temporal", 0.0, True, False),
                             asked("never said", None, True, True)])
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()}
    assert rows["temporal"] == "| temporal | 2 | 25.0 | 50% | 50% | 0 | 0 |"
    assert rows["never said"] == "| never said | 1 |  | 100% | 100% | 0 | 0 |"
    # "all" is the answerable questions: the never-said ones are not scored by F1
    assert rows["all answerable (1-4)"] == "| all answerable (1-4) | 2 | 25.0 | 50% | 50% | 0 | 0 |"
