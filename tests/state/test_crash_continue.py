"""A run whose process died continues from its session, and no side effect runs twice unasked (issue 34).

tests/helpers/crash_point.py runs a scripted run (turns of `pay` calls, a side effect, and `ship` calls, declared
idempotent) in a child process that kills itself with SIGKILL at the K-th point it passes: every call into the
session's ledger and journal before and after (each call's claim, its recorded output, the turn's write, each
journal entry), the model call's start and end, each tool's start and side effect. The test kills it at every
point in turn, then continues in this process (`finish`: no new input continues the journaled turn; a call
started with no output recorded waits for a person, who approves running it again) and checks against an
uninterrupted run:

- each `pay` side effect happened at most once, plus once for each time a person approved running it again after
  a crash (an approved repeat that dies before its output is recorded is asked about again);
- the session's history is the uninterrupted run's, item for item (so it says truly what happened);
- the final output is the uninterrupted run's.

Against a SQLite file (SQLiteSession), DBAPISession over sqlite3, and PostgreSQL where a server is available.
A generated test draws kill points (one, or a second one inside the continuing process) and tool plans.
"""
import collections
import concurrent.futures
import json
import os
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from miniagents import RunConfig
from session_backends import driver_or_skip, open_session
from support import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))
import crash_point  # noqa: E402

HELPER = os.path.join(ROOT, "tests", "helpers", "crash_point.py")
PLAN = [[["pay", 5], ["ship", 7]], [["pay", 9]]]
CONFIG = RunConfig(max_function_tool_concurrency=1)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL: POSIX only")


def spec_for(kind, tmp_path, server=None):
    if kind == "sqlite":
        return {"kind": "sqlite", "path": str(tmp_path / "crash.db")}
    if kind == "dbapi-sqlite3":
        return {"kind": "dbapi-sqlite3", "path": str(tmp_path / "crash.db")}
    return {"kind": "psycopg", "dsn": server.schema_dsn(driver_or_skip("psycopg"))}


