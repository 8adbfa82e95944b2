"""xlaprof's version, written here only: the package metadata (pyproject.toml reads it), the
facade's ``xlaprof.__version__``, ``xlaprof --version`` and each session's manifest take it from
here. A leaf: it imports nothing, so the worker side (``collectors``) reads it without the facade."""

__version__ = "0.1.0"
