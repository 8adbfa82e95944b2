"""The C parts: the stack sampler's loop (collectors/_stack_watch.c, collectors/_eval_break.c) and the capture decoder
(xlaprof/xspace/_wire.c); everything else is in pyproject.toml.

Optional: where they cannot be built (no C compiler) xlaprof installs without them: a worker
captures without Python stacks, saying so once, and captures are decoded with numpy (the same
columns, slower).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("collectors._stack_watch", ["collectors/_stack_watch.c", "collectors/_eval_break.c"],
                             optional=True),
                   Extension("xlaprof.xspace._wire", ["xlaprof/xspace/_wire.c"], optional=True)])
