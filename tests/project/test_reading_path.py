"""The reading path: what a learner reads to follow one run, kept small and kept equal to the README's reading order.

tests/reading_path.py counts the distinct lines of miniagents/ that run inside `Runner` (the scripted model left
out) for three runs. The ceilings below are today's figures: a change that puts more on a plain run's path fails
here, on purpose (raise one only in its own commit, saying why). Issue 19 asks for 300 lines in 8 files (hello
world), 550 (approval) and 300 (handoff); the approval is within it, the other two are not yet.
"""
import sys

import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
import readme_tables  # noqa: E402
import reading_path  # noqa: E402

CEILINGS = {  # run -> (distinct lines, files); lowered as each round took off a plain run what it does not need:
    # issue 19 (428, 508, 385 -> 421, 501, 390), then issue 29's kernel of steps (a plain run enters only the steps
    # it uses; upstream's rules left for the upstream shell; raw items plain dicts; the entered steps, the invoke
    # chain and the turn seam chosen like every other step: 249, 304, 220); raised once, by each turn's check that its
    # agent and tools are those the steps were chosen for (`run.meet`: a hand-built handoff's agent, a resumed state's,
    # a tool added during the run had their guardrails skipped), and the handoff by the check of what a handoffs
    # entry names (`state._handed_to`); the approval once more, by the paused turn taking the run's new input over
    # from the state (kept there until a turn is written or paused, so a turn a cancel drops loses none of it); and
    # by a resumed turn's agent-tool calls whose inner run goes on (counted when they began; bound to their tool
    # though it was switched off since); and once more by a resumed state taken by its run until it ends
    # (`run.take`, `run.held`: one state object given to two runs at once ran an approved call twice), whose steps a
    # paused state now chooses apart from a fresh run's; the approval by finding a call's decision in the set kept
    # beside its list (approving and resuming n calls read every decided call for each: n²), and the handoff by the
    # run's text input having its lone surrogates repaired (items.clean_text, which the hello world's tool output
    # already runs); the handoff by adding a response's usage under the lock that every count of a shared usage takes
    # (agent tools running at once lost tokens), which the hello world pays for by letting the JSON decoder say that
    # a tool's arguments are no text; the approval by every given state taken by its run whatever it holds
    # (`run.given`: one with no model response yet, stopped by a request limit of 0 or made by hand, ran twice at once);
    # and the hello world by a model's token counts, each added under a total of at least its input and output
    # (a model's own total under them loosened total_tokens_limit). What a run takes of a model's answer is checked
    # and kept where its ModelResponse is made (a message is the assistant's whatever role it claims), and only an
    # id a session keys is kept as a call id (`items.keyable`, which the turn already asks)
    "hello world": (250, 8),
    "approval through JSON": (341, 9),
    "handoff": (230, 8),
}
# Small helpers of the loop's two files that the hello world enters and the reading order leaves out: each is a line
# or two that its caller's name already says.
HELPERS = {"plugins_of", "check_max_turns", "model_arguments", "invoke", "leave_agent"}


class Measured:
    """One run's measure, as the fresh process reported it."""

    def __init__(self, report):
        self.lines = {tuple(line) for line in report["lines"]}
        self._files, self._entered = report["files"], [tuple(e) for e in report["entered"]]

    def per_file(self):
        return self._files

    def first_entered(self):
        return self._entered


@pytest.fixture(scope="module")
def runs():
    """Measured in a fresh interpreter: in this one, other tests have registered shells' plugins."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, reading_path.__file__, "--json"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return {name: Measured(report) for name, report in json.loads(done.stdout).items()}


@pytest.mark.parametrize("name", list(CEILINGS))
def test_a_plain_runs_path_stays_within_its_ceiling(runs, name):
    lines, files = CEILINGS[name]
    tracer = runs[name]
    assert len(tracer.lines) <= lines and len(tracer.per_file()) <= files, (len(tracer.lines), tracer.per_file())


def test_the_scripted_model_and_shells_are_not_on_the_path(runs):
    for tracer in runs.values():
        paths = {path for path, _ in tracer.lines}
        assert not any("/" in p and not p.startswith("models/") for p in paths)


def test_the_readme_reading_order_is_the_path_a_run_takes(runs):
    entered = {(path, name) for tracer in runs.values() for path, name in tracer.first_entered()}
    order = [(path, name) for path, name, _ in readme_tables.READING_ORDER]
    assert [entry for entry in order if entry not in entered] == [], "the reading order names what no run enters"
    hello = [entry for entry in runs["hello world"].first_entered() if "<locals>" not in entry[1]]
    on_hello = [entry for entry in order if entry in hello]
    assert on_hello == sorted(on_hello, key=hello.index), "the reading order is not the order the run takes"
    loop = [name for path, name in hello if path in ("run.py", "turn.py")]
    unlisted = [name for name in loop if name not in {n for _, n in order} | HELPERS]
    assert unlisted == [], f"the hello world enters {unlisted}: add them to the reading order (or to HELPERS)"
