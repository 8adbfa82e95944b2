"""A read the sampler did not see takes the stack the seen reads at its place in the loop's other
iterations had."""
import numpy as np

from xlaprof.analysis.host.read_positions import named_by_position

# Four iterations, each: a sync ending at 100k, 200k, 300k, 400k; then three reads (a library's
# lookup, a CPU fallback mid-forward, the loss's .item()). The sampler missed the fallback's read twice.
SYNCS = np.array([100.0, 200.0, 300.0, 400.0]) * 1e3
STARTS = np.array([110, 120, 130, 210, 220, 230, 310, 320, 330, 410, 420, 430], np.float64) * 1e3
MISSED = np.array([7, 8, 9, 7, -1, 9, 7, 8, 9, 7, -1, 9])


def named(stacks, starts=STARTS, syncs=SYNCS):
    return named_by_position(stacks, stacks >= 0, stacks >= 0, starts, syncs)


def test_a_missed_read_takes_the_stack_of_its_place_in_the_other_iterations():
    assert named(MISSED).tolist() == [7, 8, 9] * 4


def test_a_place_whose_known_reads_disagree_or_are_too_few_stays_unknown():
    disagree = MISSED.copy()
    disagree[7] = 5
    assert named(disagree)[4] == -1
    once = MISSED[3:]  # the place known in one other iteration only
    assert named(once, STARTS[3:]).tolist() == [7, -1, 9, 7, 8, 9, 7, -1, 9]


def test_a_stretch_with_another_number_of_reads_is_another_place():
    # The last iteration logs too (a fourth read): its second read is not the others' second.
    starts, stacks = np.append(STARTS, 435e3), np.append(MISSED, 4)
    result = named(stacks, starts)
    assert result[10] == -1 and result[4] == 8


def test_without_syncs_nothing_repeats_and_nothing_changes():
    assert named(MISSED, syncs=np.zeros(0)).tolist() == MISSED.tolist()


def test_a_stack_only_inferred_from_the_runs_around_a_read_gives_way_to_its_places_seen_stack():
    # The second read's stack was inferred (the read before it, whose run the sampler still showed).
    stacks = np.array([7, 8, 9, 7, 7, 9, 7, 8, 9, 7, 8, 9])
    seen = np.ones(stacks.size, bool)
    seen[4] = False
    assert named_by_position(stacks, seen, seen, STARTS, SYNCS)[4] == 8
    seen[:] = True  # a seen stack stays, whatever its place's others say
    assert named_by_position(stacks, seen, seen, STARTS, SYNCS)[4] == 7


def test_inferred_stacks_vote_where_the_caller_trusts_them():
    # Only one read at the place was seen; two more were inferred to the same stack (they vote), and
    # one inferred to the read before it (it does not, and is renamed).
    stacks = np.array([7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 7, 9])
    seen = np.array([1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1], bool)
    voters = seen.copy()
    voters[[4, 7]] = True
    assert named_by_position(stacks, seen, voters, STARTS, SYNCS)[10] == 8
    assert named_by_position(stacks, seen, seen, STARTS, SYNCS)[10] == 7  # one vote: not enough
