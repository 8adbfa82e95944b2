"""The JSON contract on a real capture of a real torch_xla worker, through the real CLI: every
frozen key a single worker can have is there, the worker metrics' included; and the versioned
contract (issue 21): ``analyze --json`` and ``diff --json`` of real captures are valid against
the published schemas, with paths under the CLI's directory relative to it."""
from __future__ import annotations

import json

import jsonschema
import pytest

from tests.support.contract import CONTRACT_KEYS, key_paths
from tests.support.workers import REPO, run_cli
from xlaprof.report.json_contract import SCHEMA_VERSION, schema

pytestmark = pytest.mark.torch_xla
POD_ONLY = ("stragglers[]", "step_alignment[]")


def test_a_real_capture_has_every_contract_key(real_logdir):
    result = run_cli("analyze", real_logdir, "--json")
    assert result.returncode == 0, result.stderr
    expected = {k for k in CONTRACT_KEYS if not k.startswith(POD_ONLY)}
    assert expected <= key_paths(json.loads(result.stdout))


def test_real_reports_are_versioned_relative_and_valid_against_the_published_schemas(real_logdir):
    report = json.loads(run_cli("analyze", real_logdir, "--json").stdout)
    jsonschema.validate(report, schema("analysis"))
    assert report["schema_version"] == SCHEMA_VERSION and report["source_root"] == REPO  # the CLI's directory
    read = next(f for f in report["findings"] if f["kind"] == "transfer_from_device")
    assert read["source"].startswith("collectors/demo_worker.py:"), read["source"]  # under the root: relative
    assert all(not frame.startswith(REPO) for f in report["findings"] for frame in f["stack"])
    diff = run_cli("diff", real_logdir, real_logdir, "--json")
    assert diff.returncode == 0, diff.stderr
    data = json.loads(diff.stdout)
    jsonschema.validate(data, schema("diff"))
    assert data["schema_version"] == SCHEMA_VERSION and REPO + "/" not in data["verdict"]
