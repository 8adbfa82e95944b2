"""The compiled programs of one capture, parsed lazily from its ``/host:metadata`` plane.

Contract: ``hlo_modules(space)`` returns an ``HloModules`` for an ``XSpaceData``: every program XLA
recorded (one per executable alive during the capture: compiled in the window or before it and
still cached), keyed by program id, the id that execution events carry (``program_id`` stats,
"<module>(<id>)" event names). Construction only indexes the bytes the reader kept; a module is
parsed on the first ``get(program_id)`` and cached. A module whose bytes do not decode is
``None`` and its error is listed in ``errors`` (one line each): a bad record never fails an
analysis. A capture without the plane has no modules.
"""
from __future__ import annotations

import re

from xlaprof.hlo.module import HloDecodeError, HloModule, parse_module
from xlaprof.xspace import vocabulary
from xlaprof.xspace.reader import XSpaceData

_PROGRAM_SUFFIX = re.compile(r"\((?P<id>-?\d+)\)$")


def program_of(event_name: str) -> int | None:
    """The program id in an execution event's name, "SyncTensorsGraph.139(4)" -> 4."""
    match = _PROGRAM_SUFFIX.search(event_name)
    return int(match.group("id")) if match else None


def module_name(event_name: str) -> str:
    """"SyncTensorsGraph.139(4)" -> "SyncTensorsGraph.139"."""
    return _PROGRAM_SUFFIX.sub("", event_name)


class HloModules:
    def __init__(self, records: dict[int, tuple[str, bytes]]) -> None:
        self._records = records  # program id -> (module name, HloProto bytes)
        self._parsed: dict[int, HloModule | None] = {}
        self.errors: list[str] = []

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, program_id: int) -> bool:
        return program_id in self._records

    def ids(self) -> list[int]:
        return sorted(self._records)

    def name(self, program_id: int) -> str | None:
        record = self._records.get(program_id)
        return record[0] if record else None

    def get(self, program_id: int | None) -> HloModule | None:
        if program_id is None or program_id not in self._records:
            return None
        if program_id not in self._parsed:
            try:
                self._parsed[program_id] = parse_module(self._records[program_id][1], program_id)
            except HloDecodeError as exc:
                self._parsed[program_id] = None
                self.errors.append(str(exc))
        return self._parsed[program_id]


def hlo_modules(space: XSpaceData) -> HloModules:
    plane = space.plane(vocabulary.METADATA_PLANE)
    records: dict[int, tuple[str, bytes]] = {}
    if plane is not None:
        for index, stats in plane.metadata_stats.items():
            data = stats.get(vocabulary.HLO_PROTO_STAT)
            if isinstance(data, bytes) and index < len(plane.metadata_ids):
                records[int(plane.metadata_ids[index])] = (module_name(plane.names[index]), data)
    return HloModules(records)
