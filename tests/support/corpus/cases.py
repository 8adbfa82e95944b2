"""The corpus' cases: each a workload module with its arguments, the steps to warm up and to record,
and what the truth accepts (written from the workload and torch_xla's counters, not from xlaprof's
output).

``ACCEPTED_FIXES``: per cause, words of which one must be in the advice of the report's top finding of
the workload's dominant cause (by the truth): the fixes that remove that cause, whatever the
workload; ``Case.fixes`` adds the case's own (cause -> words). ``Case.without_reads``: for a case whose
reads can be taken out with the rest unchanged, the arguments of that A/B arm (the truth's read
cost is what the arm saves: ``tests.support.truth.runner``'s ``ab`` mode), or ``REPLAYED_READS``
where the reads are a library's: the same steps, each read answered from a recording of the window
(``tests.support.truth.read_replay``).
``Case.unfit``: words of advice that would not remove the case's cause (padding the inputs where the
sizes are the device's data): the top finding's advice must hold none. ``Case.changed``: for a case
whose shapes change, the values the recompile explanation must name (e.g. the latent width 16 and 24).
``Case.slow_compiles``: compiles of about a minute a process, which the suite captures compiled
without LLVM's optimizations (``tests.support.truth.corpus_run``). ``Case.bench_only``: a case that
``bench/bench_truth.py`` scores and the suite does not (``SUITE_CASES``), to keep the suite within
its time. Cases run in this order in one
process per mode and capture group (``tests.support.truth.runner``, ``corpus_run``).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    name: str
    module: str
    args: tuple[str, ...] = ()
    warm: int = 2
    window: int = 4
    fixes: dict = field(default_factory=dict)  # cause -> accepted words, beside ACCEPTED_FIXES
    changed: tuple[str, ...] = ()
    without_reads: tuple[str, ...] | None = None  # the arguments of the A/B arm without the reads
    slow_compiles: bool = False  # compiles of about a minute a process: the suite compiles them fast
    bench_only: bool = False  # scored by bench/bench_truth.py only (the suite's time has no room for it)
    unfit: tuple[str, ...] = ()  # words of advice that would not remove the cause: the advice must not hold them

    @property
    def module_path(self) -> str:
        return f"tests.support.corpus.{self.module}"


ACCEPTED_FIXES = {
    # A graph per shape: fewer shapes (bucketing, padding, a static cache) or marked dynamic dimensions.
    "compile": ("bucket", "pad", "static", "mark_dynamic"),
    # A host wait on a device value: read less often, later (a step closure), or keep it on the device.
    "transfer_from_device": ("less often", "every N", "step closure", "add_step_closure", "on the device"),
    # The host's Python is the bottleneck: trace once (torch_xla.compile), or give the device more per step.
    "host_tracing": ("torch_xla.compile", "larger batch", "more work per step"),
    # Waiting for input: more loader workers, prefetching, or a faster collate.
    "host_blocked": ("num_workers", "prefetch", "DataLoader"),
}
# A compile that happens once per line (warming up) is fixed by nothing in the step: it is expected,
# or saved across runs by torch_xla's persistent compilation cache.
ONE_OFF_COMPILE_FIXES = ("warming up", "initialize_cache", "persistent")
NO_READS = ("--no-reads",)
REPLAYED_READS = ("<replayed reads>",)  # not arguments: the runner replays the window's reads
# Windows of a few short steps last 0.4-0.9 s: a window of 0.1 s moved a cause's share by 10-15 points
# between runs on a loaded host (a 15 ms stall is a tenth of it); an A/B block repeats its case's window
# to last at least runner.AB_BLOCK_S, so a window much longer than that only makes each block longer.
# compiled_step's is the longest: at 160 steps (0.5 s) its arm could not resolve its 6% read saving.
CASES: tuple[Case, ...] = (
    Case("print_logging", "print_logging", window=36, without_reads=NO_READS),
    Case("step_closure", "step_closure", window=160, without_reads=NO_READS),
    Case("async_closure", "step_closure", ("--async",), window=450, without_reads=NO_READS, bench_only=True),
    Case("logger_thread", "logger_thread", window=450, without_reads=NO_READS, bench_only=True),
    Case("compiled_step", "compiled_step", window=256, without_reads=NO_READS),
    Case("dynamic_shapes", "dynamic_shapes"),
    Case("fallback_backward", "fallback_backward", window=96, fixes={"transfer_from_device": ("fallback", "lowering")},
         without_reads=NO_READS),
    Case("growing_batch", "growing_batch", warm=1, window=6, changed=("40", "48")),
    Case("grad_accum", "grad_accum", warm=1, window=3),
    Case("text_to_image", "text_to_image", warm=0, window=4, changed=("16", "24"), slow_compiles=True),
    Case("generate_growing", "generate", warm=1, window=3, changed=("7", "8", "9")),
    Case("generate_static", "generate", ("--static",), warm=1, window=12, without_reads=REPLAYED_READS),
    # Its step's graph gains the optimizer's state over steps 2-5, each graph compiled once (PT_XLA_DEBUG_LEVEL=2).
    Case("ctc_speech", "ctc_speech", window=20, fixes={"compile": ("warming up",)}, bench_only=True),
    Case("input_bound", "input_bound", warm=2, window=16),
    Case("dynamic_padding", "dynamic_padding", warm=3, window=8, changed=("26", "30"), bench_only=True),
    Case("checkpointed", "checkpointed", warm=6, window=20, bench_only=True),
    Case("train_eval", "train_eval", warm=8, window=16, without_reads=NO_READS, bench_only=True),
    Case("dynamo_encoder", "dynamo_encoder", warm=3, window=6, changed=("24", "32")),
    Case("resnet_loader", "resnet_loader", warm=4, window=12, without_reads=NO_READS, bench_only=True),
    Case("checkpoint_best", "checkpoint_best", warm=3, window=8, without_reads=NO_READS, bench_only=True),
    Case("amp_scaler", "amp_scaler", warm=3, window=8, without_reads=NO_READS, bench_only=True),
    Case("lstm_tagger", "lstm_tagger", warm=1, window=6, changed=("16", "20"), bench_only=True),
    Case("seq2seq_generate", "seq2seq_generate", warm=1, window=3, changed=("11", "12", "13"), bench_only=True),
    Case("input_workers", "input_bound", ("--workers",), warm=2, window=16, bench_only=True),
    Case("multiscale_vision", "multiscale_vision", warm=1, window=6, changed=("32", "48"), bench_only=True),
    Case("grad_clip_guard", "grad_clip_guard", warm=3, window=8, without_reads=NO_READS, bench_only=True),
    Case("hf_trainer", "hf_trainer", warm=1, window=1, bench_only=True),
    Case("running_metrics", "running_metrics", warm=3, window=8, without_reads=NO_READS, bench_only=True),
    Case("mid_step_log", "mid_step_log", warm=3, window=12, without_reads=NO_READS, bench_only=True),
    # Each step compiles 6 graphs of new expert token counts (about 13 s a step): a short window.
    # Its sizes are the router's counts: padding the step's inputs changes nothing.
    Case("moe_experts", "moe_experts", warm=1, window=2, fixes={"compile": ("batched_mm", "fixed-shape")},
         unfit=("pad to", "bucket them", "bucket it"), bench_only=True),
    Case("moe_batched", "moe_experts", ("--batched",), warm=3, window=12, bench_only=True),
    Case("accelerate_loop", "accelerate_loop", warm=3, window=24, without_reads=NO_READS, bench_only=True),
    Case("generate_sampled", "generate", ("--static", "--sample"), warm=1, window=12, without_reads=REPLAYED_READS,
         bench_only=True),
    Case("tokenizing_loader", "tokenizing_loader", warm=3, window=24, fixes={"host_tracing": ("num_workers",)},
         bench_only=True),
    Case("last_batch", "last_batch", warm=0, window=12, changed=("16", "8"), fixes={"compile": ("drop_last",)},
         bench_only=True),
    Case("policy_rollout", "policy_rollout", warm=2, window=8, without_reads=REPLAYED_READS, bench_only=True),
    Case("generate_beams", "generate", ("--static", "--beams"), warm=1, window=12, without_reads=REPLAYED_READS,
         bench_only=True),
)
BY_NAME = {case.name: case for case in CASES}
SUITE_CASES = tuple(case.name for case in CASES if not case.bench_only)
