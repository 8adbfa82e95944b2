"""The JSON contract does not move: every key frozen before the architecture change is still
in ``xlaprof analyze --json`` (more keys are welcome), on a synthetic pod that exercises them all
but the worker metrics (the integration tests check those on a real capture). Since issue 21 it is
versioned: ``schema_version``, times rounded to the nanosecond, paths relative to a stated
``source_root``, and valid against the schemas published in the package."""
from __future__ import annotations

import json

import jsonschema
import orjson

from tests.support.contract import CONTRACT_KEYS, key_paths
from tests.support.debug_samples import TEXT, debug_block
from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.synthetic import StepProgram, TrainingShape, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.compare.session_diff import diff_sessions
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.report import analysis_json, diff_json
from xlaprof.report.json_contract import SCHEMA_VERSION, Columns, Deferred, finalize, schema, write_compact
from xlaprof.report.json_report import write_analysis_json
from xlaprof.session import Session

NEEDS_METRICS = {k for k in CONTRACT_KEYS if k.startswith("metrics.")}


def test_every_contract_key_is_in_the_report(tmp_path):
    ops = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
    programs = [StepProgram(k, f"{k:032x}", mlp_module(k, 8 * k), ops) for k in (1, 2, 3) for _ in range(10)]
    run = write_session(str(tmp_path), "pod", {
        "w0_9012": training_capture(steps=30, devices=2, read_every=1, programs=programs, sampled=True),
        "w1_9012": training_capture(steps=30, devices=2, read_every=2, shape=TrainingShape(module_us=4000.0))})
    first_graph = debug_block("Compilation", "user torch_xla.sync", f"{1:032x}", ["step (/work/train.py:7)"])
    (tmp_path / "plugins" / "profile" / "pod" / "w0_9012.pt_xla_debug.txt").write_text(TEXT + first_graph)
    report = analysis_json(analyze(Session.load(run)))
    assert report["stragglers"] and report["execution_causes"] and report["compiles"]["trigger_by_span"]
    assert report["compiles"]["explained"] and report["graphs"][0]["ops"]
    assert report["idle_by_line"] and report["notes"]  # w0 has stacks, w1 none
    assert CONTRACT_KEYS - NEEDS_METRICS <= key_paths(json.loads(json.dumps(report)))


def test_key_paths_see_a_missing_key():
    report = {"compiles": {"count": 1, "by_span": {"train_step": 1}}, "gaps": [{"cause": "compile"}]}
    assert key_paths(report) == {"compiles", "compiles.count", "compiles.by_span", "compiles.by_span.*",
                                 "gaps", "gaps[].cause"}
    assert not CONTRACT_KEYS <= key_paths(report)


def _pod_report(tmp_path, **options) -> tuple[dict, object]:
    run = write_session(str(tmp_path), "pod", {
        "w0_9012": training_capture(steps=12, devices=2, read_every=1, recompile_every=4, sampled=True,
                                    script="/work/project/train.py"),
        "w1_9012": training_capture(steps=12, devices=2, read_every=2, script="/work/project/train.py")})
    analysis = analyze(Session.load(run))
    return analysis_json(analysis, **options), analysis


def _floats_under_us(value, time=False):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _floats_under_us(v, (time or k.endswith("_us")) and k != "relative")
    elif isinstance(value, list):
        for v in value:
            yield from _floats_under_us(v, time)
    elif isinstance(value, float) and time:
        yield value


def test_the_report_is_versioned_rounded_and_valid_against_the_published_schema(tmp_path):
    report, _ = _pod_report(tmp_path)
    assert list(report)[0] == "schema_version" and report["schema_version"] == SCHEMA_VERSION == "2.8"
    jsonschema.validate(json.loads(json.dumps(report)), schema("analysis"))
    times = list(_floats_under_us(report))
    assert len(times) > 100 and all(t == round(t, 3) for t in times)
    assert any(t != round(t) for t in times)  # rounded to the nanosecond, not to the microsecond


