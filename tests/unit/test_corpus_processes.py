"""The corpus' capture processes (tests/support/truth/corpus_run.py): the suite's groups, a process
each, or a process a case, in its own group's kind of process (pinned for an A/B arm)."""
from __future__ import annotations

from tests.support.truth.corpus_run import FAST, PINNED, _capture_processes

NAMES = ["input_workers", "print_logging", "text_to_image", "input_bound", "step_closure"]


def test_grouped_the_cases_share_one_process_per_kind():
    assert _capture_processes(NAMES, apart=False) == [
        ("capture", "capture", ["input_workers", "input_bound"]),
        (FAST, FAST, ["text_to_image"]),
        (PINNED, PINNED, ["print_logging", "step_closure"]),
    ]


def test_apart_each_case_has_a_process_and_a_record_of_its_own_of_its_kind():
    processes = _capture_processes(NAMES, apart=True)
    assert [cases for _, _, cases in processes] == [["input_workers"], ["input_bound"], ["text_to_image"],
                                                    ["print_logging"], ["step_closure"]]
    assert [group for _, group, _ in processes] == ["capture", "capture", FAST, PINNED, PINNED]
    assert len({record for record, _, _ in processes}) == len(NAMES)
    assert all(record.startswith(group) for record, group, _ in processes)
