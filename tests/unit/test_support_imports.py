"""Importing the test support modules sets no ``XLA_FLAGS`` for the processes a test session starts.
A test imports a workload module for its constants; a module that set ``XLA_FLAGS`` as it was
imported (LLVM's optimizations off, for fast compiles) gave every later process of the session, the
truth corpus' included, a device about 25% slower, and the CPU fallback's A/B read share went from
about 55% to 75%."""
from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every module of tests.support imported, each attempt to set XLA_FLAGS noted with the module making it
# (setdefault included: whether it takes depends on what was imported first).
IMPORT_ALL = """
import importlib, json, os, pkgutil, sys
setters = []
def noting(method):
    def wrapper(self, key, *args):
        if key == "XLA_FLAGS":
            setters.append(sys._getframe(1).f_globals.get("__name__"))
        return method(self, key, *args)
    return wrapper
for name in ("__setitem__", "setdefault"):
    setattr(os._Environ, name, noting(getattr(os._Environ, name)))
import tests.support
names = [m.name for m in pkgutil.walk_packages(tests.support.__path__, "tests.support.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": len(names), "setters": [s for s in setters if str(s).startswith("tests")]}))
"""


def test_no_support_module_sets_xla_flags_as_it_is_imported():
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["modules"] > 20, result
    assert result["setters"] == [], result
