"""The corpus: real third-party workloads nobody wrote to fit xlaprof, for the truth harness
(``tests.support.truth``). Each module has ``build(torch, device, args) -> step(i)``: one step of
the user's loop, with no spans and no reads beyond the workload's own. Models come from small configs
with random weights (no downloads). ``cases.CASES`` lists them with what the truth accepts as a fix.
"""
