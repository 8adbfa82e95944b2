"""The import direction of docs/ARCHITECTURE.md, enforced: every import of every module of the
three packages (lazy ones inside functions included) is checked against an allow-list.

    xlaprof._version, .errors, .units, .progress, .interrupts   leaves: no project imports
    xlaprof.xspace                      -> errors
    xlaprof.session                     -> errors, progress, xspace
    xlaprof.hlo                         -> errors, xspace
    xlaprof.analysis                    -> errors, units, xspace, hlo, session; inside it, its stages
                                           in pipeline order (ANALYSIS_STAGES), each importing only
                                           the stages before it, and no module outside a stage
    xlaprof.report                      -> errors, units, xspace, hlo, session, analysis
    xlaprof.export                      -> errors, units, xspace, hlo, session, analysis (beside report)
    xlaprof.dask_tasks                  -> progress (runs tasks on Dask; knows no analysis)
    xlaprof.cli_options                 -> errors, session, collectors.capture (its duration bound)
    collectors                          -> xlaprof._version, errors, progress, units, xspace, session,
                                           interrupts (a capture's claim held whole)
    dashboard                           -> any of xlaprof but the CLI; never collectors; inside it:
      dashboard.data                    -> no other part of the dashboard (how it reaches sessions)
      dashboard.views                   -> dashboard.data (view-models: figures' data, tables' rows)
      dashboard.sections                -> data, views, the shared modules (components, figures,
                                           grid, state); never a page
      dashboard.pages                   -> the same and sections
    xlaprof (facade), xlaprof.cli       entry points: reach every package, lazily

Third-party: torch/torch_xla/xprof only in collectors; dash/plotly only in dashboard, and not
in dashboard.views nor dashboard.data (they stay testable without Dash).

And the analysis' stages return new values: no function of xlaprof.analysis assigns to an
attribute of what it was given (an argument, or an item of one it loops over).
"""
from __future__ import annotations

import ast
import functools
import graphlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("xlaprof", "collectors", "dashboard")
CORE = ("xlaprof.errors", "xlaprof.units", "xlaprof.progress", "xlaprof.framework_files")
# What of xlaprof the dashboard may use, and what its sections and pages share.
DASHBOARD_CORE = CORE + ("xlaprof.xspace", "xlaprof.hlo", "xlaprof.session", "xlaprof.analysis",
                         "xlaprof.report", "xlaprof.dask_tasks")
DASHBOARD_SHARED = ("dashboard.data", "dashboard.views", "=dashboard.components", "=dashboard.figures",
                    "=dashboard.grid", "=dashboard.state")

# The project modules each package may import: by prefix, or exactly where written "=name".
# A package may always import itself.
ALLOWED: dict[str, tuple[str, ...]] = {
    "xlaprof._version": (),
    "xlaprof.errors": (),
    "xlaprof.units": (),
    "xlaprof.progress": (),
    "xlaprof.framework_files": (),
    "xlaprof.interrupts": (),
    "xlaprof.xspace": ("xlaprof.errors",),
    "xlaprof.session": ("xlaprof.errors", "xlaprof.progress", "xlaprof.xspace"),
    "xlaprof.hlo": ("xlaprof.errors", "xlaprof.xspace", "xlaprof.framework_files"),
    "xlaprof.analysis": CORE + ("xlaprof.xspace", "xlaprof.hlo", "xlaprof.session"),
    # Its stages, added below from ANALYSIS_STAGES: each may import the stages before it only.
    "xlaprof.report": CORE + ("xlaprof.xspace", "xlaprof.hlo", "xlaprof.session", "xlaprof.analysis"),
    "collectors": CORE + ("xlaprof.xspace", "xlaprof.session", "=xlaprof._version", "=xlaprof.interrupts"),
    # The demo workload plays the user: it instruments itself through the public facade.
    "collectors.demo_worker": CORE + ("=xlaprof",),
    "xlaprof.export": CORE + ("xlaprof.xspace", "xlaprof.hlo", "xlaprof.session", "xlaprof.analysis"),
    "xlaprof.dask_tasks": CORE,
    "xlaprof.cli_options": CORE + ("xlaprof.session", "=collectors.capture"),
    "dashboard": DASHBOARD_CORE,
    # Inside the dashboard, by role: data <- views <- sections <- pages (a layer never imports one after it).
    "dashboard.data": DASHBOARD_CORE,
    "dashboard.views": DASHBOARD_CORE + ("dashboard.data",),
    "dashboard.sections": DASHBOARD_CORE + DASHBOARD_SHARED,
    "dashboard.pages": DASHBOARD_CORE + DASHBOARD_SHARED + ("dashboard.sections",),
    # Entry points: the public facade and the command line.
    "xlaprof": PACKAGES,
    "xlaprof.cli": PACKAGES,
    "xlaprof.__main__": ("xlaprof.cli",),
}
# The analysis' stages in pipeline order (xlaprof/analysis/__init__.py names them): a stage may
# import the stages before it, never one after it (no import back up the pipeline).
ANALYSIS_STAGES = ("common", "host", "device", "compiles", "idle", "findings", "pipeline", "compare")
for _i, _stage in enumerate(ANALYSIS_STAGES):
    ALLOWED[f"xlaprof.analysis.{_stage}"] = ALLOWED["xlaprof.analysis"] + tuple(
        f"xlaprof.analysis.{earlier}" for earlier in ANALYSIS_STAGES[:_i])
