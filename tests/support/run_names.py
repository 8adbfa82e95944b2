"""A logdir of runs named as a person names directories, and one run that leads out of it.

Contract: ``odd_names_logdir(root, names)`` writes ``<root>/logdir`` with one small session per
name of ``names`` (session ``i``: ``training_capture(steps=3 + i, devices=1, seed=i)``, so each has
its own figures), a session ``elsewhere`` in ``<root>/outside``, and in the logdir a run
``LINKED_OUT``: a symlink to that outside session, which the dashboard must neither list, read nor
open. Returns the logdir's path. The dashboard's run-name tests (unit and browser) share it.
"""
from __future__ import annotations

import os

from tests.support.synthetic import training_capture, write_session

LINKED_OUT = "linked_out"  # the run whose directory is a symlink out of the logdir


def odd_names_logdir(root: str | os.PathLike, names: list[str]) -> str:
    logdir = os.path.join(root, "logdir")
    for i, name in enumerate(names):
        write_session(logdir, name, {"localhost_9012": training_capture(steps=3 + i, devices=1, seed=i)})
    outside = write_session(os.path.join(root, "outside"), "elsewhere",
                            {"localhost_9012": training_capture(steps=3, devices=1)})
    os.symlink(outside, os.path.join(logdir, "plugins", "profile", LINKED_OUT))
    return logdir
