"""The text report: it opens with the session's verdict and gives each advice once, reads by line
add up to the reads counted, code is shortened at a word, and a cause is named by its value with its
one meaning."""
from __future__ import annotations

import re
import textwrap

from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.report import analysis_json
from xlaprof.report.causes import CAUSE_ROWS, cause_row
from xlaprof.report.text import _counted, render_text, shorten
from xlaprof.report.verdict import session_verdict
from xlaprof.session import Session


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


def test_the_report_opens_with_the_session_verdict_and_gives_each_advice_once(tmp_path):
    run = write_session(str(tmp_path), "run", {"localhost_9012": training_capture(
        steps=12, devices=2, read_every=1, recompile_every=4, sampled=True)})
    analysis = analyze(Session.load(run))
    text = render_text(analysis)
    verdict = session_verdict(analysis_json(analysis))
    assert verdict.startswith("The devices were idle ") and "Fix: " in verdict
    assert text.split("\n", 1)[1].startswith(textwrap.fill(verdict, 100) + "\n\n")
    fixes = re.findall(r"^     fix: (.*)$", text, re.M)
    assert fixes and any(f.startswith("same as #") for f in fixes)
    assert len([f for f in fixes if not f.startswith("same as #")]) == len({f for f in fixes if not f.startswith("same as #")})


def test_a_line_in_several_spans_is_one_finding_with_its_time_per_span(tmp_path):
    """The text report and the session page's findings show a line's time in each span it fell in."""
    from dashboard import components as ui
    from tests.unit.test_thread_causes import line_in_two_spans

    builder = line_in_two_spans()
    analysis = analyze(Session.load(write_session(str(tmp_path), "run", {"w_9012": builder.to_bytes()})))
    assert "     in spans: forward 402 us, make_batch 298 us\n" in render_text(analysis)
    page = str(ui.findings_list(analysis.findings).to_plotly_json())
    assert "forward 402 us · make_batch 298 us" in page and "finding-spans" in page