def child(spec, plan, kill_at, effects, mode="start", names=False):
    """Run the helper; returns (killed, its output lines): with `names`, a line "point N NAME" for each point."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if names:
        env["CRASH_POINT_NAMES"] = "1"
    done = subprocess.run([sys.executable, HELPER, json.dumps(spec), json.dumps(plan), str(kill_at), str(effects),
                           mode], env=env, cwd=ROOT, capture_output=True, timeout=120)
    killed = done.returncode == -signal.SIGKILL
    assert killed or done.returncode == 0, done.stderr.decode()
    return killed, done.stdout.decode().splitlines()


def summary(items):
    """The history as what it says: who said what, which call, which output."""
    return [(i.get("type", "message"), i.get("role"), i.get("call_id"), i.get("name"), i.get("arguments"),
             str(i.get("output")), crash_point.last_answer([i]) if i.get("role") == "assistant" else None,
             i.get("content") if i.get("role") == "user" else None) for i in items]


def uninterrupted(spec, plan, effects):
    """(final output, history) of the run with no kill, and how many points it passed."""
    _, lines = child(spec, plan, 0, effects)
    with open_session(spec, "crash") as session:
        return (lines[-1].removeprefix("final "), summary(session.get_items())), int(lines[-2].split()[1])


def check(spec, plan, effects, approved, expected, where):
    """Finish in this process, then compare with the uninterrupted run (final output, history, side effects)."""
    agent = crash_point.agent_for(plan, str(effects))
    with open_session(spec, "crash") as session:
        final = crash_point.finish(session, agent, approved)
        history = summary(session.get_items())
        assert session.read_journal() == "", where
    assert (final, history) == expected, where
    done = collections.Counter(line.rsplit("/", 1)[1] for line in effects.read_text().splitlines())
    calls = {f"t{t}c{n}": tool for t, turn in enumerate(plan) for n, (tool, _) in enumerate(turn)}
    for call_id, tool in calls.items():
        allowed = 1 + approved.count(call_id) if tool == "pay" else 3
        assert 1 <= done[call_id] <= allowed, (where, call_id, done[call_id], sorted(approved))
    assert len({line.rsplit("/", 1)[0] for line in effects.read_text().splitlines()}) == 1, where  # one run id


def killed_then_finished(spec, plan, k, points, expected, effects):
    """The run killed at its point `k`, then finished here and compared with the uninterrupted run (`check`): the
    calls a person approved on the way."""
    approved = []
    effects.touch()
    killed, _ = child(spec, plan, k, effects)
    assert killed, f"point {k} of {points} was not reached"
    check(spec, plan, effects, approved, expected, f"killed at point {k} of {points}")
    return approved


@pytest.fixture(params=["sqlite", "dbapi-sqlite3", "psycopg"])
def kind(request):
    return request.param


def test_a_run_killed_at_every_point_continues_to_the_uninterrupted_result(kind, tmp_path, request):
    (tmp_path / "ref").mkdir()
    reference = spec_for("sqlite", tmp_path / "ref")
    expected, points = uninterrupted(reference, PLAN, tmp_path / "ref" / "effects")
    if kind == "psycopg":
        driver_or_skip("psycopg")
    server = request.getfixturevalue("postgres_server") if kind == "psycopg" else None  # once: not from threads

    def kill_at(k):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        spec = spec_for(kind, folder, server)  # PostgreSQL: a schema of its own
        return bool(killed_then_finished(spec, PLAN, k, points, expected, folder / "effects"))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:  # the children mostly wait for their disk syncs
        asked = list(pool.map(kill_at, range(1, points + 1)))
    assert points >= 40 and any(asked), (points, asked)  # some kill fell between a side effect and its record


@pytest.mark.parametrize("second", [9, 10, 11, 12, 13, 15, 16, 19, 20])
def test_a_crash_while_a_person_decides_about_a_call_that_may_have_happened_keeps_the_question(second, tmp_path):
    """The first process dies right after `pay`'s side effect, before its output is recorded; the process that
    continues asks a person about it and dies at its `second` point, before or after the approved repeat. The
    question stays in the session's journal (it was once closed when the continuing run paused, so the run was
    lost and started over under a new run id: a second payment nobody approved). A generated example found it."""
    plan = [[["pay", 1]]]
    (tmp_path / "ref").mkdir()
    expected, _ = uninterrupted(spec_for("sqlite", tmp_path / "ref"), plan, tmp_path / "ref" / "effects")
    spec, effects = spec_for("sqlite", tmp_path), tmp_path / "effects"
    effects.touch()
    killed, _ = child(spec, plan, 12, effects)  # 12: t0c0's side effect done, its output not recorded
    assert killed and effects.read_text().count("/t0c0") == 1
    _, lines = child(spec, plan, second, effects, mode="continue")
    approved = [line.split()[1] for line in lines if line.startswith("approved ")]
    check(spec, plan, effects, approved, expected, f"second kill at {second}")


def test_a_run_paused_for_approval_after_a_call_ran_killed_at_every_point_pays_once(tmp_path):
    """`pay` runs, then the run pauses to ask a person about `refund`; the process ends before anyone saved the
    paused state it returns (killed at each point, or not at all: the state is lost with its process). The pause
    stays in the session's journal until a resume of it completes, so finishing asks the person and pays once. (The
    journal was emptied as the run paused: finishing started the run over under a new run id and paid again.)"""
    plan = [[["pay", 5], ["refund", 2]], [["pay", 9]]]
    (tmp_path / "ref").mkdir()
    reference, effects = spec_for("sqlite", tmp_path / "ref"), tmp_path / "ref" / "effects"
    effects.touch()
    _, lines = child(reference, plan, 0, effects)
    assert lines[-1] == "final None"  # paused; the state it returned is lost
    points = int(lines[-2].split()[1])
    agent = crash_point.agent_for(plan, str(effects))
    with open_session(reference, "crash") as session:
        expected = (crash_point.finish(session, agent), summary(session.get_items()))
    assert expected[0] == "done: paid 5; refunded 2; paid 9", expected

    def kill_at(k):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        killed_then_finished(spec_for("sqlite", folder), plan, k, points, expected, folder / "effects")

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(kill_at, range(1, points + 1)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.lists(st.tuples(st.sampled_from(["pay", "ship"]), st.integers(1, 99)), min_size=1,
                              max_size=3), min_size=1, max_size=3),
       kills=st.lists(st.integers(1, 120), min_size=1, max_size=2), data=st.data())
def test_random_kill_points_and_tool_plans_never_repeat_a_side_effect_unasked(plan, kills, data, tmp_path_factory):
    """One kill in the run, and maybe a second in the process that continues it; then this process finishes."""
    folder = tmp_path_factory.mktemp("crash")
    plan = [[list(call) for call in turn] for turn in plan]
    kind = data.draw(st.sampled_from(["sqlite", "dbapi-sqlite3"]))
    (folder / "ref").mkdir()
    expected, _ = uninterrupted(spec_for("sqlite", folder / "ref"), plan, folder / "ref" / "effects")
    spec, effects = spec_for(kind, folder), folder / "effects"
    effects.touch()
    approved = []
    killed, _ = child(spec, plan, kills[0], effects)
    if killed and len(kills) > 1:
        _, lines = child(spec, plan, kills[1], effects, mode="continue")
        approved += [line.split()[1] for line in lines if line.startswith("approved ")]
    check(spec, plan, effects, approved, expected, f"plan {plan}, kills {kills}, {kind}")


@pytest.mark.parametrize("stopper", ["halt", "boom"])
def test_a_run_stopped_after_a_call_ran_killed_at_every_point_keeps_a_true_history(tmp_path, stopper):
    """The run fails by design after `pay` ran: `halt`'s guardrail trips (it never starts), or `boom` raises once
    its side effect happened; the `pay` after it never starts, unless a crash left `boom` unsure and a continue
    runs it while a person is asked about `boom`. Killed at every point, then continued here: each side effect
    happened at most once (plus approved repeats); the history pairs every call with its output and holds `pay`
    (what it did, or that it may have happened, when a crash left that unknown and the failure cut its question
    short) and every call whose effect happened; nothing stays in flight, so the session takes new input."""
    from miniagents import Runner, ToolInputGuardrailTripwireTriggered

    plan = [[["pay", 5], [stopper, 1], ["pay", 7]]]
    (tmp_path / "ref").mkdir()
    reference = spec_for("sqlite", tmp_path / "ref")
    (final, history), points = uninterrupted(reference, plan, tmp_path / "ref" / "effects")
    assert final == "halted" and [h[2] for h in history if h[0] == "function_call"] == (
        ["t0c0"] if stopper == "halt" else ["t0c0", "t0c1"])

    def kill_at(k):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        spec, effects, approved = spec_for("sqlite", folder), folder / "effects", []
        effects.touch()
        killed, _ = child(spec, plan, k, effects)
        agent = crash_point.agent_for(plan, str(effects))
        with open_session(spec, "crash") as session:
            try:
                crash_point.finish(session, agent, approved)
            except (ToolInputGuardrailTripwireTriggered, RuntimeError):
                pass
            assert session.read_journal() == "", k
            items = session.get_items()
            Runner.run_sync(agent, "go on", session=session)  # no turn left in flight
        done = collections.Counter(line.rsplit("/", 1)[1] for line in effects.read_text().splitlines())
        where = f"killed at point {k} of {points}: {done}, approved {approved}"
        assert killed and all(n <= 1 + approved.count(call) for call, n in done.items()), where
        assert "t0c1" in approved or not done["t0c2"], where  # only a person's question lets the run go on
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
        assert calls == outputs and "t0c0" in calls and set(done) <= set(calls), where

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(kill_at, range(1, points + 1)))


def paused(folder, plan):
    """The plan run on a new session in `folder` until it pauses for approval, its state saved as JSON: (spec,
    effects file, agent, the helper's mode that resumes that state)."""
    from miniagents import Runner

    spec, effects = spec_for("sqlite", folder), folder / "effects"
    effects.touch()
    agent = crash_point.agent_for(plan, str(effects))
    with open_session(spec, "crash") as session:
        result = Runner.run_sync(agent, crash_point.INPUT, session=session, run_config=CONFIG)
    (folder / "state.json").write_text(result.to_state().to_string())
    return spec, effects, agent, f"resume={folder / 'state.json'}"


def test_a_take_over_of_a_resume_killed_at_every_point_leaves_the_run_to_finish_paying_once(tmp_path):
    """A paused state is approved and resumed in a process killed at each point; this process then takes it over
    (`take_over()`, as after `AlreadyResumedError` with outcome None) and finishes the session (`finish`). The
    take-over refused with "completed" (the killed resume had written its turn) claimed the pause a continue of the
    turn still journaled claims: that continue then raised `AlreadyResumedError` saying the run "stopped before it
    finished", emptied the journal, and the run never got its answer (its second `pay` never ran)."""
    from miniagents import AlreadyResumedError, Runner, RunState
    from miniagents.ledger import MAY_HAVE_HAPPENED, NOT_RUN_AGAIN

    plan = [[["pay", 5], ["refund", 2]], [["pay", 9]]]

    (tmp_path / "ref").mkdir()
    _, _, _, mode = paused(tmp_path / "ref", plan)
    _, lines = child(spec_for("sqlite", tmp_path / "ref"), plan, 0, tmp_path / "ref" / "effects", mode)
    assert lines[-1] == "final done: paid 5; refunded 2; paid 9", lines
    points = int(lines[-2].split()[1])

    def kill_at(k):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        spec, effects, agent, mode = paused(folder, plan)
        killed, _ = child(spec, plan, k, effects, mode)
        assert killed, k
        state = RunState.from_string(agent, (folder / "state.json").read_text())
        for item in state.get_interruptions():
            state.approve(item)
        state.take_over()
        approved = []
        with open_session(spec, "crash") as session:
            try:
                Runner.run_sync(agent, state, session=session, run_config=CONFIG)
            except AlreadyResumedError:
                pass
            final = crash_point.finish(session, agent, approved)
            items = session.get_items()
            assert session.read_journal() == "", k
        done = collections.Counter(line.rsplit("/", 1)[1] for line in effects.read_text().splitlines())
        where = f"killed at point {k} of {points}: {final}, {done}, approved {approved}"
        assert final.startswith("done: paid 5; ") and final.endswith("; paid 9"), where
        assert done["t1c0"] >= 1 and all(n <= 1 + approved.count(call) for call, n in done.items()), where
        outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
        assert [i["call_id"] for i in items if i.get("type") == "function_call"] == list(outputs), where
        assert outputs["t0c1"] in ("refunded 2", NOT_RUN_AGAIN, MAY_HAVE_HAPPENED), where

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(kill_at, range(1, points + 1)))