ENTRY_POINTS = ("xlaprof", "xlaprof.cli", "xlaprof.__main__")  # rules that cover only themselves
# Third-party packages that only one of ours may import.
OWNED_BY = {"torch": "collectors", "torch_xla": "collectors", "xprof": "collectors",
            "dash": "dashboard", "plotly": "dashboard", "dash_ag_grid": "dashboard"}
NO_DASH_IN = ("dashboard.views", "dashboard.data")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement, wherever it is in the file."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import name`` may import the submodule pkg.name: judge the longer name.
            found += [(node.lineno, f"{base}.{alias.name}" if base in _project_packages() else base)
                      for alias in node.names]
    return found


@functools.cache
def _project_packages() -> set[str]:
    return {module_name(p.parent) for package in PACKAGES for p in (REPO / package).rglob("__init__.py")}


def _rule_for(module: str) -> str | None:
    """The most specific ALLOWED key covering ``module``; None for a module no rule covers."""
    keys = [k for k in ALLOWED if module == k or (k not in ENTRY_POINTS and module.startswith(k + "."))]
    return max(keys, key=len, default=None)


def _is(name: str, prefix: str) -> bool:
    if prefix.startswith("="):
        return name == prefix[1:]
    return name == prefix or name.startswith(prefix + ".")


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """Every import of ``module`` that breaks the rules, as 'module:line imports name'."""
    rule = _rule_for(module)
    if rule is None:
        return [f"{module}: no import rule covers this module (add it to ALLOWED)"]
    # A module may import its own package: a top-level one whole, a subpackage of the core or of
    # the dashboard itself.
    top_level = module.split(".")[0]
    own = module if rule in ENTRY_POINTS else rule if top_level in ("xlaprof", "dashboard") else top_level
    bad = []
    for line, name in imports_of(source, module, is_package):
        top = name.split(".")[0]
        if top in PACKAGES:
            if not (_is(name, own) or any(_is(name, a) for a in ALLOWED[rule])):
                bad.append(f"{module}:{line} imports {name}")
        elif top in OWNED_BY and not _is(module, OWNED_BY[top]):
            bad.append(f"{module}:{line} imports {name} (only {OWNED_BY[top]} may)")
        elif top in ("dash", "plotly", "dash_ag_grid") and any(_is(module, p) for p in NO_DASH_IN):
            bad.append(f"{module}:{line} imports {name} (the view-models and data stay free of Dash)")
    return bad


def project_modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def test_every_import_points_the_way_the_architecture_says():
    found = []
    for path in project_modules():
        found += violations(module_name(path), path.read_text(), path.name == "__init__.py")
    assert found == []


