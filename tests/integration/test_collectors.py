"""The worker-side API in real torch_xla processes on the CPU device: spans, steps, profile,
start_server. Each test runs its own Python process, as a user's script would."""
from __future__ import annotations

import json
import socket
import subprocess
import textwrap

import pytest

from tests.support.workers import SYNC_COUNTS, run_python
from xlaprof.session import Session
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import stat_text

pytestmark = pytest.mark.torch_xla

SPAN_SCRIPT = textwrap.dedent('''
    import json, sys, torch, torch_xla, xlaprof
    dev = torch_xla.device()

    @xlaprof.trace("outer_fn")
    def outer(x):
        with xlaprof.trace("inner", tag="a", level=3):
            y = x * 2
            torch_xla.sync()  # a sync inside nested spans must work
        return y

    with xlaprof.profile(sys.argv[1], name="inproc") as run:
        for i in range(3):
            with xlaprof.step(i):
                outer(torch.ones(4, device=dev))
                torch_xla.sync()
    print(json.dumps({"path": run.path}))
''')


def _lines_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _script_process(tmp_path, name: str, text: str) -> subprocess.CompletedProcess:
    """Run ``text`` as the script ``name`` with a logdir argument, as a user would; it succeeded."""
    script = tmp_path / name
    script.write_text(text)
    result = run_python(f"import runpy, sys; sys.argv = [{name!r}, {str(tmp_path / 'logs')!r}]; "
                        f"runpy.run_path({str(script)!r}, run_name='__main__')")
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def _run_script(tmp_path, name: str, text: str) -> dict:
    """``_script_process``'s last stdout line, which is JSON."""
    return json.loads(_script_process(tmp_path, name, text).stdout.strip().splitlines()[-1])


def test_spans_steps_and_profile_record_names_sources_and_nesting(tmp_path):
    session = Session.load(_run_script(tmp_path, "train.py", SPAN_SCRIPT)["path"])
    script = tmp_path / "train.py"
    assert session.manifest["status"] == "complete" and session.manifest["kind"] == "in-process"
    from xlaprof.analysis.host.span_index import SpanIndex

    spans = SpanIndex.from_plane(session.workers[0].space.plane("/host:CPU"))
    by_name = {}
    for i, name in enumerate(spans.name):
        by_name.setdefault(name, []).append(i)
    assert len(by_name["train_step"]) == 3 and sorted(spans.step[by_name["train_step"]]) == [0, 1, 2]
    assert len(by_name["outer_fn"]) == 3 and len(by_name["inner"]) == 3
    text = SPAN_SCRIPT
    decorator_line = _lines_of(text, '@xlaprof.trace("outer_fn")')
    assert spans.source[by_name["outer_fn"][0]] == f"{script}:{decorator_line}"
    inner_line = _lines_of(text, 'xlaprof.trace("inner"')
    assert spans.source[by_name["inner"][0]] == f"{script}:{inner_line}"
    assert spans.source[by_name["train_step"][0]] == f"{script}:{_lines_of(text, 'xlaprof.step(i)')}"
    for i in by_name["inner"]:  # inner in outer_fn in the step
        outer = spans.parent[i]
        assert spans.name[outer] == "outer_fn" and spans.name[spans.parent[outer]] == "train_step"
    # the metrics sampler left snapshots in the window
    assert session.workers[0].manifest["metrics"]["snapshots"] >= 2


NO_SYNC_SCRIPT = SYNC_COUNTS + textwrap.dedent('''
    import contextlib, json, sys, torch, torch_xla, xlaprof
    dev = torch_xla.device()
    x = torch.randn(16, 16, device=dev)

    def loop(spans):
        span = (lambda name: xlaprof.trace(name)) if spans else (lambda name: contextlib.nullcontext())
        before = counts()
        for i in range(5):
            with (xlaprof.step(i) if spans else contextlib.nullcontext()):
                with span("fwd"):
                    with span("inner"):
                        y = (x @ x).relu().sum()
                torch_xla.sync()
        after = counts()
        return [a - b for a, b in zip(after, before)]

    with xlaprof.profile(sys.argv[1]):
        plain, traced = loop(False), loop(True)
    print(json.dumps({"plain": plain, "traced": traced}))
''')


def test_spans_add_no_device_transfer_and_no_mark_step(tmp_path):
    counts = _run_script(tmp_path, "nosync.py", NO_SYNC_SCRIPT)
    assert counts["plain"][1] == 5  # five syncs happened, so the counters are live
    assert counts["traced"] == counts["plain"]


