"""The verdict of a diff leads with the idle cause that moved most, and tells the finding that moved
most after its own cause."""
from __future__ import annotations

from xlaprof.report.verdict import verdict

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
