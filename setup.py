"""The stack sampler's loop in C (collectors/_stack_watch.c); everything else is in pyproject.toml.

Optional: where it cannot be built (no C compiler) xlaprof installs without it, and a worker
captures without Python stacks, saying so once.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("collectors._stack_watch", ["collectors/_stack_watch.c"], optional=True)])
