"""ab_harness.ForeignLoad on real processes: another process busy on a pinned core is seen, a quiet
machine is not. Measured in a child process, since pinning moves every thread of the process."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cpu_spinner import spinning
from tests.support.workloads.ab_harness import FOREIGN_MAX_SHARE

pytestmark = pytest.mark.exclusive  # it tells a busy core from an idle one

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEASURE = """
import sys, time
from tests.support.workloads import ab_harness
ab_harness.pin_host_and_device()
time.sleep(0.3)  # pinned
load = ab_harness.ForeignLoad()
load.start()
end = time.monotonic() + 1.0
while time.monotonic() < end:  # this process busy on its host core, as a workload is
    pass
print(load.share())
"""


def _foreign_share() -> float:
    done = subprocess.run([sys.executable, "-c", MEASURE], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two cores")
def test_another_process_busy_on_the_device_core_is_seen_and_the_workload_itself_is_not():
    device_core = sorted(os.sched_getaffinity(0))[1]
    alone = _foreign_share()  # its own busy host core is not another load (what else runs here may be)
    with spinning(device_core):
        beside = _foreign_share()
    assert beside - alone > max(0.5, 2 * FOREIGN_MAX_SHARE), (alone, beside)  # about a core, taken whole
