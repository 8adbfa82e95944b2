"""The verdict of a diff leads with the idle cause that moved most, and tells the finding that moved
most after its own cause."""
from __future__ import annotations

from xlaprof.report.verdict import fix_of, session_verdict, verdict
from xlaprof.units import format_ms

STEP = {"median_us": {"before": 50_000.0, "after": 55_000.0, "delta": 5_000.0, "relative": 0.1},
        "median_ci": [0.05, 0.15], "level": 0.95, "significant": True}


def change(delta_us: float) -> dict:
    return {"before": 500_000.0, "after": 500_000.0 + delta_us, "delta": delta_us, "relative": delta_us / 500_000}


def data(moves: dict, findings: list | None = None) -> dict:
    causes = ("compile", "transfer_from_device", "transfer_to_device", "host_tracing", "unattributed")
    return {"step_time": STEP, "idle_by_cause_us": {c: change(moves.get(c, 0.0)) for c in causes},
            "findings": findings or []}


def test_the_largest_change_leads_and_the_finding_follows_its_cause():
    recompile = {"status": "changed", "kind": "recompilation", "span": "train_step", "source": "train.py:65",
                 "lost_us": {"before": 685_700.0, "after": 639_000.0, "delta": -46_700.0}}
    line = verdict(data({"compile": -46_700.0, "host_tracing": 133_700.0, "unattributed": 2_000.0}, [recompile]))
    assert line == ("step time +10.0% (95% CI +5.0%..+15.0%); host_tracing idle +133.7 ms; compile idle -46.7 ms: "
                    "the recompilation at train_step (train.py:65) went from 685.7 ms to 639.0 ms")


def test_small_moves_are_left_out_and_nothing_moved_says_so():
    assert verdict(data({"host_tracing": 100_000.0, "compile": 5_000.0, "unattributed": 900.0})).endswith(
        "; host_tracing idle +100.0 ms")  # 5 ms is under a tenth of the largest, 0.9 ms under 1 ms
    assert verdict(data({})).endswith("; device idle time unchanged")
    three = verdict(data({c: -d for c, d in (("compile", 4e5), ("host_tracing", 3e5), ("unattributed", 2e5),
                                            ("transfer_to_device", 1e5))}))
    assert three.split("; ")[1:] == ["compile idle -400.0 ms", "host_tracing idle -300.0 ms",
                                     "unattributed idle -200.0 ms"]


def finding(kind: str, lost_us: float, span: str | None, source: str | None, advice: str) -> dict:
    return {"kind": kind, "lost_us": lost_us, "span": span, "source": source, "advice": advice}


def test_a_session_verdict_names_the_share_the_biggest_cause_its_line_and_the_fix():
    read_fix = ("Reading a value blocks (.item(), print(t)). Keep the value on the device and read it every N "
                "steps, e.g. in xm.add_step_closure.")
    data = {"device_busy_us": 200_000.0, "device_idle_us": 9_800_000.0,
            "idle_by_cause_us": {"host_tracing": 7_800_000.0, "transfer_from_device": 2_000_000.0, "compile": 0.0},
            # the top finding is not of the biggest cause: the verdict takes the first one that is
            "findings": [finding("transfer_from_device", 2_000_000.0, "log", "/w/train.py:9", read_fix),
                         finding("host_tracing", 5_000_000.0, "train_step", "/w/sub/train_mlp.py:42",
                                 "The device waits. Move work out of the step.")]}
    assert session_verdict(data) == (
        "The devices were idle 98.0% of the time (9,800.0 ms of 10.00 s of device time). The biggest cause is "
        "host_tracing: 7,800.0 ms, 80% of the idle time, most of it at train_step (train_mlp.py:42). "
        "Fix: move work out of the step.")
    data["findings"] = data["findings"][:1]  # no finding of that cause: no line, no fix
    assert session_verdict(data).endswith("The biggest cause is host_tracing: 7,800.0 ms, 80% of the idle time.")
    assert session_verdict({**data, "device_idle_us": 0.0}) == "The devices were never idle in the analysed window."


def test_the_fix_is_the_advice_s_first_imperative_sentence_or_clause():
    from xlaprof.analysis.findings.advice import ADVICE, ADVICE_DEVICE_INDEX, ADVICE_READ_IN_LIBRARY, FindingKind

    assert fix_of(ADVICE[FindingKind.TRANSFER_FROM_DEVICE]).startswith("Keep the value on the device")
    assert fix_of(ADVICE[FindingKind.RECOMPILATION]).startswith("Pad inputs to a fixed shape")
    assert fix_of(ADVICE[FindingKind.HOST_BLOCKED]).startswith("Prepare batches ahead of the step")
    assert fix_of(ADVICE_DEVICE_INDEX).startswith("keep the index on the CPU at the call")
    assert fix_of(ADVICE_READ_IN_LIBRARY).startswith("turn the check off where the library has an option")
    fitted = ("torch_xla compiles one graph per distinct input shape: pad B to a fixed size or bucket it to a few "
              "sizes (multiples of 8: 40, 48, 56), so that a handful of graphs serve every step. Run the worker "
              "with XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 to name the line that creates each input.")
    assert fix_of(fitted).startswith("pad B to a fixed size")
    assert fix_of("Nothing to do here. It is fine.") == "It is fine."  # no imperative: the last sentence


def test_an_advice_without_a_fix_is_a_note():
    compile_advice = ("A graph was compiled here. One compile per distinct graph is expected while warming up; if it "
                      "recurs in steady state the graph is changing between steps.")
    data = {"device_busy_us": 900.0, "device_idle_us": 100.0, "idle_by_cause_us": {"compile": 100.0},
            "findings": [finding("compile", 100.0, "train_step", "/w/train.py:30", compile_advice)]}
    assert session_verdict(data).endswith(". Note: one compile per distinct graph is expected while warming up; if it "
                                          "recurs in steady state the graph is changing between steps.")


def test_the_session_page_tells_times_in_its_cards_format():
    data = {"device_busy_us": 200_000.0, "device_idle_us": 11_454_400.0, "idle_by_cause_us": {"host_tracing": 11_454_400.0},
            "findings": []}
    assert session_verdict(data).startswith("The devices were idle 98.3% of the time (11.45 s of 11.65 s")
    assert session_verdict(data, format_ms).startswith(
        "The devices were idle 98.3% of the time (11,454.4 ms of 11,654.4 ms of device time). "
        "The biggest cause is host_tracing: 11,454.4 ms")
