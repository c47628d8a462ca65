"""The steps a run takes are chosen once, by data (`choose` in run.py): an optional step joins a run's turns exactly
when one of the parts it needs is set (not None, False or empty) on any of its parts (the run, its config, its state,
any agent, any agent's tool). The answer is cached per set of parts used, so runs chosen one after another in any
order must each get their own answer, never a neighbour's, and no run can change what another is given."""
from types import SimpleNamespace

from hypothesis import given, strategies as st

from miniagents import run as kernel, steps
from miniagents.turn import Run, call_model

TABLES = {"start": kernel.START, "before": kernel.BEFORE, "entered": kernel.ENTERED, "after": kernel.AFTER}
NEEDS = sorted(need for need, _, _ in kernel.NEEDS)
SET = st.sampled_from([True, 1, 0, "x", [None], (0,), {"k": 1}, object()])  # 0 and "x" are set: only four are not
UNSET = st.sampled_from([None, False, [], (), "missing"])


@st.composite
def a_run(draw):
    """A run whose parts set exactly the needs drawn (for agents and tools: on one of several), and its uses."""
    uses = draw(st.sets(st.sampled_from(NEEDS)))
    owners = {"agents": [SimpleNamespace(tools=[]) for _ in range(draw(st.integers(1, 3)))]}
    owners["tools"] = [SimpleNamespace() for _ in range(draw(st.integers(1, 3)))]
    for n, tool in enumerate(owners["tools"]):
        owners["agents"][n % len(owners["agents"])].tools.append(tool)
    run = Run(SimpleNamespace(), SimpleNamespace(), agents=owners["agents"])
    owners.update(run=[run], config=[run.config], state=[run.state])
    for need in NEEDS:
        where, name = need.split(".")
        chosen = draw(st.sampled_from(owners[where])) if need in uses else None
        for part in owners[where]:
            value = draw(SET) if part is chosen else draw(UNSET)
            if value != "missing":
                setattr(part, name, value)
    return run, uses


def expected(table: tuple, uses: set) -> tuple:
    return tuple(step.do for step in table if not step.needs or uses & set(step.needs.split()))


def in_turn(turn_steps: tuple, uses: set) -> tuple:
    """A turn's steps; with plugins, those inside the one step that holds them in the `turn` seam."""
    if "run.plugins" not in uses:
        return turn_steps
    (observed,) = turn_steps
    assert observed.__qualname__.split(".")[0] == steps.observed_turn.__name__
    return observed.__closure__[observed.__code__.co_freevars.index("turn_steps")].cell_contents


def check(run: Run, uses: set) -> None:
    for name, table in TABLES.items():
        assert getattr(run, name) == expected(table, uses), name
    model = steps.observed_model if "run.plugins" in uses else steps.stream_model if "run.streamed" in uses \
        else call_model
    fresh = tuple(model if do is call_model else do for do in expected(kernel.FRESH, uses))
    assert in_turn(run.fresh, uses) == fresh + expected(kernel.SETTLE, uses)
    assert in_turn(run.resumed, uses) == expected(kernel.RESUMED, uses) + expected(kernel.SETTLE, uses)
    assert {kind: run.ends[kind] for kind in kernel.ENDS} == {kind: expected(table, uses)
                                                             for kind, table in kernel.ENDS.items()}
    invoke = run.invoke  # the tool alone, wrapped innermost first in what the run needs
    for wrap in reversed(expected(kernel.INVOKE, uses)):
        assert invoke.__qualname__.split(".")[0] == wrap.__name__
        invoke = invoke.__closure__[invoke.__code__.co_freevars.index("invoke")].cell_contents
    assert invoke is kernel.invoke

@given(st.lists(a_run(), min_size=1, max_size=6))
def test_each_run_takes_exactly_the_steps_its_parts_ask_for_in_any_order_of_runs(runs):
    for run, uses in runs:
        kernel.choose(run)
    for run, uses in runs:  # chosen one after another, read afterwards: no run was given a neighbour's answer
        check(run, uses)
        for steps_ in (run.start, run.before, run.fresh, run.resumed, run.entered, run.after, *run.ends.values()):
            assert isinstance(steps_, tuple)  # shared between runs that use the same parts: no run can change them


def test_a_plain_run_takes_no_optional_step():
    run = Run(SimpleNamespace(), SimpleNamespace(), agents=[SimpleNamespace(tools=[SimpleNamespace()])])
    kernel.choose(run)
    optional = {step.do for table in (*TABLES.values(), kernel.FRESH, kernel.RESUMED, kernel.SETTLE,
                                      *kernel.ENDS.values()) for step in table if step.needs}
    taken = set(run.start + run.before + run.fresh + run.resumed + run.entered + run.after) | {
        do for ends in run.ends.values() for do in ends}
    assert not taken & optional and run.invoke is kernel.invoke and run.fresh[0] is kernel.offer
