"""A diffusion-style sampling loop on the CPU XLA device that calls a library-like scheduler.

Run as ``python -m tests.support.workloads.denoise_worker --port P --watch-stdin [options]``.
Per step: a small denoiser on the device, then ``TinyScheduler.step`` (which reads device values
unless ``--no-scheduler-reads``), then a sync (``torch_xla.sync()``, or ``xp.StepTrace``'s own on
its exit). Options:
- ``--server xlaprof|xp``: the profiler server of ``xlaprof.start_server`` (with the stack
  sampler) or torch_xla's own ``xp.start_server`` (no sampler: the analysis must degrade).
- ``--spans none|xp``: no spans at all, or torch_xla's own ``xp.StepTrace``/``xp.Trace``.
- ``--closure-every N``: every N steps, read the latents' norm in a step closure
  (``xm.add_step_closure``), the torch_xla examples' logging pattern.
- ``--stack-hz``: the sampler's rate (``xlaprof.start_server(stack_hz=...)``).
- ``--host-work-ms``: host-side work that uses no CPU (a sleep) after the scheduler, before the
  sync: the device overlaps it unless a read made the host wait for the device first. It makes
  the A/B truth of the reads' cost stand out from CPU contention (the CPU device and the host
  share the cores).
- ``--pin-cores``, ``--alternate-reads`` (``ab_harness``): the host's Python and the CPU device's
  threads on separate cores; sampling runs alternating between the reads (the scheduler's, the
  closures) and none, their steps named after the arm: the A/B truth of the reads' cost in step time.
"""
from __future__ import annotations

import contextlib
import os
import time

from collectors.worker_protocol import announce_ready, watch_stdin, worker_parser
from tests.support.workloads import ab_harness

os.environ.setdefault("PJRT_DEVICE", "CPU")

STEPS_PER_RUN = 10
LOGGED: list[float] = []


def log_norm(latents) -> None:
    LOGGED.append(latents.norm().item())  # the closure's read


def sample(args) -> None:
    import torch
    import torch_xla
    import torch_xla.debug.profiler as xp

    from tests.support.workloads.tiny_scheduler import TinyScheduler

    if args.server == "xp":
        server = xp.start_server(args.port)  # noqa: F841 (the server lives as long as this reference)
    else:
        import xlaprof
        xlaprof.start_server(args.port, stack_hz=args.stack_hz)
    device = torch_xla.device()
    torch.manual_seed(0)
    denoiser = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 256)).to(device)
    scheduler = TinyScheduler(reads=args.scheduler_reads)
    step = run = 0
    while True:
        with ab_harness.sampling_run(args, run) as reads:
            scheduler.reads = reads and args.scheduler_reads
            step = sample_run(args, scheduler, denoiser, reads, step)
        run += 1


def sample_run(args, scheduler, denoiser, reads: bool, step: int) -> int:
    """One sampling run of ``STEPS_PER_RUN`` steps from ``step`` on; the next step's number."""
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.profiler as xp

    spans = args.spans == "xp"
    device = torch_xla.device()
    scheduler.set_timesteps(STEPS_PER_RUN, device)
    latents = torch.randn(256, 256, device=device)
    for k, t in enumerate(scheduler.timesteps):
        # xp.StepTrace syncs when it exits (a sync inside xp.Trace fails: it holds an IR scope).
        with xp.StepTrace("denoise", step_num=step) if spans else contextlib.nullcontext():
            with xp.Trace("unet") if spans else contextlib.nullcontext():
                noise = denoiser(latents)
            with xp.Trace("scheduler_step") if spans else contextlib.nullcontext():
                latents = scheduler.step(noise, t, latents)
            if args.host_work_ms:
                time.sleep(args.host_work_ms / 1000)  # host-side work before the step's sync
        if not spans:
            torch_xla.sync()
        # A closure runs at the next sync: none from a run's last step, which would run in the next run.
        if reads and args.closure_every and step % args.closure_every == 0 and k < STEPS_PER_RUN - 1:
            xm.add_step_closure(log_norm, (latents,))
        step += 1
        if step == 2 * STEPS_PER_RUN:
            announce_ready(args.port)
    return step


def main(argv: list[str] | None = None) -> None:
    parser = worker_parser(__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("xlaprof", "xp"), default="xlaprof")
    parser.add_argument("--spans", choices=("none", "xp"), default="none")
    parser.add_argument("--no-scheduler-reads", dest="scheduler_reads", action="store_false")
    parser.add_argument("--closure-every", type=int, default=0)
    parser.add_argument("--stack-hz", type=int, default=1000)
    parser.add_argument("--host-work-ms", type=float, default=0.0,
                        help="host work (a sleep: no CPU) after the scheduler, before the sync")
    ab_harness.add_options(parser)
    args = parser.parse_args(argv)
    watch_stdin(args)
    ab_harness.pin_if_asked(args)
    sample(args)


if __name__ == "__main__":
    main()