def test_paths_under_the_source_root_are_relative_to_it(tmp_path):
    absolute, _ = _pod_report(tmp_path / "a")
    relative, analysis = _pod_report(tmp_path / "b", source_root="/work/project")
    assert absolute["source_root"] is None and relative["source_root"] == "/work/project"
    assert relative["session"] == analysis.session.path  # the session's own path stays whole
    read = next(f for f in relative["findings"] if f["kind"] == "transfer_from_device")
    assert read["source"] == "train.py:57" and read["stack"][-1] == "train.py:57 log_loss"
    assert next(f for f in absolute["findings"] if f["kind"] == "transfer_from_device")["source"] == \
        "/work/project/train.py:57"
    assert "/work/project/" not in json.dumps({k: v for k, v in relative.items() if k != "source_root"})
    assert relative["transfers_from_device"]["by_source"] == {
        k.replace("/work/project/", ""): v for k, v in absolute["transfers_from_device"]["by_source"].items()}


def test_the_schema_lists_the_causes_of_the_code():
    for name in ("analysis", "diff"):
        defs = schema(name)["$defs"]
        assert defs["cause"]["enum"] == [c.value for c in CAUSES], (
            f"{name}.schema.json: make $defs.cause and $defs.idle_by_cause.required the causes of "
            f"xlaprof.analysis.idle.attribution.CAUSES, and raise SCHEMA_VERSION's minor number")
        assert sorted(defs["idle_by_cause"]["required"]) == sorted(c.value for c in CAUSES)


def test_a_diff_is_versioned_and_valid_against_the_published_schema(tmp_path):
    before = write_session(str(tmp_path), "before", {"w_9012": training_capture(steps=20, devices=2, read_every=1)})
    after = write_session(str(tmp_path), "after", {"w_9012": training_capture(steps=20, devices=2, read_every=0)})
    data = diff_json(diff_sessions(analyze(Session.load(before)), analyze(Session.load(after))))
    assert data["schema_version"] == SCHEMA_VERSION and data["findings"]
    jsonschema.validate(json.loads(json.dumps(data)), schema("diff"))
    assert all(t == round(t, 3) for t in _floats_under_us(data))


def test_the_streamed_report_is_the_finalized_report_byte_for_byte(tmp_path):
    report, analysis = _pod_report(tmp_path, source_root="/work/project")
    pieces: list[bytes] = []
    write_analysis_json(analysis, pieces.append, source_root="/work/project")
    assert len(pieces) > 10  # written a piece at a time
    assert b"".join(pieces) == orjson.dumps(report, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)
    assert [len(rows) for rows in report["steps"].values()] == [len(w.steps) for w in analysis.summaries]


def test_columns_and_deferred_maps_take_the_contract_form_of_their_rows():
    rows = {"step": [1, 2], "name": ["/src/a.py:3", "b"], "wall_us": [1.23456, float("nan")],
            "share": [0.1234567890123456, float("inf")], "idle_by_cause_us": {"compile": [2.00049, 3.0]}}
    as_rows = [{k: v[i] for k, v in rows.items() if k != "idle_by_cause_us"} |
               {"idle_by_cause_us": {"compile": rows["idle_by_cause_us"]["compile"][i]}} for i in range(2)]
    data = {"session": "/src/s", "steps": Deferred(lambda: iter([("w0", Columns(rows)), ("/src/w1", [])])),
            "total_us": 0.0004}
    plain = {"session": "/src/s", "steps": {"w0": as_rows, "/src/w1": []}, "total_us": 0.0004}
    formed = finalize(data, "/src")
    assert json.dumps(formed) == json.dumps(finalize(plain, "/src"))
    assert formed["steps"]["w0"][0] == {"step": 1, "name": "a.py:3", "wall_us": 1.235, "share": 0.123456789012,
                                        "idle_by_cause_us": {"compile": 2.0}}
    assert list(formed["steps"]) == ["w0", "w1"]
    pieces: list[bytes] = []
    write_compact(data, pieces.append, "/src")
    assert b"".join(pieces) == orjson.dumps(formed, option=orjson.OPT_APPEND_NEWLINE)


def test_a_deferred_map_is_made_an_entry_at_a_time_as_it_is_written():
    events: list[str] = []

    def entries():
        for k in ("a", "b", "c"):
            events.append(f"made {k}")
            yield k, [1.0]
    write_compact({"per_worker": Deferred(entries)}, lambda piece: events.append(piece.decode()))
    made = [i for i, e in enumerate(events) if e.startswith("made")]
    written = [i for i, e in enumerate(events) if e.endswith(":[1.0]")]
    assert len(made) == len(written) == 3
    assert all(m < w < n for m, w, n in zip(made, written, made[1:] + [len(events)]))  # each written before the next is made