@pytest.mark.parametrize("module,source", [
    ("xlaprof.analysis.findings.findings", "from xlaprof.report.text import render_text"),
    ("xlaprof.analysis.idle.steps", "def f():\n    from dashboard.views import axis\n"),
    ("xlaprof.analysis.idle.attribution", "import collectors.spans"),
    ("xlaprof.xspace.reader", "from xlaprof.session import storage"),
    ("xlaprof.hlo.module", "from xlaprof.analysis import analyze"),
    ("xlaprof.xspace.reader", "from xlaprof.hlo import module"),
    ("collectors.capture", "from xlaprof.analysis import analyze"),
    ("collectors.demo", "from dashboard.server import serve"),
    ("collectors.capture", "from xlaprof import analyze"),
    ("collectors.capture", "from xlaprof.analysis.common.intervals import merge"),
    # The version comes from its own leaf module, not through the facade (no import circle).
    ("collectors.session_writer", "from xlaprof import __version__"),
    ("xlaprof.newmodule", "import os"),
    ("dashboard.pages.session", "from collectors.capture import capture_session"),
    ("dashboard.views.timeline", "import plotly.graph_objects as go"),
    ("dashboard.data.analysis_cache", "import dash"),
    # The dashboard's layers: data <- views <- sections <- pages, never the other way.
    ("dashboard.data.query", "from dashboard.views.axis import AXIS_UNIT_US"),
    ("dashboard.data.logdir_guard", "from dashboard.state import AppState"),
    ("dashboard.views.timeline", "from dashboard.sections.pod import SHOWN_WORKERS"),
    ("dashboard.views.pod", "from dashboard.figures import pod_heatmap"),
    ("dashboard.sections.pod", "def f():\n    from dashboard.pages import session\n"),
    ("dashboard.sections.graphs", "from dashboard import app"),
    ("xlaprof.report.text", "import torch_xla"),
    ("xlaprof.session.model", "from xprof.convert import _pywrap_profiler_plugin"),
    ("xlaprof.analysis.idle.steps", "import dash"),
    ("xlaprof.export.trace_model", "from xlaprof.report import analysis_json"),
    ("xlaprof.analysis.findings.findings", "from xlaprof.export import export_trace"),
    # The analysis' stages: never an import back up the pipeline, nor of the package's facade.
    ("xlaprof.analysis.host.frames", "from xlaprof.analysis.idle.attribution import Cause"),
    ("xlaprof.analysis.compiles.compiles", "from xlaprof.analysis.findings import findings"),
    ("xlaprof.analysis.common.intervals", "def f():\n    from xlaprof.analysis.host import span_index\n"),
    ("xlaprof.analysis.pipeline.summary", "from xlaprof.analysis.compare.session_diff import SessionDiff"),
    ("xlaprof.analysis.idle.steps", "from xlaprof.analysis import analyze"),
])
def test_a_violating_import_is_caught(module, source):
    assert violations(module, source)


@pytest.mark.parametrize("module,source", [
    ("collectors.capture", "from xlaprof.session import storage\nfrom xlaprof._version import __version__"),
    ("dashboard.figures", "import plotly.graph_objects as go\nfrom xlaprof.analysis.idle import attribution"),
    ("dashboard.views.timeline", "from dashboard.data.query import query_values"),
    ("dashboard.sections.stacks", "from dashboard.sections.pod import SHOWN_WORKERS\nfrom dashboard.state import AppState"),
    ("dashboard.pages.session", "from dashboard.sections import pod\nfrom dashboard.views.axis import AXIS_UNIT_US"),
    ("xlaprof.cli", "def f():\n    from collectors.demo import capture_demo\n    from dashboard.server import serve\n"),
    ("xlaprof.analysis.idle.steps", "from xlaprof.analysis.idle.attribution import CAUSES\nimport numpy as np"),
    ("xlaprof.analysis.findings.findings", "from xlaprof.analysis.compiles.compiles import CompileSummary"),
    ("xlaprof.analysis.compare.session_diff", "from xlaprof.analysis.pipeline.summary import SessionFigures"),
])
def test_an_allowed_import_passes(module, source):
    assert violations(module, source) == []


