"""``python -m xlaprof``: the same as the ``xlaprof`` command."""
from xlaprof.cli import run

run()
