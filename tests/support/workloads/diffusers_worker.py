"""Real third-party code: diffusers' UNet and DPM-Solver scheduler sampling on the CPU XLA device.

Run as ``python -m tests.support.workloads.diffusers_worker --port P --watch-stdin``. The models
are built from small configs with random weights (no hub downloads). Each sampling run calls
``scheduler.set_timesteps(..., device=xla)``, so the scheduler's first ``step`` looks its index up
on the device (``(schedule_timesteps == timestep).nonzero()`` then ``.item()``), as diffusers does
on an accelerator. No spans, no debug flags: only ``xlaprof.start_server``. With ``--unet-only``
(the A/B arm without the scheduler) the latents are updated on the device without
``scheduler.step``: the UNet alone, which reads no device value. Options for the A/B truth of the reads' cost:
- ``--pin-cores``, ``--alternate-reads`` (``ab_harness``): the host's Python and the CPU device's
  threads on separate cores; sampling runs alternating between the scheduler's index lookup on the
  device (the reads) and the fair counterfactual without them, each run a span named after its
  arm. The counterfactual is ``scheduler.set_begin_index(0)`` (what diffusers' pipelines call): the
  same device timesteps, UNet and scheduler math, but the first ``step`` takes its index from the
  host instead of looking it up on the device; the lookup's tensor work without its reads (the
  timestep moved, the comparison, a candidate taken) is traced apart, so the arms differ by the reads. (Timesteps on the CPU would change more than the
  read: the loop variable, the UNet's timestep input and the host's tracing all differ.)
"""
from __future__ import annotations

import os

from collectors.worker_protocol import announce_ready, watch_stdin, worker_parser
from tests.support.workloads import ab_harness

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

STEPS_PER_RUN = 4


def sample(args) -> None:
    import torch
    import torch_xla
    from diffusers import DPMSolverMultistepScheduler, UNet2DModel

    import xlaprof

    xlaprof.start_server(args.port)
    device = torch_xla.device()
    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(16, 32), norm_num_groups=8,
                       down_block_types=("DownBlock2D", "DownBlock2D"),
                       up_block_types=("UpBlock2D", "UpBlock2D")).to(device).eval()
    scheduler = DPMSolverMultistepScheduler(num_train_timesteps=1000)
    runs = 0
    with torch.no_grad():
        while True:
            with ab_harness.sampling_run(args, runs) as reads:
                scheduler.set_timesteps(args.steps_per_run, device=device)
                if not reads:
                    scheduler.set_begin_index(0)  # the counterfactual: the index from the host, no read
                    _lookup_without_reads(scheduler)
                latents = torch.randn(2, 3, 8, 8, device=device)
                for t in scheduler.timesteps:
                    noise = unet(latents, t).sample
                    if args.unet_only:
                        latents = latents - 0.1 * noise
                    else:
                        latents = scheduler.step(noise, t, latents).prev_sample  # USER CALL: scheduler.step
                    torch_xla.sync()
            runs += 1
            if runs == 2:
                announce_ready(args.port)


def _lookup_without_reads(scheduler) -> None:
    """The tensor work of the first step's index lookup (``_init_step_index``: the timestep moved to
    the schedule's device, ``index_for_timestep``: the comparison, a candidate taken) without its two
    reads (``.nonzero()``, ``.item()``): traced, never run, as the counterfactual's host work."""
    timestep = scheduler.timesteps[0].to(scheduler.timesteps.device)
    (scheduler.timesteps == timestep)[1]


def main(argv: list[str] | None = None) -> None:
    parser = worker_parser(__doc__.splitlines()[0])
    parser.add_argument("--unet-only", action="store_true", help="no scheduler.step: the A/B arm without its reads")
    parser.add_argument("--steps-per-run", type=int, default=STEPS_PER_RUN, help="denoising steps of a sampling run")
    ab_harness.add_options(parser)
    args = parser.parse_args(argv)
    watch_stdin(args)
    ab_harness.pin_if_asked(args)
    sample(args)


if __name__ == "__main__":
    main()
