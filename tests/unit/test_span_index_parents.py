"""A span's parent is the latest earlier span of its line still open when it starts: the pointer
jumping of ``span_index`` against a stack of open spans, the obvious way, on random spans."""
from __future__ import annotations

import numpy as np

from xlaprof.analysis.host.span_index import _open_parents


def _with_a_stack(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    parent, stack = np.full(line.size, -1, np.int64), []
    for i in range(line.size):
        if i and line[i] != line[i - 1]:
            stack.clear()
        while stack and end[stack[-1]] <= start[i]:
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    return parent


def test_pointer_jumping_finds_the_parents_a_stack_of_open_spans_finds():
    rng = np.random.default_rng(1)
    nested = 0
    for _ in range(2000):
        n = int(rng.integers(0, 60))
        line = np.sort(rng.integers(0, 3, n))
        start = rng.integers(0, 50, n).astype(float)
        end = start + rng.integers(0, 30, n)
        order = np.lexsort((-end, start, line))
        line, start, end = line[order], start[order], end[order]
        expected = _with_a_stack(line, start, end)
        assert np.array_equal(_open_parents(line, start, end), expected)
        nested += int((expected >= 0).sum())
    assert nested > 10_000  # parents were found, not only -1s
