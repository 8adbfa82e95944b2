"""The text report: reads by line add up to the reads counted, code is shortened at a word, and a
cause is named by its value with its one meaning."""
from __future__ import annotations

import re

from xlaprof.analysis.attribution import CAUSES
from xlaprof.report.causes import CAUSE_ROWS, cause_row
from xlaprof.report.text import _counted, shorten


def test_counts_add_up_to_the_total_with_the_rest_on_a_line_of_its_own():
    lines = _counted({"train.py:72": 15}, 16, "at", 10, "at a line no sampled stack showed")
    assert lines == ["      15 at train.py:72\n", "       1 at a line no sampled stack showed\n"]
    many = _counted({f"s{i}": 2 for i in range(5)}, 10, "in", 3, "in other spans")
    assert sum(int(line.split()[0]) for line in many) == 10 and many[-1].split()[0] == "4"
    assert _counted({"a": 3}, 3, "in", 10, "x") == ["       3 in a\n"]


def test_code_is_shortened_at_a_word_never_inside_one():
    code = "losses.append(loss.item())  # mistake 1: a device->host read every step"
    short = shorten(code, 48)
    assert len(short) <= 48 and short.endswith("…")
    kept = short[:-1]
    assert " ".join(code.split()).startswith(kept) and re.search(r"[ .,(]$", kept + " ")
    assert shorten("loss = torch.nn.functional.mse_loss(prediction, y)", 48) == \
        "loss = torch.nn.functional.mse_loss(prediction,…"
    assert shorten("x  =  1", 48) == "x = 1"


def test_every_cause_has_one_row_and_unknown_values_fall_back():
    assert {c.value for c in CAUSES} <= set(CAUSE_ROWS)
    assert "host_blocked" in CAUSE_ROWS  # ready before the lead's cause lands
    assert len({row.color for row in CAUSE_ROWS.values()}) == len(CAUSE_ROWS)
    assert cause_row("not_a_cause").meaning == "" and cause_row(CAUSES[0]) is CAUSE_ROWS[CAUSES[0].value]