def test_a_take_over_killed_once_it_claimed_its_pause_leaves_the_turn_to_continue(tmp_path):
    """A paused state is approved and resumed in a process killed as it writes its turn (its calls ran and recorded
    their outputs), then taken over (`take_over()`) in a process killed the moment its pause claim returned, before
    it journaled anything. Finishing the session continues the turn the resume journaled, to the uninterrupted
    result. The continue claimed the pause that dead take-over held: it raised `AlreadyResumedError` ("it is still
    running, or it stopped before it finished"), emptied the journal, and the run never got its answer."""
    plan = [[["pay", 5], ["refund", 2]], [["pay", 9]]]

    def first(lines, name):
        return next(int(line.split()[1]) for line in lines if line.startswith("point ") and line.split()[2] == name)

    (tmp_path / "ref").mkdir()
    spec, effects, agent, resume = paused(tmp_path / "ref", plan)
    _, lines = child(spec, plan, 0, effects, resume, names=True)
    writes = first(lines, "add_items:before")  # the resume's turn write
    with open_session(spec, "crash") as session:
        expected = (lines[-1].removeprefix("final "), summary(session.get_items()))
    (tmp_path / "ref2").mkdir()
    spec, effects, agent, resume = paused(tmp_path / "ref2", plan)
    assert child(spec, plan, writes, effects, resume)[0]
    _, lines = child(spec, plan, 0, effects, resume.replace("resume=", "take-over="), names=True)
    claimed = first(lines, "claim_call:after")  # the take-over's pause claim returned

    spec, effects, agent, resume = paused(tmp_path, plan)
    assert child(spec, plan, writes, effects, resume)[0]
    assert child(spec, plan, claimed, effects, resume.replace("resume=", "take-over="))[0]
    check(spec, plan, effects, [], expected, f"resume killed at {writes}, its take-over at {claimed}")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k1=st.integers(0, 60), second=st.sampled_from(["take-over=", "resume=", "continue"]), k2=st.integers(1, 60))
