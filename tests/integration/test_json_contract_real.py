"""The JSON contract on a real capture of a real torch_xla worker, through the real CLI: every
frozen key a single worker can have is there, the worker metrics' included."""
from __future__ import annotations

import json

import pytest

from tests.support.contract import CONTRACT_KEYS, key_paths
from tests.support.workers import run_cli

pytestmark = pytest.mark.torch_xla
POD_ONLY = ("stragglers[]", "step_alignment[]")


def test_a_real_capture_has_every_contract_key(real_logdir):
    result = run_cli("analyze", real_logdir, "--json")
    assert result.returncode == 0, result.stderr
    expected = {k for k in CONTRACT_KEYS if not k.startswith(POD_ONLY)}
    assert expected <= key_paths(json.loads(result.stdout))
