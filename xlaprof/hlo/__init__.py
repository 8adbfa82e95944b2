"""The compiled programs inside a capture: XLA's optimized HLO modules, read without xla or tensorflow.

Modules: ``schema`` (message classes wire-compatible with XLA's ``hlo.proto``/``xla_data.proto``
for the fields xlaprof reads), ``module`` (``HloModule``: entry signature, instructions),
``source`` (Python source lines from the metadata of ``XLA_HLO_DEBUG=1``), ``reader``
(``hlo_modules(space)``: a capture's programs by program id, parsed lazily), ``text`` (one
instruction as HLO text). Sits beside ``xspace``: it reads what the XSpace reader kept.
"""
from __future__ import annotations

from xlaprof.hlo.module import (Constant, GraphSignature, HloDecodeError, HloModule, Instruction, Shape, parse_module,
                                shared_work)
from xlaprof.hlo.reader import HloModules, hlo_modules, module_name, program_of

__all__ = ["HloModule", "HloModules", "hlo_modules", "parse_module", "program_of", "module_name", "Shape",
           "GraphSignature", "Constant", "Instruction", "HloDecodeError"]
