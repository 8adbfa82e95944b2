"""A worker's summary crosses to the session (or from a Dask task) as typed, picklable records:
its idle cost groups are ``CostGroup``s, which merge into the session's costs after a pickle round trip."""
from __future__ import annotations

import pickle

import pytest

from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.idle.idle_costs import CostGroup, cause_costs, merge_cost_groups
from xlaprof.analysis.pipeline.worker_summary import summarize_worker
from xlaprof.session import Session


def test_cost_groups_are_named_records_that_survive_a_pickle_and_merge_as_in_process(tmp_path):
    run = write_session(str(tmp_path), "run", {"w0_9012": training_capture(steps=12, devices=2, sampled=True)})
    (worker,) = analyze(Session.load(run)).workers
    groups = pickle.loads(pickle.dumps(summarize_worker(worker, top_gaps=5))).cost_groups
    assert groups and all(isinstance(g, CostGroup) for g in groups)
    assert sum(g.idle_us for g in groups) == pytest.approx(worker.idle_us)
    assert any(g.source == "train.py:57" and g.stack is not None and g.stack.source == g.source for g in groups)
    assert merge_cost_groups([groups], [worker.worker.label]) == cause_costs([worker])
