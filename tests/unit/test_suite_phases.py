"""The suite's two phases (``run.sh`` ``run_suite``): a test module that measures a cost or a load
(it pins threads to cores, tells a busy core from an idle one, spins a core, records the corpus or the
pod's truth) is marked ``exclusive``, so that it runs after the shared phase, never beside that
phase's other workers."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.support.workers import REPO

# What measures, wherever a module uses it (in its code or in a worker script it runs).
MEASURING = ("pin_host_and_device", "--pin-cores", "AB_OPTIONS", "ForeignLoad", "spinning(", "record_corpus(",
             "capture_sleeping_pod(")


def _marked_exclusive(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            return any(isinstance(n, ast.Attribute) and n.attr == "exclusive" for n in ast.walk(node.value))
    return False


def test_every_test_module_that_measures_a_cost_or_a_load_is_in_the_exclusive_phase():
    measuring, unmarked = [], []
    for path in sorted(Path(REPO, "tests").rglob("test_*.py")):
        text = path.read_text()
        if path.name != Path(__file__).name and any(word in text for word in MEASURING):
            measuring.append(path.name)
            if not _marked_exclusive(ast.parse(text)):
                unmarked.append(str(path.relative_to(REPO)))
    assert unmarked == []
    assert {"test_corpus_truth.py", "test_read_cost_ab.py", "test_ab_harness_load.py"} <= set(measuring)
