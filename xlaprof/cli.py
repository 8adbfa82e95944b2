"""The ``xlaprof`` command line: a thin layer, one library call per subcommand.

Contract: ``main(argv)`` returns the exit code: 0 on success, 1 when ``diff --fail-if`` finds a
budget exceeded (one line per exceeded budget on stderr), 2 on bad input, a malformed budget or
an unreachable worker (one clear line on stderr, no traceback), 3 when a multi-worker capture is
partial, 130 on Ctrl-C (SIGINT) and 143 on SIGTERM, each after "xlaprof: interrupted" and after
the command's own cleanup (a capture removes what it staged; a session already renamed into place
is whole and kept). The first signal interrupts; later ones, and any after the command finished,
are ignored, so cleanup is never cut short and the process never dies by the signal.
``build_parser()`` documents every subcommand (``xlaprof <cmd> --help``), each option with its
default. JSON goes out compact through orjson (the same keys and values as ``json.dumps``),
indented on a terminal or with ``--indent N``. The read limits (``--max-capture-size``,
``--remote-timeout``) are handed on through the environment (``XLAPROF_MAX_CAPTURE_SIZE``,
``XLAPROF_REMOTE_TIMEOUT``), so every process that reads for the command obeys them.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from xlaprof import cli_options as options
from xlaprof._version import __version__
from xlaprof.errors import XlaprofError
from xlaprof.interrupts import Interrupted, Signals

EXIT_OK, EXIT_BUDGET_EXCEEDED, EXIT_BAD_INPUT, EXIT_PARTIAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_TERMINATED = 143  # 128 + SIGTERM
DEFAULT_LOGDIR = "xlaprof-logs"
# The environment variables the read limits travel in (xlaprof.session.model, xlaprof.session.storage).
CAPTURE_SIZE_ENV, REMOTE_TIMEOUT_ENV = "XLAPROF_MAX_CAPTURE_SIZE", "XLAPROF_REMOTE_TIMEOUT"
DASK_TIMEOUT_ENV = "XLAPROF_DASK_TIMEOUT"  # the Dask scheduler's connect timeout (xlaprof.dask_tasks checks it)


class _Deprecated(argparse.Action):
    """An old spelling of an option: works as ``dest`` does, with a note on stderr; not in ``--help``
    (the README names it)."""

    def __init__(self, option_strings, dest, replacement: str, **kwargs) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.replacement = replacement

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"xlaprof: note: {option_string} is deprecated here; use {self.replacement}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _add_read_limits(parser: argparse.ArgumentParser, *, captures: bool = True) -> None:
    if captures:
        parser.add_argument("--max-capture-size", type=options.size, default=None, metavar="SIZE",
                            help=f"refuse capture files larger than this, e.g. 16GiB (default: 8GiB, "
                                 f"or {CAPTURE_SIZE_ENV})")
    parser.add_argument("--remote-timeout", type=options.seconds, default=None, metavar="SECONDS",
                        help=f"give up on a remote logdir (gs://...) that does not answer within this "
                             f"(default: 20, or {REMOTE_TIMEOUT_ENV})")


def _add_json_output(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=what)
    parser.add_argument("--indent", type=options.indent, default=None, metavar="N",
                        help=f"indent the JSON by N spaces, at most {options.MAX_INDENT} "
                             f"(default: 2 on a terminal, else compact)")


class _HelpWithDefaults(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already says it in words."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS or "default" in text:
            return text
        default = action.default
        shown = "off" if default is False else "none" if default is None else "%(default)s"
        return f"{text} (default: {shown})"


class _HelpWithExamples(_HelpWithDefaults, argparse.RawDescriptionHelpFormatter):
    """Defaults shown, and the description and examples kept as written."""


DIFF_HELP = """\
Compare two sessions of the same job: BEFORE and AFTER are each a session directory, a logdir
(its newest session) or one .xplane.pb file. The report leads with the verdict: the change of
the median step time with its 95% confidence interval (bootstrap over steps), the idle cause
that moved most and the finding behind it; then idle by cause, compiles and reads, and the
findings matched across the two (by kind and source line, else span): resolved, new, changed.

