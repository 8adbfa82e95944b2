"""A read the sampler missed, named from the same read in the loop's other iterations.

Contract: ``named_by_position(stack_ids, seen, voters, starts, boundary_ends)``: for one thread's
reads (sorted by start), each with its call's stack id (-1 where unknown), ``seen`` where that stack
was observed (the read inside a marked call, or a sampled run begun once its call was under way)
rather than inferred from the runs around it, ``voters`` the reads whose stacks are trusted to
name their place (the seen ones, and those the caller's inference gives a likely stack), and the
ends of the thread's explicit syncs (sorted): the stack ids with each read not seen given the stack
the voters at its place had. A read's place is (how many reads the stretch between two syncs holds,
its index among them): a loop repeats its stretches, so the k-th of n reads of one is the same call
as the k-th of n of another (a CPU fallback that reads mid-forward, shorter than the sampler's
period on a thread holding the GIL, is seen in some iterations only; where it is not, the runs
around it may suggest the read before it, whose run the sampler still showed). A place is named
when at least ``MIN_VOTES`` of its reads vote and ``AGREEMENT`` of them share one stack; a stretch
with another count of reads is another place, and a thread without syncs has no places repeating,
so nothing changes there. Seen reads, and reads at a place not named, keep their stacks.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

MIN_VOTES = 2
AGREEMENT = 0.8


def named_by_position(stack_ids: np.ndarray, seen: np.ndarray, voters: np.ndarray, starts: np.ndarray,
                      boundary_ends: np.ndarray) -> np.ndarray:
    if seen.all() or not voters.any() or not boundary_ends.size:
        return stack_ids
    stretch = np.searchsorted(boundary_ends, starts, side="right")
    first = np.searchsorted(stretch, stretch, side="left")  # reads are sorted by start: stretches are runs
    count = np.searchsorted(stretch, stretch, side="right") - first
    places = list(zip(count.tolist(), (np.arange(stretch.size) - first).tolist()))
    votes: dict[tuple[int, int], Counter] = {}
    for place, stack, votes_for in zip(places, stack_ids.tolist(), voters.tolist()):
        if votes_for and stack >= 0:
            votes.setdefault(place, Counter())[stack] += 1
    named = stack_ids.copy()
    for i in np.flatnonzero(~seen).tolist():
        counts = votes.get(places[i])
        if counts is None:
            continue
        total = sum(counts.values())
        stack, agreeing = counts.most_common(1)[0]
        if total >= MIN_VOTES and agreeing >= AGREEMENT * total:
            named[i] = stack
    return named
