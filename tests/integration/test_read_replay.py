"""The truth's arm without a library's reads (``tests.support.truth.read_replay``), on a real torch_xla
process: a replayed step gets its recorded values, reads nothing, and the device still runs its work."""
from __future__ import annotations

import textwrap

import pytest

from tests.integration.test_collectors import _run_script

pytestmark = pytest.mark.torch_xla

REPLAY_SCRIPT = textwrap.dedent('''
    import json, torch, torch_xla, torch_xla.debug.metrics as met, torch_xla.core.xla_model as xm
    from tests.support.truth.read_replay import ReadReplay, ReplayMismatch
    dev = torch_xla.device()
    x = torch.arange(12.0).reshape(3, 4).to(dev)

    def step(i):  # reads as a library does: a scalar, a data-dependent shape, a copy to the host
        y = x * (i + 1)
        total = y.sum().item()
        kept = (y > 10 * (i + 1)).nonzero()
        host = y[0].cpu()
        torch_xla.sync()
        return total, kept.shape[0], host.tolist(), y

    def reads():
        data = met.metric_data("TransferFromDeviceTime")
        return data[0] if data else 0

    replay = ReadReplay.install()
    with replay.recording(1):
        recorded = step(1)
    xm.wait_device_ops()  # an execution counts as it ends: the sync's runs on after the step returns
    before, executed = reads(), met.metric_data("ExecuteTime")[0]
    with replay.replaying(1):
        replayed = step(1)
    xm.wait_device_ops()
    after_reads, after_executed = reads(), met.metric_data("ExecuteTime")[0]
    mismatch = None
    try:
        with replay.replaying(1):
            x.nonzero()  # step 1 read a scalar first
    except ReplayMismatch as error:
        mismatch = str(error)
    kernel = lambda: repr(torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::_local_scalar_dense", "XLA"))
    installed = kernel()
    ReadReplay.uninstall()  # the kernels it stood in front of are back at work
    print(json.dumps({"recorded": recorded[:3], "replayed": replayed[:3], "replay_reads": after_reads - before,
                      "replay_executions": after_executed - executed, "y": replayed[3].cpu().tolist(),
                      "mismatch": mismatch, "kernels": [installed, kernel()], "after": x.sum().item()}))
''')


def test_a_replayed_step_gets_its_recorded_values_reads_nothing_and_still_runs_its_work(tmp_path):
    out = _run_script(tmp_path, "replay.py", REPLAY_SCRIPT)
    assert out["replayed"] == out["recorded"] == [132.0, 1, [0.0, 2.0, 4.0, 6.0]]
    assert out["replay_reads"] == 0  # every read answered from the recording
    assert out["replay_executions"] >= 1  # the step's sync still ran its graph
    assert out["y"] == [[0.0, 2.0, 4.0, 6.0], [8.0, 10.0, 12.0, 14.0], [16.0, 18.0, 20.0, 22.0]]
    assert out["mismatch"] == "a replayed step read with nonzero, its recording with _local_scalar_dense"
    installed, after = out["kernels"]
    assert "read_replay.py" in installed and "read_replay.py" not in after and out["after"] == 66.0
