"""Python source lines of HLO instructions, from the metadata torch_xla records with XLA_HLO_DEBUG=1.

Contract:
- ``Frames(stack_frame_index)`` wraps a module's ``StackFrameIndexProto``. For an instruction's
  ``OpMetadata``, ``stack(metadata)`` is its Python call stack, outermost first, each frame
  "file:line function"; ``source(metadata)`` is its innermost frame outside the framework
  (``is_framework_file``), as "file:line", falling back to the metadata's own
  ``source_file:source_line`` (which torch_xla sets to the innermost frame, often torch's own),
  and ``None`` when the metadata names no file (a worker without ``XLA_HLO_DEBUG=1``).
  Framework files are those of ``xlaprof.framework_files``.
"""
from __future__ import annotations

from xlaprof.framework_files import is_framework_file

MAX_DEPTH = 256  # frames followed up a stack (the frame index is untrusted input)


class Frames:
    def __init__(self, index) -> None:
        self._index = index
        self._cache: dict[int, tuple[tuple[str, int, str], ...]] = {}

    def frames(self, frame_id: int) -> tuple[tuple[str, int, str], ...]:
        """(file, line, function) from the innermost frame ``frame_id`` outwards."""
        if frame_id in self._cache:
            return self._cache[frame_id]
        index, found, seen = self._index, [], set()
        current = frame_id
        while 0 < current <= len(index.stack_frames) and current not in seen and len(found) < MAX_DEPTH:
            seen.add(current)
            frame = index.stack_frames[current - 1]
            location_id = frame.file_location_id
            if 0 < location_id <= len(index.file_locations):
                location = index.file_locations[location_id - 1]
                found.append((_name(index.file_names, location.file_name_id), location.line,
                              _name(index.function_names, location.function_name_id)))
            current = frame.parent_frame_id
        result = self._cache[frame_id] = tuple(found)
        return result

    def stack(self, metadata) -> tuple[str, ...]:
        if not metadata.stack_frame_id:
            return ()
        return tuple(f"{file}:{line} {function}" for file, line, function in reversed(self.frames(metadata.stack_frame_id)))

    def source(self, metadata) -> str | None:
        return self.source_of(metadata.stack_frame_id, metadata.source_file, metadata.source_line)

    def source_of(self, frame_id: int, source_file: str, source_line: int) -> str | None:
        """``source`` of metadata given by its fields."""
        if frame_id:
            for file, line, _ in self.frames(frame_id):
                if file and not is_framework_file(file):
                    return f"{file}:{line}"
        if source_file:
            return f"{source_file}:{source_line}"
        return None


def _name(names, one_based: int) -> str:
    return names[one_based - 1] if 0 < one_based <= len(names) else ""