def test_a_resume_killed_then_a_second_worker_killed_then_a_continue_pays_once_and_answers(k1, second, k2,
                                                                                            tmp_path_factory):
    """A paused state is approved and resumed in a process killed at a generated point once it claimed its pause;
    a second worker (a take-over, a second resume of the same state, a continue) is killed at another; then this
    process finishes the session: each side effect at most once (plus a person's approved repeats), the run gets its
    answer, the history pairs each call with an output, and nothing stays in flight."""
    plan = [[["pay", 5], ["refund", 2]], [["pay", 9]]]
    folder = tmp_path_factory.mktemp("twice")
    (folder / "ref").mkdir()
    spec, effects, agent, resume = paused(folder / "ref", plan)
    _, lines = child(spec, plan, 0, effects, resume, names=True)
    names = [line.split()[2] for line in lines if line.startswith("point ")]
    claimed = names.index("claim_call:after") + 1  # the resume's pause claim returned
    (folder / "run").mkdir()
    spec, effects, agent, resume = paused(folder / "run", plan)
    k1 = claimed + k1 % (len(names) + 1 - claimed)
    assert child(spec, plan, k1, effects, resume)[0]
    mode = "continue" if second == "continue" else resume.replace("resume=", second)
    killed, lines = child(spec, plan, k2, effects, mode)
    approved = [line.split()[1] for line in lines if line.startswith("approved ")]
    with open_session(spec, "crash") as session:
        final = crash_point.finish(session, agent, approved)
        items = session.get_items()
        assert session.read_journal() == ""
    done = collections.Counter(line.rsplit("/", 1)[1] for line in effects.read_text().splitlines())
    where = f"resume killed at {k1}, {second} at {k2} ({killed}): {final}, {dict(done)}, approved {approved}"
    assert final.startswith("done: paid 5; ") and final.endswith("; paid 9"), where
    assert all(n <= 1 + approved.count(call) for call, n in done.items()), where
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    assert calls == [i["call_id"] for i in items if i.get("type") == "function_call_output"] and done["t1c0"], where
