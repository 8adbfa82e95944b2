"""The corpus' capture processes (tests/support/truth/corpus_run.py): the suite's groups, a process
each, or a process a case, in its own group's kind of process (pinned for an A/B arm); the line
tracer's processes take the same cases, so a case runs after the same cases in both."""
from __future__ import annotations

import json

import pytest

from tests.support.truth.corpus_run import FAST, PINNED, _capture_processes, _processes, load_records

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


@pytest.mark.parametrize("apart", [False, True])
def test_the_tracer_takes_the_cases_as_the_capture_does_each_process_before_the_captures(apart):
    processes = _processes(NAMES, apart)
    captures = [cases for _, _, cases in _capture_processes(NAMES, apart)]
    assert [(mode, cases) for mode, _, _, cases in processes] == \
        [("lines", cases) for cases in captures] + [("capture", cases) for cases in captures]
    assert all(group is None for mode, _, group, _ in processes if mode == "lines")  # never pinned
    records = [record for _, record, _, _ in processes]
    assert len(set(records)) == len(records)  # no process overwrites another's record


def test_the_records_of_all_processes_are_read_back_by_mode(tmp_path):
    for record, names in (("lines-capture", ["a", "b"]), ("lines-capture-pinned", ["c"]),
                          ("capture", ["a", "b"]), ("capture-pinned", ["c"])):
        (tmp_path / f"{record}.json").write_text(json.dumps({name: record for name in names}))
    assert load_records(str(tmp_path)) == {
        "lines": {"a": "lines-capture", "b": "lines-capture", "c": "lines-capture-pinned"},
        "capture": {"a": "capture", "b": "capture", "c": "capture-pinned"}}