A budget (--fail-if, repeatable) is METRIC OP VALUE. A signed VALUE is a change from BEFORE
(+5% relative, +100ms absolute); an unsigned one bounds AFTER (120ms, 0). Times take us, ms or
s. Metrics: step_time, step_time.p90, idle, idle.<cause> (transfer_from_device, compile,
transfer_to_device, host_tracing, unattributed), busy, compile_time, read_time, compiles, reads,
findings.new. A step-time change whose 95% CI includes zero exceeds no budget.
Exit codes: 0 ok, 1 a budget exceeded (one line each on stderr), 2 bad input or budget."""

DIFF_EXAMPLES = """\
examples:
  xlaprof diff logs/plugins/profile/before logs/plugins/profile/after
  xlaprof diff base-logs new-logs --json
  xlaprof diff base-logs new-logs --fail-if "step_time>+5%" --fail-if "idle.compile>+100ms"
  xlaprof diff base-logs new-logs --fail-if "compiles>0" --fail-if "findings.new>0"
"""


def build_parser() -> argparse.ArgumentParser:
    parser = options.OneLineParser(
        prog="xlaprof", description="Why is my TPU idle? Capture, attribute and browse PyTorch/XLA device idle time.",
        formatter_class=_HelpWithDefaults)
    parser.add_argument("--version", action="version", version=f"xlaprof {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what xlaprof does")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    cap = sub.add_parser("capture", help="capture a profile from running workers", formatter_class=_HelpWithDefaults,
                         description="Capture every listed worker's profiler server at once into one session.")
    cap.add_argument("-p", "--port", type=options.port, default=9012, help="profiler port of the workers without one in --hosts")
    cap.add_argument("--hosts", default="localhost", metavar="HOSTS",
                     help="worker host(s), comma-separated, an entry may carry its own port (h1,h2:9013); "
                          "or @FILE: the hosts listed in FILE, one per line")
    cap.add_argument("--host", dest="hosts", action=_Deprecated, replacement="--hosts", default=argparse.SUPPRESS)
    cap.add_argument("-d", "--duration", type=options.duration, default=2.0, help="seconds to record")
    cap.add_argument("-o", "--logdir", default=DEFAULT_LOGDIR, help="where sessions go")
    cap.add_argument("--name", default=None, help="run name (default: a timestamp; never overwrites)")
    cap.add_argument("--attempts", type=options.positive, default=3, help="tries per worker before it counts as failed")
    cap.add_argument("--max-concurrent", type=options.positive, default=16, metavar="N",
                     help="workers captured at once; more are captured in turns of N")
    _add_read_limits(cap, captures=False)

    ana = sub.add_parser("analyze", help="report where the device was idle and why",
                         formatter_class=_HelpWithDefaults,
                         description="Analyse a session directory, a logdir (its newest session) or one .xplane.pb file.")
    ana.add_argument("path", help="session directory, logdir, or .xplane.pb file")
    _add_json_output(ana, "print the JSON report (the contract other tools use)")
    ana.add_argument("--debug-file", default=None,
                     help="a PT_XLA_DEBUG_FILE written with PT_XLA_DEBUG_LEVEL=2, to name compile causes")
    ana.add_argument("--top", type=options.count, default=10, help="rows per table in the text report")
    _add_read_limits(ana)
    _cluster_options(ana)

    diff = sub.add_parser("diff", help="compare two sessions; with --fail-if, a regression gate",
                          formatter_class=_HelpWithExamples, description=DIFF_HELP, epilog=DIFF_EXAMPLES)
    diff.add_argument("before", help="session directory, logdir, or .xplane.pb file: the baseline")
    diff.add_argument("after", help="session directory, logdir, or .xplane.pb file: the one to judge")
    _add_json_output(diff, "print the comparison as JSON")
    diff.add_argument("--fail-if", action="append", default=[], metavar="BUDGET",
                      help="exit 1 if this budget is exceeded, e.g. 'step_time>+5%%' (repeatable; default: none)")
    diff.add_argument("--top", type=options.count, default=10, help="findings listed per status in the text report")
    _add_read_limits(diff)
    _cluster_options(diff)

    exp = sub.add_parser("export", help="write a session as a Perfetto or Chrome trace, with xlaprof's idle gaps",
                         formatter_class=_HelpWithDefaults,
                         description="Write the capture's device and host timelines, spans and sampled Python "
                                     "stacks, with xlaprof's idle gaps by cause (line, stack and finding as args) "
                                     "and its findings as instants, for ui.perfetto.dev or chrome://tracing.")
    exp.add_argument("path", help="session directory, logdir, or .xplane.pb file")
    exp.add_argument("--format", choices=("perfetto", "chrome"), default="perfetto",
                     help="perfetto: a protobuf trace (ui.perfetto.dev); chrome: JSON (chrome://tracing)")
    exp.add_argument("-o", "--output", required=True,
                     help="the file to write, - for the standard output (replaced only when the export is whole; "
                          "never an input, a file inside a session or plugins/profile, a directory, FIFO or device)")
    exp.add_argument("--debug-file", default=None,
                     help="a PT_XLA_DEBUG_FILE written with PT_XLA_DEBUG_LEVEL=2, to name compile causes")

    dash = sub.add_parser("dashboard", help="serve the web dashboard for a logdir", formatter_class=_HelpWithDefaults,
                          description="Browse sessions, timelines, gaps, compiles and metrics in a browser.")
    dash.add_argument("--logdir", default=DEFAULT_LOGDIR, help="logdir to browse")
    dash.add_argument("--bind", default="127.0.0.1", metavar="ADDRESS",
                      help="address to bind (default: 127.0.0.1, this machine only)")
    dash.add_argument("--host", dest="bind", action=_Deprecated, replacement="--bind", default=argparse.SUPPRESS)
    dash.add_argument("-p", "--port", type=options.port, default=8050, help="port to listen on")
    dash.add_argument("--scheduler", default=None, metavar="ADDRESS",
                      help="analyse on this Dask cluster, e.g. tcp://HOST:8786 (default: $XLAPROF_DASK_SCHEDULER, "
                           "else in this process)")
    dash.add_argument("--allow-remote-capture", action="store_true",
                      help="let the dashboard's capture form capture workers on other hosts (default: only "
                           "this machine's, localhost: anyone who can open the dashboard could make it connect "
                           "to any address)")
    _scheduler_timeout(dash)
    _add_read_limits(dash)

    demo = sub.add_parser("demo", help="run a sample workload on the CPU XLA device, capture, analyse, serve",
                          formatter_class=_HelpWithDefaults,
                          description="Start a training loop with classic mistakes on the embedded CPU XLA device, "
                                      "capture it, print the analysis, and serve the dashboard on it.")
    demo.add_argument("-o", "--logdir", default=DEFAULT_LOGDIR, help="where the session goes")
    demo.add_argument("-d", "--duration", type=options.duration, default=4.0, help="seconds to capture")
    demo.add_argument("-p", "--port", type=options.port_or_free, default=0, help="worker profiler port (default: a free one)")
    demo.add_argument("--dashboard-port", type=options.port, default=8050, help="dashboard port")
    demo.add_argument("--no-dashboard", action="store_true", help="stop after printing the analysis")
    return parser


def _cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="analyse the workers on this Dask cluster, e.g. tcp://HOST:8786 "
                             "(default: $XLAPROF_DASK_SCHEDULER, else a local cluster for a session of several workers)")
    _scheduler_timeout(parser)
    parser.add_argument("--jobs", type=options.positive, default=None, metavar="N",
                        help="processes of the local cluster; 1 analyses in this process "
                             "(default: one per core, at most one per worker; in this process below 256 MiB of captures)")


def _scheduler_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler-timeout", default=None, metavar="SECONDS",
                        help=f"give up on a scheduler that does not accept and answer within this "
                             f"(default: 5, or {DASK_TIMEOUT_ENV})")


def _analysed(path: str, args, config=None):
    """The analysis of the session at ``path``, its workers analysed where ``args`` say."""
    from xlaprof.analysis import analyze
    from xlaprof.dask_tasks import analysis_tasks
    from xlaprof.session import newest_readable

    def analysed(session):
        with analysis_tasks(len(session.workers), scheduler=args.scheduler, jobs=args.jobs,
                            capture_bytes=session.capture_bytes) as run_tasks:
            if run_tasks is None:
                session.read(progress=True)
            return analyze(session, config, run_tasks=run_tasks)

    return newest_readable(path, analysed)  # a logdir's newest run that reads; newer ones skipped, said


def run() -> None:
    """The ``xlaprof`` command (and ``python -m xlaprof``): ``main``'s exit code, once what it wrote is
    flushed, without the interpreter's teardown, which frees an analysis' arrays and modules one by
    one (30 ms after a 1M-event ``analyze``) for a process about to end."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader of the output went away (``| head``): nothing left to say
        code = code or EXIT_BAD_INPUT
    os._exit(int(code or 0))