def test_every_analysis_module_is_in_a_stage():
    """The analysis is laid out as its pipeline: each module in the subpackage of its stage, each
    stage a subpackage (with the docstring saying what it does), nothing else at the root."""
    root = REPO / "xlaprof" / "analysis"
    assert sorted(p.name for p in root.glob("*.py")) == ["__init__.py"]
    stages = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert stages == sorted(ANALYSIS_STAGES)
    for stage in ANALYSIS_STAGES:
        assert ast.get_docstring(ast.parse((root / stage / "__init__.py").read_text())), stage
        assert [p for p in (root / stage).iterdir() if p.is_dir() and p.name != "__pycache__"] == []


def _module_graph(prefix: str) -> dict[str, set[str]]:
    """Each module under ``prefix`` and the modules under it that it imports (lazily too)."""
    paths = {module_name(p): p for p in project_modules() if _is(module_name(p), prefix)}
    graph = {}
    for module, path in paths.items():
        imported = set()
        for _, name in imports_of(path.read_text(), module, path.name == "__init__.py"):
            while name and name not in paths:  # ``from pkg import function``: the module is pkg
                name = name.rpartition(".")[0]
            if name and name != module:
                imported.add(name)
        graph[module] = imported
    return graph


def test_the_analysis_imports_have_no_circle():
    graphlib.TopologicalSorter(_module_graph("xlaprof.analysis")).prepare()  # CycleError on a circle


# The dashboard's packages by role, and the functions each module of a role has.
DASHBOARD_ROLES = {"data": (), "views": (), "sections": ("section", "register"), "pages": ("layout", "register")}


def test_the_dashboard_is_laid_out_by_role():
    """Pages (one per URL) and the sections they are made of are packages of their own, beside the
    view-models and the data access, each with the docstring saying what it holds: a page has
    ``layout`` and ``register``, a section ``section`` and ``register``."""
    root = REPO / "dashboard"
    for role, functions in DASHBOARD_ROLES.items():
        assert ast.get_docstring(ast.parse((root / role / "__init__.py").read_text())), role
        for path in (root / role).glob("*.py"):
            if path.name == "__init__.py":
                continue
            defined = {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}
            assert set(functions) <= defined, path


def writes_into_arguments(source: str) -> list[str]:
    """Assignments (``=``, ``+=``) in ``source`` to an attribute of a function's argument, or of an
    item taken from it in a loop (``for r in records: r.changed = ...``; ``zip``/``enumerate`` of it
    too), or to an element of such an attribute (``pieces.cause[i] = ...``): "line: target"."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = fn.args
        given = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} - {"self", "cls"}
        for node in ast.walk(fn):
            if isinstance(node, (ast.For, ast.comprehension)):
                iterated = node.iter.args if isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) \
                    and node.iter.func.id in ("zip", "enumerate") else [node.iter]
                if any(isinstance(it, ast.Name) and it.id in given for it in iterated):
                    given |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        for node in ast.walk(fn):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                base = target
                while isinstance(base, ast.Subscript):
                    base = base.value
                if not isinstance(base, ast.Attribute):
                    continue  # a name, or an element of a local array
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in given:
                    found.append(f"{node.lineno}: {ast.unparse(target)}")
    return found


def test_no_analysis_function_writes_into_what_it_was_given():
    """Each stage returns new values (``dataclasses.replace``, new records): none writes into the
    results it was given, so no stage's result changes after the stage that made it returned."""
    found = {module_name(p): writes_into_arguments(p.read_text()) for p in project_modules()
             if _is(module_name(p), "xlaprof.analysis")}
    assert {module: writes for module, writes in found.items() if writes} == {}


@pytest.mark.parametrize("source", [
    "def f(findings):\n    for finding in findings:\n        finding.detail += 'x'\n",
    "def f(records, programs):\n    for record, p in zip(records, programs):\n        record.program_id = p\n",
    "def f(pieces, charged):\n    pieces.cause[charged] = 1\n",
    "def f(samples):\n    samples.stacks = []\n",
])
def test_a_write_into_an_argument_is_caught(source):
    assert writes_into_arguments(source)


def test_writes_into_new_values_pass():
    source = ("def f(records, n):\n    out = [replace(r, changed='x') for r in records]\n    row = Row()\n"
              "    row.total += n\n    cause = records.cause.copy()\n    cause[n] = 1\n    return out, row, cause\n")
    assert writes_into_arguments(source) == []