READ_MARK_SCRIPT = SYNC_COUNTS + textwrap.dedent('''
    import json, os, sys, tempfile, torch, torch_xla, xlaprof
    import torch_xla.core.xla_model as xm
    dev = torch_xla.device()
    saved = os.path.join(tempfile.mkdtemp(), "state.pt")

    def reads(seed):
        torch.manual_seed(seed)
        w = torch.randn(8, 8).to(dev).requires_grad_()
        loss = (w @ w).relu().sum()
        before = counts()
        found = [loss.item(),  # READ 1
                 bool((w > 0).any()),  # READ 2
                 (w > 0).nonzero().shape[0],  # READ 3
                 torch.equal(w, w),  # READ 4
                 torch.unique((w > 0).int()).numel()]  # READ 5
        with torch.inference_mode():
            found.append(w.detach().sum().item())  # READ 6
        found.append(torch.masked_select(w, w > 0).shape[0])  # READ 7
        found.append(list(torch.isin((w > 0).int(), torch.ones(1, dtype=torch.int32).to(dev)).shape))  # READ 8
        found.append(round(float(w.detach().cpu().sum()), 4))  # READ 9: a copy to the CPU
        found.append(str(w.to(torch.bfloat16).dtype))  # a copy on the device: no read, no mark
        xm.save({"w": w.detach()}, saved)  # READ 10: torch_xla's bindings, not the dispatcher
        found.append(round(float(torch.load(saved)["w"].sum()), 4))
        found.append(list(torch._weight_norm(w, torch.ones(8, 1).to(dev)).shape))  # READ 11: an op of the CPU fallback
        loss.backward()  # the reads left autograd as it was
        torch_xla.sync()
        found.append(w.grad.sum().item())
        return found, [a - b for a, b in zip(counts(), before)]

    plain = reads(0)
    with xlaprof.profile(sys.argv[1], name="marked") as run:
        marked = reads(0)
    print(json.dumps({"plain": plain, "marked": marked, "path": run.path}))
''')


def test_reading_ops_mark_their_calls_and_change_nothing_else(tmp_path):
    out = _run_script(tmp_path, "reads.py", READ_MARK_SCRIPT)
    assert out["marked"] == out["plain"]  # the same values and gradient, the same transfers and syncs
    assert out["plain"][1][0] >= 6  # the reads did transfer, so the counters are live
    plane = Session.load(out["path"]).workers[0].space.plane(vocabulary.HOST_PLANE)
    rows = plane.rows_named({vocabulary.READ_CALL_EVENT})
    stacks = plane.stats.column(vocabulary.PY_READ_STACK_STAT)
    script = str(tmp_path / "reads.py")
    # Each mark's stack, at its innermost frame in the script: the read's own line (torch.unique's reads
    # come from torch/functional.py, called from the script's line).
    callers = [next(frame for frame in reversed(stat_text(stacks[int(r)]).splitlines()) if frame.startswith(script))
               for r in rows]
    lines = [_lines_of(READ_MARK_SCRIPT, f"# READ {k}") for k in range(1, 12)] + [_lines_of(READ_MARK_SCRIPT, "w.grad")]
    assert callers == [f"{script}:{line} reads" for line in lines], callers


# Defines xla_kernel(): where the dispatcher's active XLA kernel of _local_scalar_dense was registered.
XLA_KERNEL = textwrap.dedent('''
    import torch

    def xla_kernel():
        (active,) = [line for line in torch._C._dispatch_dump("aten::_local_scalar_dense").splitlines()
                     if line.startswith("XLA:")]
        return active.split(" :: ")[0]
''')
UNINSTALL_SCRIPT = XLA_KERNEL + textwrap.dedent('''
    import json, torch, torch_xla
    from collectors import read_calls

    own_kernel, own_binding = xla_kernel(), torch_xla._XLAC._xla_get_cpu_tensors
    t = torch.ones((), device=torch_xla.device()) * 3
    states = []
    for _ in range(2):
        read_calls.install()
        states.append([xla_kernel() == own_kernel, torch_xla._XLAC._xla_get_cpu_tensors is own_binding, t.item()])
        read_calls.uninstall()
        states.append([xla_kernel() == own_kernel, torch_xla._XLAC._xla_get_cpu_tensors is own_binding, t.item()])
    print(json.dumps(states))
''')


def test_the_marks_come_off_and_go_back_on(tmp_path):
    states = _run_script(tmp_path, "uninstall.py", UNINSTALL_SCRIPT)
    marked, plain = [False, False, 3.0], [True, True, 3.0]
    assert states == [marked, plain, marked, plain]


STACK_HZ_0_SCRIPT = XLA_KERNEL + textwrap.dedent('''
    import json, sys, tempfile, torch, torch_xla, xlaprof

    def marked():  # whether the active XLA kernel of _local_scalar_dense is xlaprof's
        return "read_calls.py" in xla_kernel()

    states = []
    with tempfile.TemporaryDirectory() as logdir, xlaprof.profile(logdir, stack_hz=0):
        states.append(marked())
    port = xlaprof.start_server(0, stack_hz=0)
    states.append(marked())
    xlaprof.start_server(port, stack_hz=500)  # the running server samples from now on, and marks
    states.append(marked())
    print(json.dumps(states))
''')


def test_stack_hz_0_leaves_the_reads_unmarked_and_a_rate_marks_them(tmp_path):
    assert _run_script(tmp_path, "stack_hz_0.py", STACK_HZ_0_SCRIPT) == [False, False, True]


def test_start_server_is_idempotent_and_names_a_taken_port():
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        code = textwrap.dedent(f'''
            import xlaprof
            from xlaprof.errors import XlaprofError
            port = xlaprof.start_server(0)
            assert xlaprof.start_server(port) == port and xlaprof.start_server(0) == port
            try:
                xlaprof.start_server(port + 1)
            except XlaprofError as exc:
                print("second:", exc)
            import collectors.server as server
            server._server = None  # as if in a fresh process, to try the taken port
            try:
                xlaprof.start_server({busy})
            except XlaprofError as exc:
                print("taken:", exc)
        ''')
        result = run_python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "second: the profiler server already runs on port" in result.stdout
    assert f"taken: port {busy} is already in use" in result.stdout