def main(argv: list[str] | None = None) -> int:
    signals = Signals()
    try:
        args = build_parser().parse_args(argv)
        _logging(args.verbose)
        _hand_on_read_limits(args)
        options.check_before_work(args)  # a bad variable or --debug-file is one line now, before any work
        return _COMMANDS[args.command](args)
    except XlaprofError as exc:
        print(f"xlaprof: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # the environment: a file gone meanwhile, a disk full; one line all the same
        print(f"xlaprof: error: {exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:
        print("xlaprof: interrupted", file=sys.stderr)
        terminated = isinstance(exc, Interrupted) and exc.signum == signal.SIGTERM
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        signals.disarm()


def _logging(verbose: bool) -> None:
    """xlaprof's own messages as ``xlaprof: ...`` lines; other libraries' (fsspec, aiohttp) only
    with ``-v``: their retries and tracebacks are not the user's one line."""
    ours = logging.getLogger("xlaprof")
    if not ours.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("xlaprof: %(message)s"))
        ours.addHandler(handler)
    ours.setLevel(logging.INFO if verbose else logging.WARNING)
    ours.propagate = False
    logging.getLogger().setLevel(logging.INFO if verbose else logging.CRITICAL)


def _hand_on_read_limits(args) -> None:
    for option, variable in (("max_capture_size", CAPTURE_SIZE_ENV), ("remote_timeout", REMOTE_TIMEOUT_ENV),
                             ("scheduler_timeout", DASK_TIMEOUT_ENV)):
        value = getattr(args, option, None)
        if value is not None:
            os.environ[variable] = str(value)


def _json_indent(indent: int | None) -> int | None:
    """``--indent``'s value; without it, 2 on a terminal (else compact)."""
    return 2 if indent is None and sys.stdout.isatty() else indent


def _write_json(data, indent: int | None) -> None:
    """``data`` as JSON on stdout: compact, or indented on a terminal or with ``--indent``; orjson
    where it can (compact, or by 2), else the standard encoder."""
    import orjson

    indent = _json_indent(indent)
    if indent and indent != 2:
        import json

        text = (json.dumps(data, indent=indent) + "\n").encode()
    else:
        option = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE | (orjson.OPT_INDENT_2 if indent else 0)
        text = orjson.dumps(data, option=option)
    sys.stdout.flush()
    sys.stdout.buffer.write(text)
    sys.stdout.buffer.flush()


def _analyze(args) -> int:
    from xlaprof.analysis import AnalysisConfig

    result = _analysed(args.path, args, AnalysisConfig(debug_file=args.debug_file))
    if args.json:  # the report's modules one by one: a command imports what it needs only
        from xlaprof.report.json_report import analysis_json, write_analysis_json

        if _json_indent(args.indent):
            _write_json(analysis_json(result, source_root=os.getcwd()), args.indent)
        else:  # compact, a piece at a time: a pod's report is never held whole
            sys.stdout.flush()
            write_analysis_json(result, sys.stdout.buffer.write, source_root=os.getcwd())
            sys.stdout.buffer.flush()
    else:
        from xlaprof.report.text import render_text

        sys.stdout.write(render_text(result, top=args.top, source_root=os.getcwd()))
    return EXIT_OK


def _diff(args) -> int:
    from xlaprof.analysis.compare.budgets import check_budgets, parse_budget
    from xlaprof.analysis.compare.session_diff import diff_sessions
    from xlaprof.report import diff_json, render_diff_text

    budgets = [parse_budget(text) for text in args.fail_if]  # a malformed budget fails before any reading
    before, after = (_analysed(path, args) for path in (args.before, args.after))
    diff = diff_sessions(before, after)
    results = check_budgets(budgets, diff)
    if args.json:
        _write_json(diff_json(diff, results, source_root=os.getcwd()), args.indent)
    else:
        sys.stdout.write(render_diff_text(diff, results, top=args.top, source_root=os.getcwd()))
    exceeded = [r for r in results if r.exceeded]
    for result in exceeded:
        print(f"xlaprof: budget exceeded: {result.message}", file=sys.stderr)
    return EXIT_BUDGET_EXCEEDED if exceeded else EXIT_OK


def _export(args) -> int:
    from xlaprof.analysis import AnalysisConfig, analyze
    from xlaprof.export import check_output, export_trace
    from xlaprof.session import newest_readable

    inputs = (args.path, args.debug_file)
    check_output(args.output, args.format, inputs)  # a bad output fails before the session is read
    config = AnalysisConfig(debug_file=args.debug_file)
    result = newest_readable(args.path, lambda session: analyze(session.read(progress=True), config))
    model = export_trace(result, args.output, args.format, inputs)
    print(f"{args.output}: {model.slice_count:,} slices and {len(model.instants)} findings on {len(model.tracks)} "
          f"tracks ({args.format})", file=sys.stderr if args.output == "-" else sys.stdout)
    return EXIT_OK


def _capture(args) -> int:
    from collectors.capture import capture_session, hosts_spec, parse_workers

    result = capture_session(parse_workers(hosts_spec(args.hosts), args.port), duration_s=args.duration,
                             logdir=args.logdir, name=args.name, attempts=args.attempts,
                             max_concurrent=args.max_concurrent)
    print(result.path)
    return EXIT_OK if result.complete else EXIT_PARTIAL


def _dashboard(args) -> int:
    from dashboard.server import serve

    serve(args.logdir, host=args.bind, port=args.port, scheduler=args.scheduler,
          allow_remote_capture=args.allow_remote_capture)
    return EXIT_OK


def _demo(args) -> int:
    from collectors.demo import capture_demo
    from xlaprof.analysis import analyze
    from xlaprof.report import render_text
    from xlaprof.session import Session

    if not args.no_dashboard:
        from dashboard.server import check_port

        check_port("127.0.0.1", args.dashboard_port)  # fail now, not after the capture
    path = capture_demo(logdir=args.logdir, duration_s=args.duration, port=args.port)
    sys.stdout.write(render_text(analyze(Session.load(path)), source_root=os.getcwd()))
    print(f"\nsession: {path}")
    print(f"again with: xlaprof analyze {path}   (or --json)")
    if args.no_dashboard:
        return EXIT_OK
    from dashboard.components import session_href
    from dashboard.server import serve

    serve(args.logdir, port=args.dashboard_port, start_page=session_href(os.path.basename(path)))
    return EXIT_OK


_COMMANDS = {"capture": _capture, "analyze": _analyze, "diff": _diff, "export": _export, "dashboard": _dashboard,
             "demo": _demo}

if __name__ == "__main__":
    sys.exit(main())
