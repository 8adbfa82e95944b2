"""The truth of where diffusers' DPM-Solver index lookup reads: run as
``python -m tests.support.workloads.dpm_lookup_reads``, it looks a device timestep up as the
scheduler's first ``step`` does (``index_for_timestep`` on a device schedule) and prints, as JSON, the
reads (torch_xla's TransferFromDeviceTime samples) made while each of that function's lines ran:
``{"file": ..., "reads": [[line, count], ...]}`` in the order the lines ran. A line tracer on that
function's frame alone: it reads a metric, never a tensor, and nothing else is traced."""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("PJRT_DEVICE", "CPU")


def main() -> None:
    import torch_xla
    import torch_xla.debug.metrics as metrics
    from diffusers import DPMSolverMultistepScheduler

    def reads_so_far() -> int:
        data = metrics.metric_data("TransferFromDeviceTime")
        return data[0] if data else 0

    scheduler = DPMSolverMultistepScheduler(num_train_timesteps=1000)
    scheduler.set_timesteps(4, device=torch_xla.device())
    timestep = scheduler.timesteps[0]
    torch_xla.sync()
    lookup = type(scheduler).index_for_timestep.__code__
    reads: list[list[int]] = []
    state = {"line": None, "before": 0}

    def on_line(frame, event, arg):
        if event in ("line", "return"):
            now = reads_so_far()
            if state["line"] is not None:
                reads.append([state["line"], now - state["before"]])
            state["line"], state["before"] = (frame.f_lineno if event == "line" else None), now
        return on_line

    def on_call(frame, event, arg):
        return on_line if frame.f_code is lookup else None

    sys.settrace(on_call)
    scheduler.index_for_timestep(timestep)
    sys.settrace(None)
    print(json.dumps({"file": lookup.co_filename, "reads": [pair for pair in reads if pair[1]]}))


if __name__ == "__main__":
    main()
