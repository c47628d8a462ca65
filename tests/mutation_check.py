"""Mutation check: inject regressions into the kernel and prove the test suite catches each one.

A script, not a test module (pytest does not collect it: its name does not start with `test_`).

    python tests/mutation_check.py              # every curated mutant, 2 jobs
    python tests/mutation_check.py --list       # what the mutants are
    python tests/mutation_check.py --only sse   # mutants whose id, file or description contain "sse"
    python tests/mutation_check.py --full       # always run the whole suite for each mutant
    python tests/mutation_check.py --generated --sample 60 --seed 1   # generated mutants (mutation_generate.py)
    python tests/mutation_check.py --generated --per-module 16 --seed 1  # 16 of each module's, for its rate

Curated mutants are hand-written edits, `(file, old, new, breaks)`, each aimed at one rule the kernel keeps (or a
shell keeps: "upstream/runner.py" is a file of the upstream shell): the `old` text occurs exactly once in its file
(tests/project/test_mutation_check.py keeps that true as the code moves and names the mutant to update when it stops
matching). Generated mutants come from the AST of every module (see
tests/mutation_generate.py for the rules); a generated mutant that survives and cannot change behaviour is listed
with a one-line reason in tests/mutation_equivalent.txt (by its stable id) and is counted apart, not as a survivor.

For each mutant the script edits a private copy of the repository (one copy per job, made once; the work tree
is never touched), runs the test files most likely to catch it, and only if those pass runs the rest of the
suite: a mutant SURVIVES only when the whole suite passes with it in place. Then the file is restored. A mutant
that stops the package importing (pytest cannot load tests/conftest.py, which the baseline loaded) is caught. One
that outlives the per-mutant timeout counts as caught (the suite did not pass), but is reported as TIMEOUT.
Tests marked `xfail` (known bugs) are left out of every run: a mutant must not count as killed because it made
a known-bug test pass. First the unmutated suite runs once: tests that already fail without any mutant (work in
progress) are left out of every mutant's run and named in the output (`--strict-baseline` stops instead; in CI,
right after the suite passed, `--no-baseline` skips it).
Every pytest the check starts runs in a session of its own (so it leads its own process group), writes its output
to a file, and is ended whole when it is done: on a timeout its group, its descendants and whatever carries its
mark in the environment (a test's child that left the group) get SIGTERM, then SIGKILL 5 s later, and the mutant's
line says so (`process group N ended (3 processes, SIGTERM)`); a run that ended by itself has whatever its tests
left running ended the same way. An interrupted check (Ctrl-C, SIGTERM, SIGHUP) ends every test process it
started before it exits (128 + the signal's number). The summary names every mutant the suite did not fail, with
its file:line and mutation: the survivors, those listed as equivalent, and those caught only by the timeout.
Hypothesis runs with the derandomised "mutation" profile (tests/conftest.py), so a mutant's verdict is
repeatable; property tests that take their example count from the profile play 30 examples there.
Exit status: 0 when every mutant was caught (generated: when the kill rate reaches `--min-kill-rate`), 1 when
not, 2 when the check itself could not run. Standard library only.
"""
from __future__ import annotations

import argparse
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import mutation_generate  # noqa: E402  (tests/ is not a package)

EQUIVALENT_FILE = os.path.join(ROOT, "tests", "mutation_equivalent.txt")
IGNORED = (".git", ".venv*", "venv", "__pycache__", ".hypothesis", ".pytest_cache", ".benchmarks", "dist",
           "build", "*.egg-info", "*.pyc")
PYTEST = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not xfail"]


@dataclass(frozen=True)
class Mutant:
    file: str           # path relative to the repository root
    old: str            # text that occurs exactly once in the file (curated), or at `start` (generated)
    new: str            # what it becomes
    breaks: str         # the behaviour the suite must pin (curated); the stable id (generated)
    tests: Tuple[str, ...] = ()  # test files to run first (relative to the root)
    start: Optional[int] = None  # generated mutants: where `old` is in the file
    line: int = 0

    @property
    def generated(self) -> bool:
        return self.start is not None

    @property
    def id(self) -> str:
        return self.breaks if self.generated else f"{os.path.basename(self.file)}: {self.breaks}"

    def describe(self) -> str:
        if not self.generated:
            return f"{self.file[len('miniagents/'):]}  {self.breaks}"
        squash = mutation_generate._squash
        return f"{self.file[len('miniagents/'):]}:{self.line}  {squash(self.old)[:70]}  ->  {squash(self.new)[:70]}"


def M(file: str, old: str, new: str, breaks: str, *tests: str) -> Mutant:
    """A curated mutant of `miniagents/<file>`; `tests` are test module names to run first (e.g. "test_run")."""
    return Mutant("miniagents/" + file, old, new, breaks, tuple(test_path(t) for t in tests))


def test_path(name: str) -> str:
    """Where the test module `name` lives (tests/<area>/<name>.py), relative to the root; a missing one is named
    as it would be at the top of tests/, so the mutant list's own test reports it."""
    for folder, _, files in os.walk(os.path.join(ROOT, "tests")):
        if f"{name}.py" in files:
            return os.path.relpath(os.path.join(folder, f"{name}.py"), ROOT).replace(os.sep, "/")
    return f"tests/{name}.py"


MUTANTS: List[Mutant] = [
    # --- turn.py: the decision order, call order, exactly once, unknown tools, handoffs, approvals ----------
    M("turn.py",
      "    if not isinstance(response, ModelResponse):\n",
      "    if False:\n",
      "a custom model's return that is no ModelResponse is a UserError saying what it returned", "test_items"),
    M("turn.py",
      "    if waiting:  # a pause: the turn resumes with the outputs it has\n"
      "        turn.next_step = waiting_for_a_person(run, turn, waiting)\n"
      "    elif handoff is not None:\n        turn.next_step = NextStepHandoff(handoff)\n",
      "    if handoff is not None:\n        turn.next_step = NextStepHandoff(handoff)\n"
      "    elif waiting:  # a pause: the turn resumes with the outputs it has\n"
      "        turn.next_step = waiting_for_a_person(run, turn, waiting)\n",
      "decision order: a pending approval wins over a handoff", "test_run", "test_approvals"),
    M("turn.py",
      "    elif handoff is not None:\n        turn.next_step = NextStepHandoff(handoff)\n",
      "    elif handoff is not None and not any(c.kind == \"function\" and c.output for c in calls):\n"
      "        turn.next_step = NextStepHandoff(handoff)\n",
      "decision order: a handoff wins over tool_use_behavior / running again", "test_run", "test_handoffs"),
    M("turn.py",
      "(NextStepRunAgain() if calls or turn.replays else final_answer(turn))",
      "(NextStepRunAgain() if [c for c in calls if c.kind == \"function\"] or turn.replays else final_answer(turn))",
      "a turn whose calls produced no function results (unknown tool) runs again instead of ending",
      "test_run", "test_tools"),
    M("turn.py",
      "        verdict = ToolsToFinalOutputResult(True, results[0].output)",
      "        verdict = ToolsToFinalOutputResult(True, results[-1].output)",
      "stop_on_first_tool: the first tool's output is the final output", "test_agent", "test_run"),
    M("turn.py",
      "    def job(call: Call) -> None:\n        try:\n            run_one(run, turn, call)\n",
      "    finished = []  # the outputs in completion order, handed out in call order by the last call to finish\n\n"
      "    def job(call: Call) -> None:\n        try:\n            run_one(run, turn, call)\n"
      "            output, call.output = call.output, None\n            finished.append(output)\n"
      "            if len(finished) == len(to_run):\n"
      "                for c, o in zip(to_run, finished):\n                    c.output = o\n",
      "concurrent tool results are paired with their calls in call order, not completion order", "test_tools"),
    M("turn.py",
      "                   for call in turn.calls if call.output is not None]",
      "                   for call in reversed(turn.calls) if call.output is not None]",
      "tool outputs enter the transcript in the order the model issued the calls", "test_tools", "test_run"),
    M("turn.py",
      "            seen.add(item[\"call_id\"])\n",
      "            pass\n",
      "a repeated call id within one response runs once", "test_tools"),
    M("turn.py",
      "        if call.kind == \"handoff\" or call.fate:\n",
      "        if call.kind == \"handoff\":\n",
      "a call id that already has an output (resume, session) never runs again", "test_approvals",
      "test_run_state"),
    M("turn.py",
      "                              f\"Available tools: {', '.join(sorted(turn.setup.tools)) or 'none'}.\")",
      "                              f\"\")",
      "the unknown-tool message lists the available tools", "test_tools"),
    M("turn.py",
      "    handoff = next((c for c in calls if c.kind == \"handoff\" and c.output is None), None)",
      "    handoff = next((c for c in reversed(calls) if c.kind == \"handoff\"), None)",
      "only the first handoff of a response runs", "test_handoffs"),
    M("turn.py",
      'MULTIPLE_HANDOFFS = "Multiple handoffs detected, ignoring this one."',
      'MULTIPLE_HANDOFFS = "Multiple handoffs detected."',
      "the other handoffs are answered with upstream's 'Multiple handoffs detected' text", "test_handoffs"),
    M("turn.py",
      "            decision = True if not needs_approval(call.target, ctx, call.item) else None",
      "            decision = True",
      "a tool that needs approval never runs before an explicit approve", "test_approvals"),
    M("turn.py",
      "    return bool(caller.call(flag, ctx, params, call[\"call_id\"]))",
      "    return bool(flag)",
      "a needs_approval callable decides per call (with the call's arguments)", "test_approvals"),
    M("turn.py",
      'REJECTED = "Tool execution was not approved."',
      'REJECTED = "Tool call rejected."',
      "a rejected call is answered with upstream's default rejection message", "test_approvals"),
    M("turn.py",
      "ctx.rejection_message(name, call.call_id) or error_text(run, call,",
      "error_text(run, call,",
      "reject(rejection_message=...) is what the model sees", "test_approvals"),
    M("context.py",
      "        with COUNTING:\n            for name in",
      "        if True:\n            for name in",
      "agent tools running at once add their tokens to the usage they share one at a time (none is lost)",
      "test_run"),
    M("items.py",
      "            problem = _answer_problem(item.get(\"content\")) if item.get(\"type\") == \"message\" else None",
      "            problem = None",
      "a custom model's message whose content is no list of parts is a UserError where it is made", "test_items"),
    M("items.py",
      "    if any(part.get(\"type\") == \"output_text\" and not isinstance(part.get(\"text\"), str) for part in content):",
      "    if False:",
      "a custom model's output_text part whose text is no string is a UserError where it is made", "test_items"),
    M("items.py",
      "    if content is None or isinstance(content, str):\n        return None\n    if not",
      "    if isinstance(content, str):\n        return None\n    if not",
      "a server's message with no content still runs (only what would fail the run is refused)", "test_items"),
    M("items.py",
      "        if part[\"type\"] in (\"input_text\", \"output_text\") and not isinstance(part.get(\"text\"), str):",
      "        if False:",
      "a text part whose text is no string is refused where it enters", "test_items"),
    M("items.py",
      "        if not all(type(count) is int for count in self.usage.counts()):",
      "        if False:",
      "a custom model's usage whose token counts are no whole numbers is a UserError where it is made", "test_run"),
    M("steps.py",
      "    except (AttributeError, TypeError, ValueError, OverflowError):  # inf",
      "    except (AttributeError, TypeError, ValueError):  # inf",
      "a streamed usage of infinite tokens is the model's mistake, not a bare OverflowError", "test_run"),
    M("validate.py",
      "    except ValueError as exc:  # a check in __post_init__",
      "    except (TypeError, ValueError) as exc:  # a check in __post_init__",
      "a bug in a dataclass parameter's __post_init__ is the tool's failure, redacted, never the model's to fix",
      "test_tools"),
    M("validate.py",
      "    return typing.Annotated[(_unqualified(args[0]), *args[1:])] if origin is typing.Annotated else tp",
      "    return tp",
      "a TypedDict's NotRequired inside Annotated is read as one around it", "test_schema"),
    M("validate.py",
      '    if getattr(origin, "_name", None) in _QUALIFIERS:',
      "    if origin in [getattr(typing, name, None) for name in _QUALIFIERS]:",
      "a TypedDict qualifier of typing_extensions (Python 3.9-3.10, ReadOnly before 3.13) is read as typing's",
      "test_schema"),
    M("validate.py",
      "    except TypeError:  # no text at all",
      "    except ZeroDivisionError:  # no text at all",
      "arguments that are no text are an ArgumentsError, not a bare TypeError", "test_hostile_values"),
    M("turn.py",
      "    if refusal is not None:\n",
      "    if False:\n",
      "a refusal as the final message raises ModelRefusalError, not an empty final output", "test_run"),
    M("errors.py",
      "        super().__init__(f\"Model refused to produce output: {refusal}\")",
      "        super().__init__(\"Model refused to produce output\")",
      "ModelRefusalError's message carries what the model said", "test_run"),
    M("turn.py",
      "        if not isinstance(verdict, ToolsToFinalOutputResult):\n",
      "        if False:\n",
      "a tool_use_behavior callable returning no ToolsToFinalOutputResult is a UserError saying what it returned",
      "test_agent"),
    # --- context.py: approval records ------------------------------------------------------------------------
    M("context.py",
      "        if always:\n",
      "        if always and False:\n",
      "always_approve / always_reject cover later calls of the same tool", "test_approvals"),
    M("state.py",
      "approvals=call_ids_of(context_doc[\"approvals\"])",
      "approvals=context_doc[\"approvals\"]",
      "a loaded document's decisions are found in one step each, not by reading every decided call", "test_approvals"),
    M("upstream/openai_types.py",
      "    \"ResponseReasoningTextDoneEvent\": \"response.reasoning_text.done\",",
      "    \"\": \"response.reasoning_text.done\",",
      "the stand-in openai types include the reasoning text events under openai's names", "test_runner"),
    M("upstream/hosted_tools.py",
      "            spec[\"external_web_access\"] = self.external_web_access",
      "            spec[\"\"] = self.external_web_access",
      "a web search tool's external_web_access is sent under the Responses API's name", "test_porting_models"),
    M("context.py",
      "        if self.ids is None:\n            self.ids = set(self)",
      "        if True:\n            self.ids = set(self)",
      "approving and resuming n calls finds each decision in one step, not by reading every decided call (n²)",
      "test_approvals"),
    M("context.py",
      "        if self.ids is not None:\n            self.ids.add(call_id)",
      "        if False:\n            self.ids.add(call_id)",
      "an approval recorded keeps the set beside its list up to date (approving n calls is not n²)", "test_approvals"),
    M("context.py",
      "        self.ids = None\n        return change(self, *args, **kwargs)",
      "        return change(self, *args, **kwargs)",
      "a decision list edited in place is read as it is now (a withdrawn approval no longer counts)",
      "test_approvals"),
    M("state.py",
      "            rejection_message = clean_text(rejection_message)",
      "            pass",
      "a rejection message's lone surrogate is repaired before the model or the document gets it", "test_approvals"),
    # --- run.py and steps.py: the loop, its limits and guardrails ---------------------------------------------
    M("run.py",
      "    if run.emit is not None and run.state.cancel_mode != \"immediate\" and not turn.announced:\n",
      "    if False:\n",
      "a failed streamed turn's kept outputs reach the stream's reader", "test_exactly_once"),
    M("run.py",
      "    turn.said = len(turn.items)  # the outputs settled after them are the ones a stream's reader hears\n",
      "",
      "a failed streamed turn whose calls were not all kept still announces the kept outputs", "test_exactly_once"),
    M("run.py",
      "        error = keep_what_ran(run, error)",
      "        pass",
      "a turn that fails after calls ran keeps them in the state and the session", "test_exactly_once"),
    M("run.py",
      "            lost = keep_what_ran(run, stop)  # a turn stopped midway after its calls ran (an async step cancelled)",
      "            lost = stop",
      "a cancel that stops a turn midway keeps the calls that ran", "test_exactly_once"),
    M("run.py",
      "        started = call.call_id in turn.unsure or call.paused is not None or call.raised is not None and \\",
      "        started = call.paused is not None or call.raised is not None and \\",
      "a call a crash left unsure, whose question a failure cut short, is kept as may have happened",
      "test_crash_continue"),
    M("run.py",
      "    if isinstance(error, AgentsException):  # this run's, as upstream's: an inner run's is replaced",
      "    if isinstance(error, AgentsException) and error.run_data is None:",
      "the error an agent tool's inner run raises carries the outer run's data", "test_exactly_once"),
    M("turn.py",
      "        call.raised = error",
      "        pass",
      "a call that raised once started is kept as may have happened", "test_exactly_once"),
    M("ledger.py",
      "            stored(run, run.ledger.settle_call, run.state.run_id, call.call_id, stopped)",
      "            pass",
      "a call that raised has may-have-happened as its recorded outcome: a continue asks no one",
      "test_exactly_once"),
    M("ledger.py",
      "            elif kept:  # the history says what the turn did: nothing more of it runs, no person is asked",
      "            elif False:",
      "a continue of a turn a failed run kept runs nothing more of it", "test_crash_continue"),
    M("run.py",
      "            run.failure = stop",
      "            pass",
      "Ctrl-C inside a call leaves the turn to continue as a crash does", "test_exactly_once"),
    M("ledger.py",
      "    kept = continued and (written(run) or stopped)  # the run (which may have written what ran): the turn ended there",
      "    kept = continued and written(run)  # the run (which may have written what ran): the turn ended there",
      "a continue of a turn a call of which raised and stopped the run runs nothing more of it", "test_crash_continue"),
    M("run.py",
      "    Step(steps.guarded, TOOL_GUARDRAILS),\n    Step(ledger.claimed, \"run.ledger\"),",
      "    Step(ledger.claimed, \"run.ledger\"),\n    Step(steps.guarded, TOOL_GUARDRAILS),",
      "the ledger records what the model was told, after the output guardrails", "test_exactly_once"),
    M("ledger.py",
      "                stopped = HALTED if isinstance(error, ToolInputGuardrailTripwireTriggered) else STOPPED_MIDWAY",
      "                stopped = STOPPED_MIDWAY",
      "a call its input guardrail stopped is recorded as not run", "test_exactly_once"),
    M("ledger.py",
      "            if isinstance(error, caller.Cancelled) and not error.started:  # stopped before it started (in its input",
      "            if isinstance(error, caller.Cancelled):",
      "the ledger records a call a cancel stopped while it ran as stopped midway", "test_cancellation"),
    M("turn.py",
      "        if stop.started:\n            call.output = (STOPPED_MIDWAY, STOPPED_MIDWAY)",
      "        if False:\n            call.output = (STOPPED_MIDWAY, STOPPED_MIDWAY)",
      "an async tool a cancel stopped while it ran is kept as stopped midway, never run again", "test_cancellation"),
    M("tool.py",
      "        stop.started = True",
      "        stop.started = False",
      "a cancel that stops a running tool says the tool started", "test_cancellation"),
    M("steps.py",
      "            if record.text is None:\n                raise",
      "            raise",
      "a cancel a plugin hears after the call returned keeps its output", "test_cancellation"),
    M("run.py",
      "    pauses = state.pending.pauses + 1 if state.pending is not None else 0",
      "    pauses = state.pending.pauses + 1 if state.pending is not None else 1",
      "a turn's first pause is claimed as pause 0", "test_exactly_once"),
    M("upstream/providers.py",
      "            raise UserError(\"MultiProvider unknown_prefix_mode must be one of: 'error', 'model_id'.\")",
      "            pass",
      "an unknown_prefix_mode that does not exist is refused", "test_porting_models"),
    M("vendor/__init__.py",
      "            raise CheckFailed(f\"{dest} is not a zip made by this command: {error}\") from None",
      "            pass",
      "--check of a file that is no zip says so", "test_vendor_command"),
    M("ledger.py",
      "            elif inner_resumed(run, call.paused):  # the process that died had resumed its inner run: what that did",
      "            elif False:",
      "a continue tells the model an agent tool whose inner resume a dead process claimed may have happened",
      "test_journal_neighbours"),
    M("ledger.py",
      "            if recorded is not None:  # it returned before the process died\n"
      "                call.fate, call.output, call.paused = \"done\", (recorded, recorded), None",
      "            if False:\n                pass",
      "a continue tells the model the output an agent tool returned before its process died", "test_journal_neighbours"),
    M("ledger.py",
      "            continue  # else its inner run goes on, claiming its own calls",
      "            pass",
      "a continue of an agent tool paused inside asks no one", "test_cancellation"),
    M("ledger.py",
      "        if call.paused is None:  # (an agent tool's paused inner run goes on: its call was claimed when it started)",
      "        if True:",
      "an agent tool's paused inner run goes on unclaimed", "test_cancellation", "test_exactly_once"),
    M("turn.py",
      "    if not results or any(result.output in CUT_SHORT for result in results):",
      "    if not results:",
      "a turn a cancel cut short ends with no tool's result", "test_cancellation"),
    M("ledger.py",
      "                stopped = NEVER_STARTED  # guardrails): the resume tells the model so",
      "                stopped = STOPPED_MIDWAY",
      "the ledger records a call a cancel stopped in its input guardrail as never started", "test_cancellation"),
    M("turn.py",
      "CUT_SHORT = (STOPPED_MIDWAY, WITHHELD)",
      "CUT_SHORT = (STOPPED_MIDWAY,)",
      "a withheld output never ends a turn through tool_use_behavior", "test_cancellation"),
    M("caller.py",
      "                if not aborted:  # its own (a task it awaited was cancelled): its failure, not the run's cancel\n",
      "                if False:\n",
      "an async callable cancelled by itself fails as itself, not as the run's cancel", "test_cancellation"),
    M("upstream/custom_data.py",
      "                except caller.Cancelled:  # the call ran: the run stops at its next step, its output kept\n"
      "                    pass",
      "                except ValueError:\n                    pass",
      "a cancel while a custom data extractor runs keeps the call's output", "test_custom_data"),
    M("run.py",
      "            if run.turn is not None and run.turn.calls and not run.turn.saved:  # when calls it interrupted may run on",
      "            if True:",
      "Ctrl-C while the model answers leaves nothing in flight", "test_exactly_once"),
    M("run.py",
      "        run.abandoned = True\n        if not run.begun:",
      "        run.abandoned = False\n        if not run.begun:",
      "an awaited run cancelled after a call ran leaves its pause to continue", "test_exactly_once"),
    M("steps.py",
      "    turn.saved = True",
      "    pass",
      "a turn saved before its output guardrail trips is in a plain session's history once", "test_exactly_once"),
    M("steps.py",
      "                return WITHHELD, WITHHELD",
      "                raise",
      "a cancel while a call's output is checked never runs it again", "test_exactly_once"),
    M("run.py",
      "                  if \"call_id\" not in item.raw_item or item.raw_item[\"call_id\"] in ran]",
      "                  ]",
      "a failed turn's calls that never ran are dropped from what it keeps", "test_exactly_once"),
    M("run.py",
      "        return lost",
      "        return error",
      "a failed turn the session cannot take stays journaled", "test_exactly_once"),
    M("run.py",
      "    if run.state.current_turn >= run.state.max_turns:",
      "    if run.state.current_turn > run.state.max_turns:",
      "max_turns off by one: the run stops before model call max_turns + 1", "test_run"),
    M("steps.py",
      "    run_input_guardrails(run, [g for g in guardrails if not g.run_in_parallel], *check)\n"
      "    racing = [g for g in guardrails if g.run_in_parallel]",
      "    racing = guardrails",
      "input guardrails block by default: a tripwire means no model call", "test_guardrails"),
    M("steps.py",
      "    if run.state.current_turn != 1 or run.state.model_responses:\n        return\n"
      "    from .guardrails import run_input_guardrails",
      "    if run.state.model_responses and turn.agent is run.state.starting_agent:\n        return\n"
      "    from .guardrails import run_input_guardrails",
      "input guardrails run once, for the starting agent, before the first model call", "test_guardrails",
      "test_handoffs"),
    M("steps.py",
      "run_output_guardrails(run, guardrails, agent, turn.next_step.output,",
      "(lambda *args: None)(run, guardrails, agent, turn.next_step.output,",
      "output guardrails run before a final output is returned", "test_guardrails"),
    M("steps.py",
      "list(agent.output_guardrails) + list(run.config.output_guardrails or ())",
      "list(agent.output_guardrails)",
      "the run config's output guardrails run too", "test_guardrails"),
    M("turn.py",
      "        settings = dataclasses.replace(settings, tool_choice=None)",
      "        pass",
      "reset_tool_choice: a forced tool_choice is reset after the agent used a tool", "test_agent"),
    M("steps.py",
      "    if response is None:\n        raise AgentsException(",
      "    if False:\n        raise AgentsException(",
      "a model stream that ends without response.completed is an AgentsException saying so", "test_run"),
    # --- items.py: history pairing ------------------------------------------------------------------------
    M("items.py",
      "            if not isinstance(item, dict):",
      "            if False:",
      "a custom model's malformed response is a UserError naming what is wrong", "test_items"),
    M("items.py",
      "            if n in pairs or n in outputs or item.get(\"type\") not in (\"function_call\", \"function_call_output\")]",
      "            if n in pairs or n in outputs or item.get(\"type\") != \"function_call_output\"]",
      "drop_orphans drops a call that has no output", "test_items", "test_run"),
    M("items.py",
      "        if kind == \"function_call\" and call_id not in closed:",
      "        if kind == \"function_call\":",
      "drop_orphans keeps only the first call of a call id (an edited history's second is never sent)", "test_items"),
    M("items.py",
      "            pairs[unanswered.pop(call_id)] = n",
      "            pairs[unanswered.get(call_id)] = n",
      "drop_orphans keeps only the first output of a call", "test_items", "test_run"),
    M("items.py",
      "            if n in pairs or n in outputs or item.get(\"type\") not in (\"function_call\", \"function_call_output\")]",
      "            if n in pairs or item.get(\"type\") != \"function_call\"]",
      "drop_orphans drops an output that comes before its call (or has none)", "test_items", "test_run"),
    M("items.py",
      "        return _parts_problem(item[\"output\"], \"output\") if kind == \"function_call_output\" else None",
      "        return None",
      "a tool output that is a list of no content parts ([1, 2, None]) is refused where it enters", "test_items"),
    M("state.py",
      "               for call_id, text in pending.get(\"done\", {}).items()]",
      "               for call_id, text in {}.items()]",
      "RunState loading refuses a settled call's output (pending_turn.done) that is no output the model can take",
      "test_run_state"),
    # --- tool.py: output text, failure policy, timeouts --------------------------------------------------
    M("tool.py",
      "        return clean_text(TO_JSON(jsonable(value)))",
      "        return clean_text(str(value))",
      "tool results reach the model as JSON text, not Python repr", "test_tools"),
    M("tool.py",
      "return error.message",
      "return REDACTED_TOOL_ERROR",
      "a ToolError's message reaches the model verbatim", "test_tools"),
    M("tool.py",
      "    return REDACTED_TOOL_ERROR",
      "    return f\"{REDACTED_TOOL_ERROR} ({type(error).__name__}: {error})\"",
      "any other exception is redacted by default (no internals in the prompt)", "test_tools"),
    M("tool.py",
      "if tool.timeout_behavior == \"raise_exception\":",
      "if False:",
      "timeout_behavior='raise_exception' raises ToolTimeoutError", "test_tools"),
    M("tool.py",
      "            object.__setattr__(self, \"_invoke\", self.on_invoke_tool if self.timeout_seconds is None else",
      "            object.__setattr__(self, \"_invoke\", self.on_invoke_tool if True else",
      "a slow tool is stopped at its timeout and the model is told so", "test_tools"),
    M("tool.py",
      "        if name in (\"on_invoke_tool\", \"timeout_seconds\") and \"timeout_seconds\" in self.__dict__:",
      "        if name == \"timeout_seconds\" and \"_invoke\" not in self.__dict__:",
      "a tool's on_invoke_tool or timeout set after it was made is how its calls run", "test_tools"),
    M("tool.py",
      "        if not isinstance(self.idempotent, bool):",
      "        if False:",
      "a tool's idempotent that is no bool is a UserError where the tool is made", "test_misuse"),
    M("tool.py",
      "        if self.timeout_behavior not in (\"error_as_result\", \"raise_exception\"):",
      "        if False:",
      "a tool's unknown timeout_behavior is a UserError where the tool is made", "test_misuse"),
    M("tool.py",
      "                                        or not 0 < seconds <= threading.TIMEOUT_MAX):",
      "                                        or not 0 < seconds):",
      "a tool timeout past threading.TIMEOUT_MAX (inf) is a UserError where the tool is made", "test_tools"),
    M("tool.py",
      "            if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))",
      "            if seconds is not None and (False",
      "a tool timeout that is no number (a string, a bool) is a UserError where the tool is made", "test_tools"),
    M("tool.py",
      "    if inspect.isgenerator(value) or inspect.isasyncgen(value) or inspect.iscoroutine(value):",
      "    if inspect.isgenerator(value) or inspect.iscoroutine(value):",
      "an async generator a tool returned (its body never ran) is a UserError", "test_misuse"),
    M("tool.py",
      " or inspect.isasyncgen(value) or inspect.iscoroutine(value):",
      " or inspect.isasyncgen(value):",
      "a coroutine an async tool returned unawaited (its body never ran) is a UserError", "test_misuse"),
    M("tool.py",
      "            value = caller.resolve(value)\n    except caller.Cancelled as stop:",
      "            value = caller.resolve(value)\n        return value, tool_output(value, tool.name)\n"
      "    except caller.Cancelled as stop:",
      "a generator a tool returned is raised as a UserError, never told the model as the tool's failure",
      "test_misuse"),
    M("tool.py",
      "        return failure_text(tool, ctx, raw_args, error)",
      "        return REDACTED_TOOL_ERROR if isinstance(error, PROPAGATES) else \\\n"
      "            failure_text(tool, ctx, raw_args, error)",
      "a session failure in an async tool stops the run, as in a sync one (never the redacted failure)",
      "test_tools"),
    # --- handoffs.py ------------------------------------------------------------------------------------
    M("schema.py",
      "    return re.sub(r\"[^a-zA-Z0-9_]\", \"_\", name).lower()",
      "    return re.sub(r\"[^a-zA-Z0-9_]\", \"\", name).lower()",
      "default handoff tool name is transfer_to_<agent name in snake case>", "test_handoffs", "test_agent"),
    # --- state.py: RunState JSON ------------------------------------------------------------------------
    M("state.py",
      "    problem = problem or _not_json(data) or _bad_item(data)",
      "    problem = problem or _bad_item(data)",
      "RunState loading: NaN or an infinity anywhere in the document is refused at load (issue 30)",
      "test_run_state"),
    M("schema.py",
      "        taken = frozenset(q.name for q in sig.parameters.values() if q.kind in KEYWORDS) | _filled_first(func)",
      "        taken = frozenset(q.name for q in list(sig.parameters.values())[1:] if q.kind in KEYWORDS) | _filled_first(func)",
      "tool arguments: the names a **kwargs key may not have include the context parameter's", "test_hostile_values"),
    M("ledger.py",
      "(len(text) <= MAX_TEXT or text is run.scratch.get(write_journal))",
      "True",
      "crash-safe runs: a journal entry longer than a state may be is refused before it is parsed",
      "test_hostile_state"),
    M("ledger.py",
      "(len(text) <= MAX_TEXT or text is run.scratch.get(write_journal))",
      "len(text) <= MAX_TEXT",
      "crash-safe runs: a run's own journal entry is never refused for its size", "test_hostile_state"),
    M("ledger.py",
      "    readable = isinstance(text, str) and (",
      "    readable = (",
      "crash-safe runs: a journal a custom session gives as no text is a SessionStoreError", "test_hostile_state"),
    M("run.py",
      "        elif call.output is None and run.state.server_managed:",
      "        elif False:",
      "server-managed: a failed turn's calls that never started are answered, not dropped (the server holds them)",
      "test_guardrails"),
    M("state.py",
      "    if version not in SCHEMA_VERSIONS:",
      "    if version > max(SCHEMA_VERSIONS):",
      "RunState loading refuses a schema version it does not know", "test_run_state"),
    M("validate.py",
      "        return value if isinstance(value, int) and not isinstance(value, bool) else wrong()",
      "        return value if isinstance(value, int) else wrong()",
      "RunState loading (and tool arguments): a bool where an int belongs is refused", "test_run_state",
      "test_schema"),
    M("validate.py",
      "        elif required:\n            _fail(path, f\"missing required field '{name}'\")",
      "        elif False:\n            _fail(path, f\"missing required field '{name}'\")",
      "RunState loading (and object arguments): a missing field is refused, naming it", "test_run_state"),
    M("state.py",
      "    data, problem = _checked(RunStateDocument, clean_json(data))",
      "    problem = None",
      "RunState loading: a mistyped field is a UserError, checked before anything is built", "test_run_state"),
    M("state.py",
      "    input = clean_json(input)\n",
      "",
      "a lone surrogate in a run's input items is repaired (RunState) before the model or the state gets it",
      "test_hostile_state", "test_run_state"),
    M("state.py",
      "    data, problem = _checked(RunStateDocument, clean_json(data))",
      "    data, problem = _checked(RunStateDocument, data)",
      "a lone surrogate in a loaded RunState document is repaired as it loads", "test_hostile_state"),
    M("state.py",
      "        self.pending_input.extend(clean_json(json.loads(json.dumps(new))))",
      "        self.pending_input.extend(json.loads(json.dumps(new)))",
      "a lone surrogate in add_input's input is repaired as it enters", "test_hostile_state"),
    M("state.py",
      "            found = _json_path_error(inner, f\"{path}[{preview(key, 40)!r}]\", depth + 1)",
      "            found = _json_path_error(inner, f\"{path}[{key!r}]\", depth + 1)",
      "a context key the document or the state holds is quoted cut short in the error naming its path",
      "test_hostile_state"),
    M("state.py",
      "        if isinstance(text, (str, bytes, bytearray)) and len(text) > limit:  # before it is parsed into memory",
      "        if False:",
      "a state text over the size a state may have is refused before it is parsed", "test_hostile_state"),
    M("state.py",
      "        if len(text) > MAX_TEXT:  # refused now, not when it is read back",
      "        if False:",
      "a state text over the size a state may have is never written", "test_hostile_state"),
    M("validate.py",
      "    return f\"{path}.{preview(str(key), 60)}\" if path else preview(str(key), 60)",
      "    return f\"{path}.{key}\" if path else preview(str(key), 60)",
      "a mistyped document field under a huge key (an approvals key) is named with the key cut short",
      "test_hostile_state"),
    M("state.py",
      "        raise UserError(f\"Run state agent not found in agent map: {preview(name, 60)!r}; pass the run's starting \"",
      "        raise UserError(f\"Run state agent not found in agent map: {name!r}; pass the run's starting \"",
      "an agent name the document holds is quoted cut short when no agent has it", "test_hostile_state"),
    M("state.py",
      "                        \"agent (one behind a Handoff built by hand is known only once called: use handoff(agent))\")",
      "                        \"agent\")",
      "a state at an agent only a hand-built Handoff reaches says to use handoff(agent)", "test_run_state"),
    M("state.py",
      "has unknown item type {preview(data['type'], 60)!r}",
      "has unknown item type {data['type']!r}",
      "an unknown item type the document holds is quoted cut short", "test_hostile_state"),
    M("state.py",
      "        raise UserError(f\"Run state schema version {preview(version, 40)} is not supported.",
      "        raise UserError(f\"Run state schema version {version} is not supported.",
      "a schema version of thousands of digits is quoted cut short", "test_hostile_state"),
    M("state.py",
      "        raise UserError(f\"pending_turn.nested[{preview(call_id, 60)!r}]: {e.message}\") from None",
      "        raise UserError(f\"pending_turn.nested[{call_id!r}]: {e.message}\") from None",
      "a nested state's call id is quoted cut short", "test_hostile_state"),
    M("state.py",
      "        raise UserError(f\"run context is not JSON-serialisable at {bad}; pass context_serializer= \"",
      "        raise TypeError(f\"run context is not JSON-serialisable at {bad}; pass context_serializer= \"",
      "a context JSON cannot hold is a UserError naming its path when the state is written", "test_hostile_state",
      "test_run_state"),
    M("state.py",
      "    if isinstance(value, int) and value < low:",
      "    if isinstance(value, int) and value < low - 1:",
      "RunState loading refuses a count, turn or index below 0 (it loosened a usage limit or max_turns)",
      "test_run_state"),
    M("state.py",
      "    inner = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()",
      "    inner = ()",
      "RunState loading refuses a usage count below 0 (usage.requests -100 allowed 100 more requests)",
      "test_run_state"),
    M("state.py",
      "    if pending[\"agent\"] != data[\"current_agent\"]:",
      "    if False:",
      "RunState loading refuses a paused turn that is not current_agent's (another agent's tool ran unapproved)",
      "test_hostile_state", "test_run_state"),
    M("state.py",
      "    if twice is not None:",
      "    if False:",
      "RunState loading refuses a paused turn holding one call id twice (its approved call ran twice)",
      "test_run_state"),
    M("state.py",
      "    if not server_managed and not earlier.isdisjoint(calls):",
      "    if False:",
      "RunState loading refuses a paused turn whose calls are in the items before its start (sent twice)",
      "test_run_state"),
    M("state.py",
      "    if turn and ([i[\"raw_item\"] for i in turn[:len(read)]] != read or",
      "    if False and ([i[\"raw_item\"] for i in turn[:len(read)]] != read or",
      "RunState loading refuses generated_items from pending_turn.start on that are not the paused turn's",
      "test_run_state"),
    M("state.py",
      "r.get(\"usage\"), -math.inf, MAX_COUNT)",
      "r.get(\"usage\"), 0, MAX_COUNT)",
      "a paused state whose model response kept a provider's usage below 0 loads (the run's usage counted it as 0)",
      "test_run_state"),
    M("state.py",
      "enumerate(pending[\"output\"]) if not _ignored(i)]",
      "enumerate(pending[\"output\"])]",
      "RunState loading skips a paused response's item of a type the loop skips (custom_tool_call), never refuses it",
      "test_run_state", "test_hostile_state"),
    M("state.py",
      "    read, turn = [i for i in output if not _ignored(i)], items[start:]",
      "    read, turn = [i for i in output if _kind(i) is not None], items[start:]",
      "RunState loading reads a paused turn's items as the loop's classify does (a skipped type is no item of it)",
      "test_run_state", "test_hostile_state"),
    M("state.py",
      "    return (kind is None or isinstance(kind, str)) and kind not in KEPT_KINDS",
      "    return kind not in KEPT_KINDS",
      "RunState loading refuses a paused response's item whose type is not a string (classify could not read it)",
      "test_run_state"),
    M("state.py",
      "    if version < 3 and turn and HOSTED_ITEM_TYPES.isdisjoint(turn):",
      "    if False:",
      "a version 1 or 2 paused turn without the hosted tool items that code skipped loads, resumes and saves again",
      "test_run_state"),
    M("state.py",
      "            if item[\"call_id\"] in seen:\n                continue",
      "            if False:\n                continue",
      "a version 1-5 paused response holding a call id twice loads with its first call (as that code ran it)",
      "test_run_state"),
    M("state.py",
      "    if pending is None or version >= 6:",
      "    if pending is None or version >= 5:",
      "a version 5 document (written before the kernel dropped a repeated call id) is repaired too",
      "test_run_state"),
    M("state.py",
      "    document[\"context\"] = clean_json(document[\"context\"])",
      "    pass",
      "a lone surrogate in the caller's context or a rejection message is repaired where the state is written",
      "test_hostile_state"),
    M("state.py",
      "(4 * MAX_TEXT, \"bytes\")",
      "(MAX_TEXT, \"bytes\")",
      "a state's JSON given as bytes is measured against the bytes its characters may take, not the characters",
      "test_hostile_state"),
    M("state.py",
      "_derived_run_id(given)",
      "_derived_run_id(data)",
      "a version 1 document's run id is derived from it as given, the same before and after loading repaired it",
      "test_run_state"),
    M("state.py",
      "_load_nested(state, call_id, given_nested[call_id], context_override,",
      "_load_nested(state, call_id, pending[\"nested\"][call_id], context_override,",
      "a version 1 paused agent tool's run id is derived from its document as given, as the outer one's is",
      "test_run_state"),
    M("state.py",
      "        if not isinstance(input, (str, list)):",
      "        if False:",
      "add_input of neither text nor a list of items is a UserError naming its type", "test_run_state"),
    M("state.py",
      "    if isinstance(value, int) and value >= top:",
      "    if False:",
      "RunState loading refuses a count past any a run makes (int(\"9\" * 4300): the next turn could not be written)",
      "test_run_state"),
    M("state.py",
      "    counts = [(\"max_turns\", data.get(\"max_turns\"), 0, math.inf)]",
      "    counts = [(\"max_turns\", data.get(\"max_turns\"), 0, MAX_COUNT)]",
      "RunState loading takes any whole number a run takes as max_turns (it never grows)", "test_run_state"),
    M("state.py",
      "    if not isinstance(initial_agent, Agent):  # its graph holds the agents the document names",
      "    if False:",
      "RunState loading against anything but an Agent is a UserError (a bare AttributeError walking its graph)",
      "test_run_state"),
    M("state.py",
      "        if version < 3:\n            _scope_approvals(state)",
      "        if False:\n            _scope_approvals(state)",
      "a version 1 or 2 decision about an agent tool's inner call is scoped to the inner run that looks it up",
      "test_run_state"),
    M("state.py",
      "        state.context_wrapper.forget(copy.tool_name, copy.call_id)",
      "        pass",
      "a version 1 or 2 decision about an agent tool's inner call's tool and id is dropped (asked again)",
      "test_run_state"),
    M("state.py",
      "    for copy, (run_id, item) in zip(copies, inner):",
      "    for copy, (run_id, item) in zip(copies, inner[::-1]):",
      "a version 1 or 2 item is scoped to the inner run it came from, matched by place (two runs, one call id)",
      "test_run_state"),
    M("state.py",
      "            self.original_input = input_items(self.original_input)",
      "            pass",
      "a RunState made by hand is refused the input items a run refuses, and copies them", "test_run_state"),
    M("state.py",
      "        if self.max_turns is not None and type(self.max_turns) is not int:",
      "        if False:",
      "a RunState made by hand is refused a max_turns a run refuses (\"3\" failed in the turn limit's check)",
      "test_run_state"),
    M("state.py",
      "            self.original_input = clean_text(self.original_input)",
      "            pass",
      "a lone surrogate in a run's text input, or a RunState made by hand, is repaired as its state is made",
      "test_hostile_state"),
    # --- sessions: sql_session.py (shared rules), sql_dialect.py, sqlite_session.py, dbapi_session.py -----
    M("sql_dialect.py",
      "        if conn.in_transaction:\n            cur.execute(\"ROLLBACK\")",
      "        if conn.in_transaction:\n            cur.execute(\"COMMIT\")",
      "a failed write rolls back: all rows land or none", "test_session_contract"),
    M("sql_session.py",
      "        return SessionItems(reversed(newest_first))",
      "        return SessionItems(newest_first)",
      "get_items returns the items oldest first", "test_session_contract"),
    M("sql_session.py",
      "            if limit is not None and len(newest_first) >= limit:",
      "            if limit is not None and len(newest_first) > limit:",
      "get_items(limit) returns at most the newest `limit` items", "test_session_contract"),
    M("sql_session.py",
      "                if turns >= limit_turns:",
      "                if turns > limit_turns:",
      "limit_turns=N returns the items from the N-th most recent user message on", "test_session_contract"),
    M("sql_session.py",
      "        if isinstance(item, dict):\n            return item",
      "        if item is not _SKIPPED:\n            return item",
      "stored rows that are valid JSON but not objects are skipped", "test_session_contract", "test_session"),
    M("sql_session.py",
      "            if self._execute(cur, \"claim\", *key).rowcount == 1:",
      "            if self._execute(cur, \"claim\", *key).rowcount >= 0:",
      "claim_call has one winner: a claimed call is never claimed again", "test_session_contract"),
    M("sql_session.py",
      "            if once is not None and self._execute(cur, \"claim\", self.session_id, \"\", once).rowcount != 1:",
      "            if once is not None and self._execute(cur, \"claim\", self.session_id, \"\", once).rowcount < 0:",
      "add_items(once=key) appends at most once per key", "test_session_contract"),
    M("sqlite_session.py",
      "os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600",
      "os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644",
      "a new SQLite database file is readable by its owner only", "test_session"),
    M("sqlite_session.py",
      "        fix = (\"pass another path\" if os.access(os.path.dirname(path), os.W_OK) else",
      "        fix = (\"pass another path\" if False else",
      "a new SQLite file the system refuses to create says to make its folder writable only when it is not",
      "test_session_files"),
    M("sqlite_session.py",
      "is not a folder\" if os.path.exists(folder) else",
      "is not a folder\" if False else",
      "a SQLite db_path whose folder is a file says it is not a folder, not that it does not exist", "test_session"),
    M("sql_dialect.py",
      "        return f'\"{name}\"'",
      "        return name",
      "a table name that is an SQL keyword (order, group) works: names are quoted", "test_session_contract"),
    M("sql_session.py",
      "_IDENTIFIER = re.compile(r\"(?!sqlite_)",
      "_IDENTIFIER = re.compile(r\"(?!sqlite_x)",
      "a table name starting with sqlite_ (SQLite's own) is a UserError", "test_session_contract"),
    M("sql_session.py",
      "re.IGNORECASE | re.ASCII)",
      "re.IGNORECASE)",
      "a table name of letters that are no ASCII ('ſ', the Kelvin sign: bytes past PostgreSQL's 63) is a UserError",
      "test_session_contract"),
    M("dbapi/__init__.py",
      "' '.join(tables).lower().encode()",
      "' '.join(tables).encode()",
      "PostgreSQL's creators of one table named in two cases (\"S1\", \"s1\") take one schema lock",
      "test_session_dbapi"),
    M("sql_session.py",
      "tool_calls_table)}) < 3:",
      "tool_calls_table)}) < 2:",
      "two table arguments naming one table (case ignored) are a UserError", "test_session_contract"),
    M("sql_session.py",
      ".rowcount != 1:  # else the same row, for ever",
      ".rowcount < 0:  # else the same row, for ever",
      "pop_item on a table whose ids are no key is a SessionStoreError (it returned one item for ever, or spun)",
      "test_session_contract"),
    M("dbapi/__init__.py",
      "                except SessionStoreError:  # the session's own finding",
      "                except ZeroDivisionError:  # the session's own finding",
      "a DB-API session's own SessionStoreError is raised as it is, never read as the driver's error and retried",
      "test_session_contract"),
    M("dbapi/__init__.py",
      "                        said = f\": {self._where()} {problem}\" if problem else \"\"",
      "                        said = \"\"",
      "a DB-API sqlite3 database locked past every retry says so, as SQLiteSession does", "test_session_dbapi"),
    M("dbapi/__init__.py",
      "                    if attempt == self.max_attempts or (unknown and not repeatable):",
      "                    if attempt == self.max_attempts:",
      "a write whose commit outcome is unknown is not repeated unless repeating it changes nothing",
      "test_session_dbapi"),
    # --- schema.py / validate.py: strict schemas, argument validation ------------------------------------
    M("schema.py",
      "        if out.setdefault(\"additionalProperties\", False) is not False:",
      "        if out.get(\"additionalProperties\", False) is not False:",
      "strict schemas close every object (additionalProperties: false)", "test_schema", "test_tools"),
    M("schema.py",
      "        out[\"required\"] = list(out[\"properties\"])",
      "        out.setdefault(\"required\", list(out[\"properties\"]))",
      "strict schemas list every property in required (defaults included)", "test_schema", "test_tools"),
    M("validate.py",
      "        return value if isinstance(value, int) and not isinstance(value, bool) else wrong()",
      "        return value if isinstance(value, int) else wrong()",
      "argument validation: a bool is not an int", "test_schema", "test_tools"),
    M("validate.py",
      "            if key not in tried:",
      "            if True:",
      "a union nested in itself converts each value once per arm, not 2 ** depth times", "test_hostile_values"),
    M("validate.py",
      "    return f\"{path}.{preview(str(key), 60)}\" if path else preview(str(key), 60)",
      "    return f\"{path}.{key}\" if path else str(key)",
      "a dict key the model chose is quoted cut in the path it is told", "test_hostile_values"),
    M("validate.py",
      "expected an integer key (no leading zero or -0), got {preview(repr(key), 60)}",
      "expected an integer key (no leading zero or -0), got {key!r}",
      "a dict[int, T] key that is not an integer is quoted cut", "test_hostile_values"),
    M("validate.py",
      "    if named:",
      "    if False:",
      "a **kw key naming another parameter is refused, never a clash or a silent replacement", "test_hostile_values"),
    M("schema.py",
      "frozenset(q.name for q in sig.parameters.values() if q.kind in KEYWORDS)",
      "frozenset(q.name for q in sig.parameters.values())",
      "a **kw key named as a positional-only parameter is passed", "test_hostile_values"),
    M("validate.py",
      "    if origin is tuple and tp is not typing.Tuple and not",
      "    if origin is tuple and not",
      "a bare typing.Tuple argument is any tuple, as tuple is, not an empty one", "test_hostile_values"),
    M("validate.py",
      "        return len(a) == len(b) and all(map(_same, a, b))",
      "        return a == b",
      "an enum value that is an array is matched as JSON compares it, true never standing for 1",
      "test_hostile_values"),
    M("validate.py",
      "        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())",
      "        return a == b",
      "an enum value that is an object is matched as JSON compares it, true never standing for 1",
      "test_hostile_values"),
    M("schema.py",
      "        if tp in (list, tuple, typing.Tuple, set, frozenset, dict) or origin in (",
      "        if tp in (list, tuple, set, frozenset, dict) or origin in (",
      "a bare typing.Tuple parameter's schema is any array, as tuple's is", "test_hostile_values"),
    M("schema.py",
      "            if self.strict and any(item != items[0] for item in items):",
      "            if False:",
      "strict mode refuses a fixed tuple of mixed item types where it is made (the wire could not say the order)",
      "test_hostile_values"),
    M("schema.py",
      "        elif key in (\"anyOf\", \"oneOf\", \"allOf\", \"prefixItems\"):  # (a hand-written",
      "        elif False:  # (a hand-written",
      "a hand-written schema's combinator that is not a list is a UserError, not a bare TypeError", "test_hostile_values"),
    M("schema.py",
      "    except RecursionError:  # a value in it (an `examples`, a `default`)",
      "    except ZeroDivisionError:  # a value in it (an `examples`, a `default`)",
      "a hand-written schema holding a value nested too deeply is a UserError, not a RecursionError",
      "test_hostile_values"),
    M("schema.py",
      "            except (TypeError, ValueError, RecursionError):  # (a list",
      "            except (TypeError, ValueError):  # (a list",
      "a default that holds itself or nests too deeply is left out of the schema, not a RecursionError",
      "test_hostile_values"),
    M("validate.py",
      "    except ValueError:  # more digits than Python reads into an int",
      "    except ZeroDivisionError:  # more digits than Python reads into an int",
      "a dict[int, T] key beyond the digits Python reads is the model's mistake, not a bare ValueError",
      "test_hostile_values"),
    # --- models/protocol.py and http.py: SSE framing, retries ---------------------------------------------
    M("models/protocol.py",
      "    if data.strip() == \"[DONE]\":",
      "    if data.strip() == \"DONE\":",
      "SSE: data: [DONE] ends the stream instead of being parsed as JSON", "test_http",
      "test_chat_completions", "test_sse_properties"),
    M("models/protocol.py",
      "        if not line:\n            if data:",
      "        if not line or line.startswith(\":\"):\n            if data:",
      "SSE: a comment line is skipped, it does not dispatch the pending event", "test_sse_properties",
      "test_http"),
    M("models/protocol.py",
      "            if data:\n                yield event or \"message\", \"\\n\".join(data)",
      "            if data:\n                yield event or \"message\", \"\".join(data)",
      "SSE: the data lines of one event are joined with newlines", "test_sse_properties", "test_http"),
    M("models/protocol.py",
      "    return status in (408, 409, 429) or status >= 500",
      "    return status in (408, 409) or status >= 500",
      "retries: a 429 is retried", "test_http"),
    M("models/protocol.py",
      "    return status in (408, 409, 429) or status >= 500",
      "    return status in (408, 409, 429) or status >= 400",
      "retries: a 400 is not retried", "test_http"),
    M("models/protocol.py",
      "    except (TypeError, ValueError, IndexError, OverflowError):",
      "    except (TypeError, ValueError, IndexError):",
      "retries: a Retry-After date in a year past any a datetime holds is no delay, not a bare OverflowError",
      "test_http"),
    M("models/protocol.py",
      "2 ** min(retries_so_far, 32)",
      "2 ** retries_so_far",
      "retries: the backoff after 1024 attempts is at its ceiling, not a bare OverflowError", "test_http"),
    M("models/http.py",
      "                    if delivered:\n                        raise retry.error from None",
      "                    if False:\n                        raise retry.error from None",
      "a stream is never retried after it delivered an event", "test_http", "test_http_end_to_end"),
    # --- models/chat_stream.py: Chat Completions stream delta accumulation -----------------------------
    M("models/chat_stream.py",
      "        if cid and (not slot[\"id\"] or slot[\"made_up\"]):  # an id made up when the name came stays the call's (its\n"
      "            slot[\"id\"], slot[\"made_up\"] = slot[\"id\"] or cid, False",
      "        if cid:  # (its\n            slot[\"id\"], slot[\"made_up\"] = (slot[\"id\"] or \"\") + cid, False",
      "chat stream: a tool call's id is set once, not concatenated across deltas", "test_chat_completions"),
    M("models/chat_stream.py",
      "        if name and not slot[\"name\"]:\n            slot[\"name\"] = name",
      "        if name:\n            slot[\"name\"] = (slot[\"name\"] or \"\") + name",
      "chat stream: a tool call's name is set once, not concatenated across deltas", "test_chat_completions"),
    M("models/chat_stream.py",
      "        piece = slot[\"arguments\"].add(args or \"\")",
      "        slot[\"arguments\"] = shapes.Deltas()\n        piece = slot[\"arguments\"].add(args or \"\")",
      "chat stream: argument fragments are concatenated", "test_chat_completions"),
    M("turn.py",
      "    if len(set(ids) - run.state.call_ids - {None, \"\"}) < len(ids):  # not each its own",
      "    if len(set(ids) - {None, \"\"}) < len(ids):  # not each its own",
      "a call id reused from an earlier turn gets a fresh id", "test_call_ids"),
    M("steps.py",
      "                                                                   state.pending is not None)):",
      "                                                                   False)):",
      "the turn seam is told whether its turn is a paused one resumed", "test_plugins"),
    M("run.py",
      "    turn = steps.observed_turn if \"run.plugins\" in uses else tuple",
      "    turn = tuple",
      "with plugins, each turn's steps run inside the turn seam", "test_plugins", "test_tracing_runs"),
    M("run.py",
      "wanted(INVOKE), invoke)",
      "wanted(INVOKE)[1:], invoke)",
      "a run with tool guardrails or a ledger invokes each call through every wrapper it chose", "test_steps_chosen",
      "test_guardrails"),
    M("run.py",
      "    turn.items.append(item)\n    input_filter = ",
      "    input_filter = ",
      "a handoff's output is saved to the session with its call", "test_session_runs"),
    M("tool.py",
      "        text = failure_text(tool, ctx, raw_args, error)\n        return text, text",
      "        text = failure_text(tool, ctx, raw_args, error)\n        return None, text",
      "a failed tool's output value is the text the model saw", "test_agent", "test_tools"),
    M("state.py",
      "        document = json.loads(json.dumps(document, allow_nan=False))",
      "        document = document",
      "to_json returns a document of its own", "test_run_state"),
    # --- agent.py: agents as tools; upstream/runner.py: upstream's async Model ---------------------------------
    M("agent.py",
      "    own = given.usage_limits and given.usage_limits.after(usage)",
      "    own = given.usage_limits",
      "an agent tool's own limits bound what its inner run spends, not what its caller spent before", "test_usage_limits"),
    M("agent.py",
      "max_turns=DEFAULT_MAX_TURNS if max_turns is None else max_turns,",
      "max_turns=max_turns or DEFAULT_MAX_TURNS,",
      "an agent tool's max_turns=0 allows no inner turn (not the default 10)", "test_usage_limits"),
    M("agent.py",
      "        if max_turns is not None and type(max_turns) is not int:",
      "        if False:",
      "an agent tool's max_turns that is no whole number is refused when the tool is made", "test_usage_limits"),
    M("agent.py",
      "                if paused is None:  # the inner run's approvals are its own, kept beside the caller's\n"
      "                    nested.state.context_wrapper.approval_scope = nested.state.run_id",
      "                if False:\n"
      "                    nested.state.context_wrapper.approval_scope = nested.state.run_id",
      "as_tool: an inner run's approvals are its own: approving the caller's call never approves the inner one",
      "test_approvals"),
    M("agent.py",
      "max_turns=DEFAULT_MAX_TURNS if max_turns is None else max_turns,",
      "max_turns=DEFAULT_MAX_TURNS,",
      "as_tool(max_turns=N) limits the nested run's model calls", "test_agent"),
    M("agent.py",
      "            if result.interruptions or nested.state.cancel_mode == \"immediate\":",
      "            if False:",
      "as_tool: a call waiting for approval inside the nested run pauses the caller's run", "test_approvals"),
    M("agent.py",
      "                paused.context_wrapper.usage, paused.context_wrapper.approvals = ctx.usage, ctx.approvals",
      "                pass",
      "as_tool: resuming a paused nested run applies the decisions made on the caller's state", "test_approvals",
      "test_upstream_behaviour"),
    M("agent.py",
      "                                   ledger=ctx.ledger)",
      "                                   ledger=None)",
      "as_tool: the nested run claims its calls in the caller's ledger (exactly once across resumes)",
      "test_exactly_once"),
    M("agent.py",
      "        return RunConfig(model_provider=provider, usage_limits=limits) if provider or limits else None",
      "        return RunConfig(usage_limits=limits) if provider or limits else None",
      "as_tool: the nested agent's model name resolves with the caller's model provider", "test_agent"),
    M("agent.py",
      "    for item in reversed(result.new_items):",
      "    for item in result.new_items:",
      "as_tool: without a final output, the tool output is the nested run's last non-empty message", "test_agent"),
    M("agent.py",
      "                raise ToolError(f\"The agent '{self.name}' could not finish: {error.message}\") from error",
      "                raise",
      "as_tool: the nested model's misbehaviour reaches the caller's model as a tool failure", "test_agent",
      "test_robustness"),
    M("agent.py",
      "    if result.final_output not in (None, \"\") or result.output_guardrail_results:",
      "    if result.final_output not in (None, \"\"):",
      "as_tool: a final output the output guardrails checked is the tool's output even when empty (no unchecked "
      "text leaks)", "test_upstream_behaviour"),
    M("upstream/runner.py",
      "        return caller.resolve(self.wrapped.get_response(*args, **kwargs))",
      "        return self.wrapped.get_response(*args, **kwargs)",
      "upstream shell: a model written for upstream's async Model: its answer is awaited",
      "test_upstream_behaviour"),
    M("upstream/runner.py",
      "            try:\n                item = step(events.__anext__())",
      "            try:\n                item = step(events.__anext__())\n                step(events.__anext__())",
      "upstream shell: an async model stream: every event is taken, one at a time", "test_upstream_behaviour"),
    # --- upstream/raw_items.py: what a model gave, read by attribute in the shell ------------------------------
    M("upstream/runner.py",
      "        return ReadableModel(model)",
      "        return model",
      "upstream shell: every run's model is read through ReadableModel (its items by attribute)", "test_raw_items"),
    M("upstream/raw_items.py",
      "        response.output = readable(response.output)\n        return response",
      "        return response",
      "upstream shell: a response's output items read by attribute", "test_raw_items"),
    M("upstream/raw_items.py",
      "            event = as_raw_item(event)",
      "            pass",
      "upstream shell: a streamed event reads by attribute (event.data.delta)", "test_raw_items"),
    M("upstream/raw_items.py",
      "                    response[\"output\"] = readable(response[\"output\"])",
      "                    pass",
      "upstream shell: a streamed run's response items read by attribute", "test_raw_items"),
    M("upstream/raw_items.py",
      "        if isinstance(item, MODEL_ITEMS):\n            item.raw_item = as_raw_item(item.raw_item)",
      "        if isinstance(item, MODEL_ITEMS):\n            pass",
      "upstream shell: a loaded RunState's run items read by attribute", "test_raw_items"),
    M("upstream/raw_items.py",
      "        state.pending.output = readable(state.pending.output)",
      "        pass",
      "upstream shell: a loaded RunState's paused response reads by attribute", "test_raw_items"),
    M("upstream/raw_items.py",
      "            readable_state(nested)",
      "            pass",
      "upstream shell: an agent tool's paused inner run, loaded, reads by attribute", "test_raw_items"),
    M("upstream/classes.py",
      "        return readable_state(KernelRunState.from_string(initial_agent, text, **options))",
      "        return KernelRunState.from_string(initial_agent, text, **options)",
      "upstream shell: RunState.from_string gives a state whose model items read by attribute", "test_raw_items"),
    M("upstream/error_handlers.py",
      "        message = RawItem(assistant_message(text, FAKE_ID))",
      "        message = assistant_message(text, FAKE_ID)",
      "upstream's error_handlers: the final message reads by attribute, as upstream's typed message",
      "test_error_handlers"),
    M("upstream/__init__.py",
      "            raise NotProvidedTypeError(_explain(",
      "            raise TypeError(_explain(",
      "upstream shell: an upstream keyword of a left-out feature (RunConfig(nest_handoff_history=...)) is "
      "NotProvidedTypeError, not a bare TypeError", "test_compat"),
    M("turn.py",
      "                item = copy.copy(item)  # the response's item stays as the model gave it; the copy keeps its type",
      "                item = dict(item)",
      "call ids: a renumbered call keeps its item's type (the upstream shell reads it by attribute)",
      "test_raw_items"),
    M("upstream/runner.py",
      "            readable_state(run.state)  # kernel may have loaded",
      "            pass  # kernel may have loaded",
      "upstream shell: a turn continued from a session's journal reads by attribute", "test_raw_items"),
    M("run.py",
      "    if run.tools.get(id(state.current_agent)) != tuple(state.current_agent.tools):",
      "    if False:",
      "an agent met late (a hand-built handoff's, a resumed state's) keeps its output and tool guardrails",
      "test_steps_chosen"),
    M("run.py",
      "    if run.tools.get(id(state.current_agent)) != tuple(state.current_agent.tools):",
      "    if id(state.current_agent) not in run.tools:",
      "a tool that joins an agent's list during the run keeps its guardrails (the steps chosen again)",
      "test_steps_chosen"),
    M("turn.py",
      "    if flag is None:  # not a tool",
      "    if False:  # not a tool",
      "a plain function put in an agent's tools after it was made is a UserError naming the decorator",
      "test_misuse"),
    M("state.py",
      "    if isinstance(entry, (Agent, Handoff)):",
      "    if True:",
      "something else added to an agent's handoffs later is a UserError naming it, before any model call",
      "test_misuse"),
    M("guardrails.py",
      "        if not isinstance(guardrail, kind):",
      "        if False:",
      "a guardrail list holding a plain function is refused where its agent, tool or RunConfig is made",
      "test_misuse"),
    M("tool.py",
      "            if not callable(getattr(self, name)) and not isinstance(getattr(self, name), plain):",
      "            if False:",
      "a tool's is_enabled or error functions that cannot be called are refused where the tool is made",
      "test_misuse"),
    M("config.py",
      "        if self.handoff_input_filter is not None and not callable(self.handoff_input_filter):",
      "        if False:",
      "RunConfig.handoff_input_filter that cannot be called is refused where the RunConfig is made", "test_misuse"),
    M("config.py",
      "            if not isinstance(getattr(self, name), (kind, type(None))):",
      "            if False:",
      "a RunConfig's usage_limits, model_settings or guardrail list of the wrong kind is refused where it is made",
      "test_misuse"),
    # --- a run's own plugins (run.py, seams.py, agent.py); upstream's hooks on them (upstream/hooks.py) ----------
    M("run.py",
      "        if not run.begun:\n            release(run)\n",
      "        if not run.begun:\n            pass\n",
      "an awaited run cancelled before its thread began frees the state it took", "test_exactly_once"),
    M("run.py",
      "        if run.abandoned:\n            return None\n",
      "",
      "an awaited run abandoned before its thread began is never driven when the thread begins", "test_exactly_once"),
    M("run.py",
      "        elif run.state.running is run or not run.shared:",
      "        elif True:",
      "an awaited run's late cancel never stops the run that took its state next", "test_exactly_once"),
    M("run.py",
      "    Step(read_history_of_a_made_state, \"run.session\"),\n",
      "",
      "a RunState made by hand, given with a session, reads its history and brings its input", "test_session_runs"),
    M("run.py",
      "        state.history_unread = False\n        state.rebuild_transcript()\n    return state",
      "        state.rebuild_transcript()\n    return state",
      "a state a run made with a session (with no new input) never reads the session's history again",
      "test_session_runs"),
    M("state.py",
      "    state.run_id, state.history_unread = data[\"run_id\"] if version >= 2 else _derived_run_id(given), False",
      "    state.run_id = data[\"run_id\"] if version >= 2 else _derived_run_id(given)",
      "a loaded state never reads the session's history again", "test_session_runs"),
    M("session.py",
      "            return from_fields(cls, value, \"SessionSettings\")",
      "            return cls(**value)",
      "session settings given as a dict with a key they lack are a UserError naming it", "test_porting_differences"),
    M("steps.py",
      "        if run.state.cancel_mode == \"immediate\":  # cancelled while its input guardrails ran",
      "        if False:  # cancelled while its input guardrails ran",
      "a call whose input guardrail saw the run cancelled never starts, and runs on resume", "test_cancellation"),
    M("models/http.py",
      "            if getattr(self._callbacks, \"cancelled\", False):",
      "            if False:  # the run was cancelled before this request began",
      "a request that starts after an immediate cancel is stopped at once (never sent)", "test_cancellation"),
    M("state.py",
      "            self.aborts.cancelled = True\n",
      "",
      "an immediate cancel stops what is added to the run's aborts after it", "test_cancellation"),
    M("run.py",
      "    run.state.cancel_mode, run.state.aborts.cancelled = None, False\n",
      "    run.state.cancel_mode = None\n",
      "a state a cancel stopped, given again, sends its requests", "test_cancellation"),
    M("result.py",
      "        if self.is_complete:  # the run has ended",
      "        if False:  # the run has ended",
      "a finished streamed result's cancel() never stops the run that took its state next", "test_exactly_once"),
    M("result.py",
      "        with self._starting:\n            started, self._started = self._started, True\n        if not started:  # its",
      "        with self._starting:\n            started = self._started\n        if not started:  # its",
      "a streamed result cancelled before it was read never runs once another run took its state",
      "test_exactly_once"),
    M("run.py",
      "            if isinstance(stop, asyncio.CancelledError) or not run.begun:",
      "            if isinstance(stop, asyncio.CancelledError):",
      "an awaited run its executor refuses leaves the state free", "test_exactly_once"),
    M("run.py",
      "        if run.state.running is run:\n            run.state.cancel(mode)",
      "        if True:\n            run.state.cancel(mode)",
      "a stream's reader cancelled after its run ended never stops the run that took its state next",
      "test_exactly_once"),
    M("result.py",
      "        with self._starting:\n            started, self._started = self._started, True\n        if not started:  # its",
      "        if True:\n            started, self._started = self._started, True\n        if not started:  # its",
      "a cancel racing the first read of a stream: exactly one of them decides", "test_exactly_once"),
    M("upstream/runner.py",
      "            choose(run)\n        if self.replaces_context:",
      "            pass\n        if self.replaces_context:",
      "upstream shell: a conversation id given beside a state chooses the run's steps again",
      "test_upstream_behaviour"),
    M("upstream/runner.py",
      "            except UserError:\n                state.conversation_id, state.previous_response_id, "
      "state.auto_previous_response_id = before\n",
      "            except UserError:\n",
      "upstream shell: a conversation id given beside a state and refused leaves the state as it was",
      "test_upstream_behaviour"),
    M("upstream/runner.py",
      "        if self.replaces_context:\n            replace_context(state, self.context)",
      "        if self.replaces_context or True:\n            replace_context(state, self.context)",
      "upstream shell: a state keeps its context when none is given beside it",
      "test_upstream_behaviour"),
    M("upstream/runner.py",
      "    plugins = hook_plugins(hooks, starting_agent, input.current_agent if isinstance(input, RunState) else None)",
      "    plugins = hook_plugins(hooks, starting_agent, None)",
      "upstream shell: the hooks of the agent a resumed state is at fire whatever starting agent is given",
      "test_hooks"),
    M("run.py",
      "    if any(name in os.environ for name in TRACE_VARIABLES) or getattr(options.run_config, \"trace_path\", None):",
      "    if any(name in os.environ for name in TRACE_VARIABLES):",
      "a trace_path set after its RunConfig was made writes the run's trace", "test_tracing"),
    M("run.py",
      "    return seams.plugins + tuple(plugin for plugin in seams.checked(options.plugins) if plugin not in seams.plugins)",
      "    return seams.plugins",
      "plugins=: a run's own plugins take part in it", "test_plugins", "test_hooks"),
    M("run.py",
      "    return seams.plugins + tuple(plugin for plugin in seams.checked(options.plugins) if plugin not in seams.plugins)",
      "    return seams.plugins + seams.checked(options.plugins)",
      "plugins=: a plugin registered and given to a run takes part once", "test_plugins"),
    M("seams.py",
      "    if not isinstance(plugins, (list, tuple)) or not all(isinstance(plugin, Plugin) for plugin in plugins):",
      "    if not isinstance(plugins, (list, tuple)):",
      "plugins=: an object that is not a Plugin is refused before the run starts", "test_plugins"),
    M("seams.py",
      "    if not check(value, given):",
      "    if False:",
      "a plugin's change its seam cannot take is a UserError naming the plugin and the seam", "test_plugins"),
    M("seams.py",
      "    \"offer\": (lambda value, given: type(value) is type(given),",
      "    \"offer\": (lambda value, given: value is not None,",
      "a plugin's offer must be a setup: anything else is a UserError naming the plugin", "test_plugins"),
    M("steps.py",
      "        items = seams.returned(plugin, \"model_input\", plugin.model_input(run, setup, items), items)",
      "        items = plugin.model_input(run, setup, items)",
      "a plugin's model_input that is not input items is a UserError naming the plugin", "test_plugins"),
    M("agent.py",
      "                              plugins=plugins, session=session,",
      "                              plugins=(), session=session,",
      "as_tool(plugins=...): the nested run has the plugins its tool was given", "test_plugins", "test_hooks"),
    M("upstream/runner.py",
      "    state.context_wrapper.context = context\n    for nested",
      "    for nested",
      "upstream shell: a context given beside a RunState replaces the state's, as upstream resumes",
      "test_upstream_behaviour"),
    M("upstream/runner.py",
      "        after = tuple(given or own for given, own in zip(self.ids, before))",
      "        after = before[:1] + tuple(given or own for given, own in zip(self.ids, before))[1:2] + before[2:]",
      "upstream shell: a previous response id given beside a RunState replaces the state's", "test_upstream_behaviour"),
    M("upstream/hooks.py",
      "    return [HookPlugin(hooks)] if hooks is not None or has_agent_hooks else []",
      "    return [HookPlugin(hooks)] if hooks is not None else []",
      "upstream shell: an agent's own AgentHooks fire in a run given no RunHooks", "test_hooks",
      "test_upstream_behaviour"),
    M("upstream/hooks.py",
      "            caller.resolve(source_hooks.on_handoff(context, step.to_agent, source))",
      "            caller.resolve(source_hooks.on_handoff(context, source, step.to_agent))",
      "upstream shell: AgentHooks.on_handoff is told the new agent, then the source (upstream's convention)",
      "test_upstream_behaviour", "test_hooks"),
    M("upstream/hooks.py",
      "        context.turn_input = step.input\n",
      "",
      "upstream shell: the hooks' context holds what the model is sent this turn", "test_hooks",
      "test_upstream_behaviour"),
    M("upstream/runner.py",
      "    plugins = hook_plugins(hooks, starting_agent, input.current_agent if",
      "    plugins = hook_plugins(None, starting_agent, input.current_agent if",
      "upstream shell: Runner.run_sync(hooks=...) calls the run's hooks", "test_hooks", "test_upstream_behaviour"),
    M("upstream/classes.py",
      "        return super().as_tool(tool_name, tool_description, *args, plugins=hook_plugins(hooks, self), **options)",
      "        return super().as_tool(tool_name, tool_description, *args, plugins=hook_plugins(None, self), **options)",
      "upstream shell: as_tool(hooks=...) observes the nested run", "test_hooks"),
    # --- guardrails.py and the loop's use of them --------------------------------------------------------
    M("guardrails.py",
      "        if verdict.behavior[\"type\"] == \"reject_content\":\n            return verdict.behavior[\"message\"]",
      "        if verdict.behavior[\"type\"] == \"reject_content\":\n            return None",
      "tool guardrail reject_content: the model sees the message instead of the tool's output", "test_guardrails"),
    M("guardrails.py",
      "        if verdict.behavior[\"type\"] == \"raise_exception\":\n            raise tripwire(guardrail, verdict)",
      "        if False:\n            raise tripwire(guardrail, verdict)",
      "tool guardrail raise_exception stops the run with its tripwire exception", "test_guardrails"),
    M("guardrails.py",
      "    if not isinstance(output, GuardrailFunctionOutput):\n        raise TypeError(",
      "    if False:\n        raise TypeError(",
      "a guardrail that returns something else than GuardrailFunctionOutput is a TypeError naming it",
      "test_guardrails"),
    M("guardrails.py",
      "        results.append(result)\n        if step.triggered:\n            raise tripwire(result)\n",
      "        results.append(result)\n    for result in results:\n        if result.output.tripwire_triggered:\n"
      "            raise tripwire(result)\n",
      "input guardrails run in order and stop at the first tripwire: later ones never run", "test_guardrails"),
    M("guardrails.py",
      "    data = ToolOutputGuardrailData(context=context, agent=agent, output=output)",
      "    data = ToolOutputGuardrailData(context=context, agent=agent, output=None)",
      "a tool output guardrail sees the value the tool returned", "test_guardrails"),
    M("tracing/plugin.py",
      "            span.span_data.triggered = step.triggered",
      "            span.span_data.triggered = False",
      "a tripped input guardrail's trace span says triggered", "test_tracing_runs", "test_tracing"),
    M("steps.py",
      "    if join is not None:\n        join()",
      "    if False:\n        join()",
      "a parallel input guardrail's tripwire stops the run before any tool of the first response runs",
      "test_guardrails"),
    M("guardrails.py",
      "        if not isinstance(output, ToolGuardrailFunctionOutput):",
      "        if False:",
      "a tool guardrail returning no ToolGuardrailFunctionOutput fails the run with a TypeError naming it",
      "test_guardrails"),
    # --- result.py / run.py: streaming results and cancel --------------------------------------------------
    M("result.py",
      "        if started:  # read before, or cancelled before it was read\n            return\n",
      "",
      "stream_events: the run happens once; iterating again yields nothing", "test_cancellation", "test_run"),
    M("result.py",
      "            self._release()\n            self._complete(RunResult.from_state(self._state, None))\n            return\n",
      "            self._release()\n",
      "cancel() before the first read of stream_events: no event and no model call", "test_cancellation",
      "test_upstream_behaviour"),
    M("result.py",
      "        if \"error\" in outcome:\n            raise outcome[\"error\"]",
      "        if False:\n            raise outcome[\"error\"]",
      "a streamed run's error is raised by stream_events", "test_cancellation", "test_run"),
    M("result.py",
      "            while delivered and not handled.acquire(timeout=1.0):",
      "            while False:",
      "a streamed run never gets ahead of its reader: cancel() while handling an event takes effect right there",
      "test_run", "test_cancellation"),
    M("result.py",
      "                outcome[\"error\"] = e\n                self._complete(RunResult.from_state(self._state, None))",
      "                outcome[\"error\"] = e",
      "a failed streamed run still completes its result with the items it had accepted",
      "test_upstream_behaviour"),
    M("result.py",
      "        return self.raw_responses[-1].response_id if self.raw_responses else None",
      "        return self.raw_responses[0].response_id if self.raw_responses else None",
      "last_response_id is the id of the run's last model response", "test_run", "test_responses"),
    M("run.py",
      "    if run.state.cancel_mode == \"immediate\":\n        raise Cancelled()",
      "    if False:\n        raise Cancelled()",
      "cancel() (immediate) stops the run at the next event", "test_run", "test_cancellation"),
    M("run.py",
      "        if run.state.cancel_mode is not None and run.state.pending is None:",
      "        if run.state.cancel_mode == \"immediate\" and run.state.pending is None:",
      "cancel(mode='after_turn'): the current turn settles and no new turn starts", "test_run", "test_cancellation"),
    M("models/http.py",
      "class RequestCancelled(ModelHTTPError, Cancelled):",
      "class RequestCancelled(ModelHTTPError):",
      "a model call aborted by cancel() ends the run quietly, not with an error", "test_cancellation"),
    M("run.py",
      "        elif run.state.running is run or not run.shared:  # still going on (a fresh run's own state is not taken)\n            run.state.cancel(\"immediate\")",
      "        elif run.state.running is run or not run.shared:  # still going on (a fresh run's own state is not taken)\n            pass",
      "cancelling the task that awaits Runner.run stops the run at its next step", "test_cancellation"),
    M("run.py",
      "    Step(resume_cancelled, \"state.cancel_mode\"),\n",
      "",
      "a cancelled run's state can be resumed", "test_cancellation"),
    M("turn.py",
      "        if run.state.cancel_mode == \"immediate\":\n            slots.release()\n            break",
      "        if False:\n            slots.release()\n            break",
      "once the run is cancelled no further tool call starts (the resumed state runs it)", "test_cancellation"),
    M("result.py",
      "    if mode not in (\"preserve_all\", \"normalized\"):",
      "    if False:",
      "to_input_list with an unknown mode is a UserError naming it", "test_run"),
    # --- models/responses.py: the Responses adapter ----------------------------------------------------------
    M("models/responses.py",
      "        if not texts or any(i.get(\"type\") == \"function_call\" for i in items):",
      "        if not texts:",
      "Responses: a turn of function calls is no sign that text.format was ignored (it is not resent)",
      "test_llama_server"),
    M("models/responses.py",
      "                 if p.get(\"type\") == \"output_text\" and p[\"text\"].strip()]",
      "                 if p.get(\"type\") == \"output_text\"]",
      "Responses: an empty or blank text is no sign that text.format was ignored (it is not resent)",
      "test_llama_server"),
    M("models/responses.py",
      "    if item.get(\"id\") == FAKE_ID:\n",
      "    if False:\n",
      "Responses: an item with the Chat adapter's placeholder id is sent without it", "test_responses"),
    M("models/responses.py",
      "        body[\"max_output_tokens\"] = settings.max_tokens",
      "        body[\"max_tokens\"] = settings.max_tokens",
      "Responses: max_tokens is sent as max_output_tokens", "test_responses"),
    M("models/responses.py",
      "        body[\"conversation\"] = conversation_id",
      "        body[\"conversation_id\"] = conversation_id",
      "Responses: conversation_id is sent as the request's `conversation`", "test_responses"),
    M("models/responses.py",
      "    if status == \"incomplete\":",
      "    if False:",
      "Responses: an incomplete response raises ModelBehaviorError, never a silent partial answer",
      "test_responses"),
    M("models/responses.py",
      "        raise http_error(None, \"the stream ended before response.completed: the response is truncated \"\n"
      "                               \"(connection dropped or server failed mid-stream)\",\n"
      "                         type=\"stream_error\", code=\"truncated\")",
      "        return",
      "Responses: a stream that ends before response.completed is an error, not an empty answer",
      "test_responses", "test_http"),
    M("models/responses.py",
      "    if not output and collected:",
      "    if False:",
      "Responses: an empty output in response.completed is filled from the output_item.done events",
      "test_responses"),
    M("models/responses.py",
      "    if isinstance(spec, dict) and spec.get(\"type\", \"function\") != \"function\":\n        return dict(spec)",
      "    if False:\n        return dict(spec)",
      "Responses: a hosted tool is sent as its own configuration", "test_responses", "test_porting_models"),
    M("models/responses.py",
      " if not (isinstance(i, dict) and i.get(\"type\") == \"reasoning\" and i.get(\"id\") == FAKE_ID)]",
      " if True]",
      "Responses: reasoning the Chat adapter produced is never sent", "test_responses"),
    M("models/responses.py",
      "                             \"status\": kind.split(\".\")[1]}, exchange)",
      "                             \"status\": \"completed\"}, exchange)",
      "Responses: response.failed and response.incomplete events in a stream raise", "test_responses"),
    # --- models/provider.py: the kernel's default provider ---------------------------------------------------
    M("models/provider.py",
      "    if host_of(base_url) == \"api.openai.com\":",
      "    if True:",
      "default provider: a base URL other than OpenAI's gets the Chat Completions adapter", "test_http"),
    M("models/provider.py",
      "            if key not in self._models:",
      "            if True:",
      "default provider: one model object per model name (its connections are reused)", "test_http"),
    # --- upstream/providers.py: OpenAIProvider and MultiProvider ------------------------------------------
    M("upstream/providers.py",
      "        return host_of(base_url) == \"api.openai.com\"",
      "        return True",
      "provider: a base URL other than OpenAI's gets the Chat Completions adapter", "test_http",
      "test_http_end_to_end"),
    M("upstream/providers.py",
      "        if self.use_responses is not None:\n            return self.use_responses",
      "        if False:\n            return self.use_responses",
      "provider: use_responses chooses the adapter", "test_http", "test_http_end_to_end"),
    M("upstream/providers.py",
      "        if _default_api is not None:",
      "        if False:",
      "provider: set_default_openai_api chooses the adapter when the provider is not told",
      "test_http", "test_http_end_to_end"),
    M("upstream/providers.py",
      "            return chosen.get_model(rest)",
      "            return chosen.get_model(model_name)",
      "MultiProvider: a mapped prefix's provider gets the model name without the prefix", "test_porting_models"),
    M("upstream/providers.py",
      "rest if self._openai_prefix_mode == \"alias\" else model_name",
      "rest",
      "MultiProvider: openai_prefix_mode='model_id' keeps the openai/ prefix in the model id", "test_porting_models"),
    M("upstream/providers.py",
      "        if self._unknown_prefix_mode == \"model_id\":",
      "        if True:",
      "MultiProvider: an unknown prefix is a UserError by default", "test_porting_models"),
    M("upstream/providers.py",
      "            if key not in self._models:",
      "            if True:",
      "provider: one model object per model name (its connections are reused)", "test_porting_models"),
    # --- caller.py: sync and async callables -----------------------------------------------------------------
    M("caller.py",
      "    def __bool__(self) -> bool:\n        return bool(self.value)",
      "    def __bool__(self) -> bool:\n        return True",
      "a Ready is true or false as its value is", "test_session"),
    M("caller.py",
      "    if aborts is not None:\n        aborts.append(abort)",
      "    if False:\n        aborts.append(abort)",
      "cancel() stops a running async tool (its task is cancelled)", "test_cancellation"),
    M("caller.py",
      "            box[\"value\"] = context.run(fn)",
      "            box[\"value\"] = fn()",
      "a thread the run starts sees the caller's context variables", "test_tools", "test_tracing_runs",
      "test_cancellation"),
    M("caller.py",
      "            return await (task if timeout is None else asyncio.wait_for(task, timeout))",
      "            return await task",
      "an async callable is cancelled at its timeout", "test_tools"),
    M("caller.py",
      "        return asyncio.run(wait())\n"
      "    return in_thread(lambda: asyncio.run(wait()), name=\"miniagents-await\")",
      "        return asyncio.run(wait())\n    return asyncio.run(wait())",
      "run_sync called from async code still awaits async tools (in a helper thread)", "test_tools", "test_run"),
    # --- steps.py / run.py: exactly once across resumes ------------------------------------------------------
    M("ledger.py",
      "        if not won:  # it ran before, or was stopped before it started: it does not run now",
      "        if False:",
      "exactly once: a call another resume claimed is not run again", "test_exactly_once"),
    M("ledger.py",
      "    if not won:\n        raise AlreadyResumedError(",
      "    if False:\n        raise AlreadyResumedError(",
      "exactly once: a second resume of one pause is refused before it runs or writes anything",
      "test_exactly_once", "test_approvals"),
    M("ledger.py",
      "        decision = True if getattr(call.target, \"idempotent\", False) else None if call.call_id in found else \\",
      "        decision = True if getattr(call.target, \"idempotent\", False) else True if call.call_id in found else \\",
      "crash-safe: a call started before a crash with no output waits for a person (issue 34)",
      "test_continue", "test_crash_continue"),
    M("ledger.py",
      "        rerun = call.call_id in turn.reruns",
      "        rerun = False",
      "crash-safe: an approved (or idempotent) repeat of a call started before a crash runs again (issue 34)",
      "test_continue"),
    M("ledger.py",
      "    if not stored(run, run.session.write_journal, run.journal, entry):",
      "    if not stored(run, run.session.write_journal, run.journal, entry) and False:",
      "crash-safe: a worker whose journal entry another replaced stops; two continuing at once, one wins",
      "test_continue"),
    M("ledger.py",
      "    if state.unsaved_session_input or run.shared:",
      "    if run.shared:",
      "crash-safe: new input while a turn is unfinished is refused (issue 34)",
      "test_continue", "test_crash"),
    M("ledger.py",
      "    if run.journal and run.journal == run.scratch.get(write_journal) and",
      "    if False and",
      "crash-safe: a run that returned or raised leaves no turn in the journal (issue 34)",
      "test_continue"),
    M("run.py",
      "        turn.next_step = seams.change(run.plugins, \"answer_error\", run, turn, error)",
      "        pass",
      "an error a plugin answers (upstream's error_handlers) ends the run with that answer",
      "test_error_handlers"),
    M("upstream/error_handlers.py",
      "    if verdict is None:",
      "    if False:",
      "upstream's error_handlers: a handler that returns None lets the error raise",
      "test_error_handlers"),
    M("ledger.py",
      "entry[\"state\"], context_override=state.context_wrapper.context)",
      "entry[\"state\"])",
      "crash-safe: a continue gives the state it continues the run's context, its agent tools' paused runs too",
      "test_continue"),
    M("ledger.py",
      "    if state.unsaved_session_input or run.shared:",
      "    if state.unsaved_session_input:",
      "crash-safe: a state made by hand given with a session holding a turn in flight is refused, not continued",
      "test_continue"),
    M("run.py",
      "        if own.running is run:\n",
      "        if False:\n",
      "crash-safe: a streamed continue holds the state it continues", "test_continue"),
    M("upstream/runner.py",
      "    for nested in state.pending.nested.values() if state.pending else ():",
      "    for nested in ():",
      "upstream shell: a context given beside a state reaches its agent tools' paused inner runs",
      "test_upstream_behaviour"),
    M("ledger.py",
      "    if found.pending is not None and (not entry.get(\"paused\") or stored(",
      "    if found.pending is not None and (True or stored(",
      "crash-safe: the pause a continue gives again and the state the run returned are one pause: one resume wins",
      "test_continue"),
    M("sql_dialect.py",
      "else \"disk I/O error\" in str(exc)",
      "else \"\" in str(exc)",
      "SQLite on a Python without error codes: only a failed sync may have stored a commit (a generated mutant "
      "survived)", "test_session_files"),
    M("ledger.py",
      "        fresh = asking and not stored(run, run.ledger.lookup_call, *pause_claim(run.state))[0]",
      "        fresh = False",
      "crash-safe: a pause journaled as the run paused is marked so, its claim kept for a continue and the state",
      "test_continue"),
    M("ledger.py",
      "    if found.pending is not None and (not entry.get(\"paused\") or stored(",
      "    if found.pending is not None and (not entry.get(\"paused\") or False and stored(",
      "crash-safe: a journaled pause a resume claimed and died in is continued under a claim of its own",
      "test_crash_continue", "test_continue"),
    M("ledger.py",
      "    return getattr(nested, \"finished\", False) or getattr(",
      "    return getattr(",
      "crash-safe: a continue never starts again an agent tool's inner run that a cancelled resume saw to its end",
      "test_cancellation"),
    M("mcp/stdio.py",
      "            start = max(ends)\n",
      "            break\n",
      "MCP: a secret across the point where the kept stderr's cut front is dropped is dropped whole",
      "test_mcp_hostile"),
    M("mcp/stdio.py",
      "                        self._stderr_cut = True\n",
      "                        pass\n",
      "MCP: the kept stderr's front, which may begin inside a secret, is never shown", "test_mcp_hostile"),
    M("mcp/__main__.py",
      "            stream.reconfigure(errors=\"backslashreplace\")",
      "            pass",
      "MCP listing command: what the terminal's encoding lacks is printed as an escape, never a traceback",
      "test_mcp_docs_and_cli"),
    M("models/http.py",
      "        if conn is not None and quiet(conn.sock):\n",
      "        if conn is not None:\n",
      "HTTP adapters: an idle connection a server sent bytes on is never reused (they were the next answer)",
      "test_http"),
    M("mcp/server.py",
      "        result = connection.request(\"tools/call\", params, self._request_timeout)  # once",
      "        result = self._retrying(lambda: connection.request(\"tools/call\", params, self._request_timeout))  # ",
      "MCP: a tool call is never sent again (it may have run)", "test_mcp_protocol"),
    M("ledger.py",
      "            pending.unsure or run.abandoned or pending.outputs or pending.nested)",
      "            run.abandoned or pending.outputs or pending.nested)",
      "crash-safe: a continued run paused to ask about a call that may have happened keeps the question journaled",
      "test_continue", "test_crash_continue"),
    M("ledger.py",
      "            pending.unsure or run.abandoned or pending.outputs or pending.nested)",
      "            pending.unsure or run.abandoned or pending.nested)",
      "crash-safe: a pause for approval after a call of its turn ran stays journaled until its resume ends",
      "test_continue", "test_crash_continue"),
    M("ledger.py",
      "            pending.unsure or run.abandoned or pending.outputs or pending.nested)",
      "            pending.unsure or run.abandoned or pending.outputs)",
      "crash-safe: a pause inside an agent tool stays journaled until its resume ends (its inner calls may have run)",
      "test_continue", "test_crash_continue"),
    M("ledger.py",
      "            pending.unsure or run.abandoned or pending.outputs or pending.nested)",
      "            True)",
      "crash-safe: a pause where no call ran yet leaves the session free for new input",
      "test_continue"),
    M("ledger.py",
      "    if run.journal is not None:  # the resumed turn is in flight",
      "    if run.journal is not None and not run.journal:  # the resumed turn is in flight",
      "crash-safe: the resume that wins a journaled pause closes its entry (new input is then accepted)",
      "test_continue"),
    M("ledger.py",
      "    if not won and not (run.scratch.get(open_journal) and outcome is None):  # another resume of this state",
      "    if False:",
      "exactly once: a second resume of a state a limit stopped between turns is refused (issue 30)",
      "test_usage_limits"),
    M("ledger.py",
      "    if won and state.pending.pauses and not run.scratch.get(open_journal) and written(run):  # taken over, but the",
      "    if False:",
      "exactly once: taking over a resume that completed (or wrote its turn) is refused (issue 30)",
      "test_exactly_once"),
    M("run.py",
      "    pauses = state.pending.pauses + 1 if state.pending is not None else 0",
      "    pauses = 0",
      "exactly once: a turn that paused again is a new pause, resumable once more", "test_exactly_once"),
    M("ledger.py",
      "            text, call.fate = recorded if recorded is not None else NOT_RUN_AGAIN, \"done\"",
      "            text, call.fate = NOT_RUN_AGAIN, \"done\"",
      "exactly once: a call an earlier resume ran gets the output that resume recorded", "test_exactly_once"),
    M("ledger.py",
      "        if text is not None:\n            stored(run, run.ledger.settle_call",
      "        if False:\n            stored(run, run.ledger.settle_call",
      "exactly once: a call's output is recorded in the ledger the moment it finishes", "test_exactly_once"),
    M("steps.py",
      "        withhold_rejected_output(run, turn.items, turn.guardrail_results, trip)",
      "        pass",
      "guardrails: a rejected final output is kept out of the session and the state", "test_guardrails"),
    M("guardrails.py",
      "            item.raw_item, item.output, item.custom_data = function_call_output(item.call_id, text), text, None",
      "            item.output = text",
      "guardrails: a rejected terminal tool output is replaced in the history, not only on the item", "test_guardrails"),
    M("steps.py",
      "        return wrapped(run, turn, call, ctx)",
      "        return invoke(run, turn, call, ctx)",
      "the invoke seam: a plugin's wrapper is how a call is invoked (custom tool data)", "test_custom_data"),
    M("upstream/stored_prompts.py",
      "        return PromptedModel(model, prompt_for(setup.agent, run.state.context_wrapper))",
      "        return model",
      "stored prompts: an agent's prompt reaches its model calls", "test_porting_names"),
    M("upstream/custom_data.py",
      "                    call.custom_data = extract_custom_data(call.target, ctx, value,\n"
      "                                                           function_call_output(call.call_id, text))",
      "                    call.custom_data = None",
      "custom data: the extractor's mapping reaches the output item", "test_custom_data"),
    # --- the seams of upstream's RunConfig callbacks, and upstream/run_callbacks.py ---------------------------
    M("run.py",
      "        items = seams.change(run.plugins, \"session_input\", run, history, new_items, items)",
      "        pass",
      "the session_input seam: a plugin decides what a run with a session starts from (session_input_callback)",
      "test_run_callbacks"),
    M("steps.py",
      "            setup = dataclasses.replace(setup, instructions=instructions)",
      "            pass",
      "the model_input seam: a plugin's pair changes the instructions sent (call_model_input_filter)",
      "test_run_callbacks"),
    M("turn.py",
      "    return seams.change(run.plugins, \"error_text\", run, call, kind, default)",
      "    return default",
      "the error_text seam: a plugin words what the model is told for a call that cannot run (tool_error_formatter)",
      "test_run_callbacks"),
    M("guardrails.py",
      "        text = seams.change(run.plugins, \"blocked_output\", run, trip, BLOCKED_OUTPUT) if run.plugins else",
      "        text = BLOCKED_OUTPUT if run.plugins else",
      "the blocked_output seam: a plugin words the text kept for a rejected tool output "
      "(output_guardrail_blocked_message)", "test_run_callbacks"),
    M("upstream/run_callbacks.py",
      "    combined = caller.call(callback, copy.deepcopy(list(history)), copy.deepcopy(list(new_items)))",
      "    combined = caller.call(callback, history, new_items)",
      "session_input_callback gets copies: what it does to them never changes the input the session saves",
      "test_run_callbacks"),
    M("upstream/run_callbacks.py",
      "    return data.instructions, drop_orphans(data.input)",
      "    return data.instructions, data.input",
      "call_model_input_filter: unpaired calls or outputs in what it returns are dropped before the request",
      "test_run_callbacks"),
    M("upstream/run_callbacks.py",
      "    if message is not None and not isinstance(message, str):",
      "    if False:",
      "tool_error_formatter: a value that is not a text is a UserError, never a call's output",
      "test_run_callbacks"),
    M("upstream/run_callbacks.py",
      "    return message or text\n",
      "    return message\n",
      "tool_error_formatter: None or an empty text leaves the kernel's text", "test_run_callbacks"),
    M("upstream/run_callbacks.py",
      "    return message if isinstance(message, str) and message else text",
      "    return message",
      "output_guardrail_blocked_message: a formatter with no text leaves the kernel's", "test_run_callbacks"),
    M("upstream/runner.py",
      "        instructions, items = run_callbacks.filter_model_input(run, setup, items) if filtered else (None, items)",
      "        instructions, items = None, items",
      "call_model_input_filter: the upstream plugin runs the program's filter before each model call",
      "test_run_callbacks"),
    M("steps.py",
      "    write_to_session(run, items, f\"turn-{run.state.current_turn}\" if turn.claim is not None else None)",
      "    write_to_session(run, items, None)",
      "exactly once: a resumed turn is written to the session once, however often the state is resumed",
      "test_exactly_once"),
    M("steps.py",
      "    write_to_session(run, [item.raw_item for item in admitted], f\"input-{state.current_turn}\")",
      "    write_to_session(run, [item.raw_item for item in admitted], None)",
      "exactly once: add_input's items are written to the session once across resumes", "test_usage_limits"),
    M("run.py",
      "    if callable(getattr(options.session, \"claim_call\", None)):\n        ledger = options.session",
      "    if False:\n        ledger = options.session",
      "exactly once: a session that keeps a ledger is the run's ledger", "test_exactly_once"),
    # --- server-managed conversations (conversation_id, previous_response_id) --------------------------------
    M("steps.py",
      "    turn.input = state.transcript[state.server_known:]",
      "    turn.input = list(state.transcript)",
      "server-managed: a request sends only the items the server does not have yet", "test_upstream_behaviour"),
    M("steps.py",
      "        state.previous_response_id = response.response_id",
      "        pass",
      "server-managed: each request chains to the last response (previous_response_id)", "test_upstream_behaviour"),
    M("turn.py",
      "        if len(set(ids)) < len(ids) or not all(ids):",
      "        if False:",
      "server-managed: a call id repeated in one response is the server's mistake, never two calls answered as one",
      "test_call_ids"),
    M("turn.py",
      "        return output, 0\n",
      "",
      "server-managed: the call ids the server gave are kept", "test_call_ids"),
    M("steps.py",
      "    state.server_known = len(state.transcript) + turn.said",
      "    state.server_known = len(state.transcript)",
      "server-managed: the model's own items are never sent back to the server that made them",
      "test_upstream_behaviour"),
    M("run.py",
      "    if run.session is not None:  # the server and the session would each hold a history of their own",
      "    if False:",
      "server-managed: a session with conversation_id / previous_response_id is refused", "test_upstream_behaviour"),
    M("run.py",
      "    if run.config.output_guardrails or any(a.output_guardrails for a in run.agents):",
      "    if run.config.output_guardrails:",
      "server-managed: an agent's output guardrails are refused (a rejected output cannot be removed)",
      "test_upstream_behaviour"),
    M("run.py",
      "    if run.config.handoff_input_filter or any(getattr(h, \"input_filter\", None) for a in run.agents",
      "    if run.config.handoff_input_filter or any(False for a in run.agents",
      "server-managed: a handoff input filter is refused before the model is asked", "test_upstream_behaviour"),
    M("items.py",
      "            if not ids_repeat:\n                closed.add(call_id)",
      "            closed.add(call_id)",
      "server-managed: a history whose finished turns reused an id keeps each pair (the server's count stays true)",
      "test_call_ids"),
    M("state.py",
      "to_input_list(self.original_input) + generated, self.server_managed)",
      "to_input_list(self.original_input) + generated)",
      "server-managed: the model's view is rebuilt (load, a failed turn) keeping pairs that reuse an id",
      "test_call_ids"),
    M("state.py",
      "    output = state.pending.output",
      "    output = [i.raw_item for i in state.generated_items]",
      "RunState loading: a paused agent tool is found by the paused turn's call, not an earlier call with its id",
      "test_call_ids"),
    M("items.py",
      "            if item.get(\"type\") == \"function_call\" and not (isinstance(item.get(\"name\"), str)",
      "            if False and not (isinstance(item.get(\"name\"), str)",
      "a custom model's function_call whose name, id or arguments is not a string is a UserError",
      "test_items"),
    M("run.py",
      "        if options.session is None:\n            input = drop_orphans(to_input_list(input))",
      "        if False:\n            input = drop_orphans(to_input_list(input))",
      "a list input's orphans are dropped where it enters: never sent, never in what the result gives back",
      "test_run"),
    M("items.py",
      "            if not isinstance(item.get(key), str) or key == \"call_id\" and not item[key]:",
      "            if not isinstance(item.get(key), str) or not item[key]:",
      "RunState loading: a call with an empty name (the model was told no tool has it) loads", "test_tools"),
    M("upstream/classes.py",
      "ToolNotFoundBehavior = Literal[\"raise_error\", \"return_error_to_model\"]",
      "ToolNotFoundBehavior = Literal[\"raise_error\", \"\"]",
      "upstream shell: the RunConfig policy aliases hold upstream's values (a generated mutant, seed 5, survived)",
      "test_porting"),
    M("validate.py",
      "        return None if value is None else wrong()",
      "        return None",
      "tool arguments: where None is the type, only null is taken (a generated mutant, seed 5, survived)",
      "test_schema"),
    M("testing/__init__.py",
      "        ModelResponse(list(step.output), step.usage)",
      "        pass",
      "testing shell: a step holding what no model response may is refused when it is added", "test_testing"),
    M("testing/__init__.py",
      "\"delta\": item.get(\"arguments\") or \"\"})",
      "\"delta\": item[\"arguments\"]})",
      "testing shell: a streamed call given no arguments replays an empty delta", "test_testing"),
    M("run.py",
      "        if isinstance(turn.next_step, NextStepHandoff) and run.state.server_managed and \\",
      "        if False and \\",
      "server-managed: a transfer that failed is answered as not run (the server holds its call)", "test_handoffs"),
    M("run.py",
      "                not any(isinstance(item, HandoffOutputItem) for item in turn.items):",
      "                True:",
      "server-managed: a transfer that happened is not answered twice when a later step fails", "test_handoffs"),
    M("run.py",
      "    if racing and run.state.conversation_id and not run.state.model_responses:",
      "    if False:",
      "server-managed: input guardrails racing the model are refused with conversation_id", "test_guardrails"),
    M("schema.py",
      "        return frozenset(list(inspect.signature(func.func).parameters)[:len(func.args)]) | frozenset(",
      "        return frozenset(",
      "tool arguments: a **kwargs key naming a partial's positional argument is refused", "test_hostile_values"),
    M("schema.py",
      "    return frozenset({first.name}) if first is not None and first.kind in KEYWORDS else frozenset()",
      "    return frozenset()",
      "tool arguments: a **kwargs key naming a bound method's self is refused", "test_hostile_values"),
    M("models/responses.py",
      "    response = check_final(dict(shapes.obj(response, \"response.completed.response\")), exchange)",
      "    response = check_final(dict(shapes.obj(response, \"\")), exchange)",
      "Responses stream: a completed event whose response is no object is named in the error (a generated mutant, "
      "seed 1, survived)", "test_responses"),
    M("handoffs.py",
      "            if data is None:\n                raise ModelBehaviorError(\"Handoff function expected non-null input",
      "            if False:\n                raise ModelBehaviorError(\"Handoff function expected non-null input",
      "a typed handoff given null arguments is the model's mistake, in upstream's words (a generated mutant, seed 1, "
      "survived)", "test_handoffs"),
    # --- context.py: approval records and their scopes -----------------------------------------------------
    M("turn.py",
      "            if item.get(\"type\") == \"function_call\" and item[\"call_id\"] in state.call_ids:",
      "            if False:",
      "server-managed: a call given an earlier call's id (numbered per response) is decided anew", "test_call_ids"),
    M("context.py",
      "            record.get(part, {}).pop(call_id, None)",
      "            pass",
      "server-managed: an earlier call's exact approval (its arguments) never covers a new call with its id",
      "test_call_ids"),
    M("state.py",
      "    if not server_managed and not earlier.isdisjoint(calls):",
      "    if not earlier.isdisjoint(calls):",
      "server-managed: a state paused at a call whose id an earlier call had loads", "test_call_ids"),
    M("context.py",
      "        return f\"{tool_name}@{scope}\" if scope else tool_name",
      "        return tool_name",
      "approvals are scoped: a decision in one run never covers a call of another run with the same id",
      "test_approvals", "test_upstream_behaviour"),
    M("context.py",
      "            if isinstance(record[other], list) and item.call_id in record[other]:",
      "            if False:",
      "approving a call withdraws its earlier rejection, and the other way round", "test_approvals"),
    M("context.py",
      "        key = self._key(item.tool_name, getattr(item, \"approval_scope\", None))",
      "        key = self._key(item.tool_name)",
      "a decision is recorded in the scope of the run the item belongs to (a nested run's approval item)",
      "test_approvals"),
    # --- turn.assign_call_ids: a call id never answers two calls, a call never runs twice ---------------------
    M("turn.py",
      "                if earlier.get(call_id) == _invocation(item):",
      "                if False:",
      "call ids: an exact replay of an earlier call (same unique id, name, arguments) is dropped, not run again",
      "test_call_ids"),
    M("turn.py",
      "            if call_id and not NUMBERED_ID.fullmatch(call_id):",
      "            if call_id:",
      "call ids: a numbered id (call_0) seen before is a new call, never a replay", "test_call_ids"),
    M("turn.py",
      "        arguments = json.dumps(json.loads(text), sort_keys=True)",
      "        arguments = text",
      "call ids: a replay is recognised whatever the spacing and key order of its arguments", "test_call_ids"),
    # --- tracing.py: spans ---------------------------------------------------------------------------------
    M("tracing/spans.py",
      "    def _scrub(self) -> None:\n        if not self._include_data:",
      "    def _scrub(self) -> None:\n        if False:",
      "tracing: with trace_include_sensitive_data=False no span holds inputs, outputs or arguments",
      "test_tracing", "test_tracing_runs"),
    M("tracing/spans.py",
      "    if include_data and isinstance(exc, AgentsException):",
      "    if include_data:",
      "tracing: a span's error carries the message of miniagents' own exceptions only", "test_tracing",
      "test_tracing_runs"),
    M("tracing/create.py",
      "frozenset((\"extra_headers\", \"extra_query\",",
      "frozenset((\"extra_query\",",
      "tracing: a model's extra headers never reach a generation span", "test_tracing", "test_tracing_runs"),
    M("tracing/spans.py",
      "            self.error = _error_for(exc, self._include_data)",
      "            pass",
      "tracing: an exception leaving a span is recorded as its error", "test_tracing", "test_tracing_runs"),
    M("tracing/spans.py",
      "        self.parent_id = parent.span_id if isinstance(parent, SpanImpl) else None",
      "        self.parent_id = None",
      "tracing: a span names its parent span", "test_tracing", "test_tracing_runs"),
    M("tracing/plugin.py",
      "        include = bool(getattr(config, \"trace_include_sensitive_data\", True)) and \\\n"
      "            getattr(parent, \"_include_data\", True)",
      "        include = bool(getattr(config, \"trace_include_sensitive_data\", True))",
      "tracing: a nested run never records more sensitive data than the run that called it", "test_tracing",
      "test_tracing_runs"),
    M("tracing/plugin.py",
      "    if path and not any(isinstance(p, JsonlTraceProcessor) and p.path == os.path.abspath(path) "
      "for p in inherited):",
      "    if path:",
      "tracing: a nested run writing to its caller's trace file writes each span once", "test_tracing",
      "test_tracing_runs"),
    M("tracing/util.py",
      "        fd = os.open(name, flags | nonblocking | getattr(os, \"O_CLOEXEC\", 0), 0o600)",
      "        fd = os.open(name, flags | nonblocking | getattr(os, \"O_CLOEXEC\", 0), 0o644)",
      "tracing: a trace file is created readable by its owner only", "test_tracing", "test_tracing_runs"),
    M("tracing/processors.py",
      "            shown = redacted(record, known_secrets())",
      "            shown = redacted(record)",
      "tracing: the environment's API key, echoed in a tool's output, never reaches a trace file", "test_tracing",
      "test_tracing_runs"),
    M("tracing/processors.py",
      "        record = redacted(span.export(), known_secrets())\n        with self._lock:\n"
      "            depth = self._depth.pop(",
      "        record = span.export()\n        with self._lock:\n            depth = self._depth.pop(",
      "tracing: no credential reaches the live view on stderr", "test_tracing", "test_tracing_runs"),
    M("tracing/redaction.py",
      "        text = BEARER.sub(rf\"\\1 {MASK}\", text)",
      "        pass",
      "tracing: a Bearer token in any text never reaches a trace", "test_tracing", "test_tracing_runs"),
    M("tracing/redaction.py",
      "        return value if math.isfinite(value) else NOT_FINITE.get(value, \"NaN\")",
      "        return value",
      "tracing: a NaN or infinite number is written as text, so every trace line is strict JSON", "test_tracing"),
    M("tracing/redaction.py",
      "        model = getattr(model, \"wrapped\", None)",
      "        model = None",
      "tracing: the API key of a run's model, wrapped by a plugin, never reaches a trace", "test_tracing_runs"),
    M("tracing/plugin.py",
      "                remember(step.model)  # its API key is hidden from what the processors write from now on",
      "                pass",
      "tracing: the API key of a run's model, echoed by its server, never reaches a trace", "test_tracing_runs"),
    M("tracing/redaction.py",
      "    found = [text for value in values for text in (value, value.strip())]",
      "    found = list(values)",
      "tracing: an environment credential read with its newline is hidden where it is echoed without",
      "test_tracing"),
    M("tracing/plugin.py",
      "        self._outer, self._token = _run_usage.get(), _run_usage.set(self.usage)",
      "        self._outer, self._token = None, _run_usage.set(self.usage)",
      "tracing: a run's task span counts the tokens of its agent tools' inner runs", "test_tracing_runs"),
    M("tracing/plugin.py",
      "            self._task.span_data.usage = self.usage.to_json()",
      "            self._task.span_data.usage = self._outer.to_json() if self._outer else self.usage.to_json()",
      "tracing: an agent tool's inner run reports its own usage, not its caller's", "test_tracing_runs"),
    M("tracing/plugin.py",
      "        usage.add(more, requests)",
      "        usage.add(more, requests)\n        usage.add(Usage(), 1) if requests else None",
      "tracing: a run's usage counts each model call once", "test_tracing_runs"),
    M("tracing/tree.py",
      "    return shown(line)  # what the file says: no newline, escape or bidirectional override of its own",
      "    return line",
      "the trace reader escapes a control character a span's text holds", "test_tracing"),
    M("tracing/tree.py",
      "    return shown(line)\n",
      "    return line\n",
      "the trace reader escapes a control character a trace's name or group holds", "test_tracing"),
    M("tracing/util.py",
      "    if not stat.S_ISREG(os.fstat(fd).st_mode):",
      "    if False:",
      "the trace reader refuses a FIFO, a device or a folder at once", "test_tracing_command", "test_tracing"),
    M("tracing/tree.py",
      "            if os.fstat(lines.fileno()).st_size > MAX_BYTES:",
      "            if False:",
      "the trace reader refuses a file larger than its cap before reading it", "test_tracing_command"),
    # --- capabilities.py: Workspace paths ----------------------------------------------------------------
    M("capabilities/workspace.py",
      "        if \"..\" in parts:",
      "        if False:",
      "Workspace: a path containing '..' is refused, saying why", "test_workspace"),
    M("capabilities/workspace.py",
      "            prefix = root.rstrip(\"/\") + \"/\"",
      "            prefix = root",
      "Workspace: a sibling folder whose name starts with the root's name is outside", "test_workspace"),
    M("capabilities/workspace.py",
      "        if plain.startswith(\"/\") or os.path.splitdrive(path)[0] or os.path.isabs(path):",
      "        if os.path.splitdrive(path)[0]:",
      "Workspace: an absolute path is refused, saying to use a relative one", "test_workspace"),
    M("capabilities/workspace.py",
      "                    if len(folders) == 1:\n                        raise _LeadsOutside(shown)",
      "                    if len(folders) == 1:\n                        continue",
      "Workspace: a symbolic link whose '..' goes above the root is refused", "test_workspace"),
    M("capabilities/workspace.py",
      "_FOLDER_FLAGS = os.O_RDONLY | _NOFOLLOW | _DIRECTORY",
      "_FOLDER_FLAGS = os.O_RDONLY | _DIRECTORY",
      "Workspace: a folder swapped for a link between the look and the open is never entered", "test_workspace"),
    M("capabilities/workspace.py",
      "_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | ",
      "_FILE_FLAGS = os.O_RDONLY | ",
      "Workspace: a file swapped for a link between the look and the open is never read", "test_workspace"),
    M("capabilities/workspace.py",
      "        if b\"\\x00\" in handle.peek(8192)[:8192]:",
      "        if False:",
      "Workspace: a binary file is refused by read_file", "test_workspace"),
    M("capabilities/workspace.py",
      "            @function_tool(needs_approval=self.write_needs_approval)",
      "            @function_tool(needs_approval=False)",
      "Workspace: write_file needs a person's approval by default", "test_workspace"),
    M("capabilities/workspace.py",
      "        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)",
      "        os.unlink(temporary, dir_fd=folder)\n"
      "        with open(name, \"wb\", opener=lambda path, flags: os.open(path, flags, dir_fd=folder)) as f:\n"
      "            f.write(data)",
      "Workspace: write_file replaces a file, never writing through a hard link", "test_workspace"),
    M("capabilities/workspace.py",
      "    regex_seconds = 2.0",
      "    regex_seconds = 5.0",
      "Workspace: a regex search stops after 2 seconds", "test_workspace"),
    # --- retry.py: runner-managed model retries -------------------------------------------------------------
    M("retry/__init__.py",
      "context.attempt > context.max_retries:",
      "context.attempt >= context.max_retries:",
      "retries: max_retries=N allows N retries after the first attempt", "test_retry"),
    M("retry/__init__.py",
      "    if context.normalized.is_abort or streamed_already:",
      "    if context.normalized.is_abort:",
      "retries: a stream that delivered an event is never retried", "test_retry"),
    M("retry/__init__.py",
      "    if (context.stateful_request or unsafe) and not approved:",
      "    if unsafe and not approved:",
      "retries: a request bound to server state is not replayed unless approved", "test_retry"),
    M("retry/__init__.py",
      "    if unsafe and context.stream:",
      "    if False:",
      "retries: a streamed request the provider marked replay-unsafe is never retried", "test_retry"),
    M("retry/__init__.py",
      "        base = min(initial * multiplier ** max(attempt - 1, 0), ceiling)",
      "        base = min(initial * multiplier ** attempt, ceiling)",
      "retries: the first retry waits initial_delay, each next one multiplier times longer", "test_retry"),
    M("retry/__init__.py",
      "            return veto or next((d for d in decisions if d.retry), RetryDecision(False))",
      "            return next((d for d in decisions if d.retry), RetryDecision(False))",
      "retries: in retry_policies.any(), a provider's veto wins", "test_retry"),
    M("retry/__init__.py",
      "    settings = as_settings(settings)\n    token = provider_retries_disabled.set(_runner_managed(settings))\n"
      "    try:\n        attempt = 1\n        while True:\n            try:\n                return call()",
      "    settings = as_settings(settings)\n    token = provider_retries_disabled.set(False)\n"
      "    try:\n        attempt = 1\n        while True:\n            try:\n                return call()",
      "retries: while the run retries a call, the adapter makes one attempt (a failure is never retried twice over)",
      "test_retry", "test_http"),
    M("retry/__init__.py",
      "    if delay is None:\n        delay = context.normalized.retry_after",
      "    if False:\n        delay = context.normalized.retry_after",
      "retries: the server's Retry-After times the wait when the policy gives none", "test_retry"),
    M("retry/__init__.py",
      "        limit = limits.exceeded(usage, requests=1) if limits is not None else None",
      "        limit = None",
      "retries: a retry is checked against the run's request_limit before it is sent", "test_retry"),
    M("retry/__init__.py",
      "        if limit is None:\n            usage.requests += 1",
      "        if limit is None:\n            usage.requests += 0",
      "retries: each retry counts one request in the run's usage, as upstream counts each attempt", "test_retry"),
    M("retry/__init__.py",
      "        stop.state = run.state",
      "        stop.state = None",
      "retries: a request_limit met by a retry stops the run with a state that resumes (an agent tool's caller too)",
      "test_retry"),

    # --- What attacks on the tool layer, streamed runs and the ledger found (each rule pinned by its test) -----
    M("validate.py",
      "        return float(value) if abs(value) <= sys.float_info.max else _fail(",
      "        return float(value) if True else _fail(",
      "a number beyond any float is the model's mistake, not an OverflowError", "test_hostile_values"),
    M("validate.py",
      "    except (ValueError, RecursionError) as exc:\n        raise unreadable(",
      "    except ValueError as exc:\n        raise unreadable(",
      "arguments nested deeper than Python walks are the model's mistake, not a RecursionError",
      "test_hostile_values"),
    M("schema.py",
      "                and _unhashable(args[0]):",
      "                and False:",
      "a set whose items cannot be hashed is refused where the tool is made", "test_hostile_values"),
    M("schema.py",
      "        if unsent:\n",
      "        if False:\n",
      "a dataclass whose __init__ needs an InitVar is refused where the tool is made", "test_hostile_values"),
    M("schema.py",
      "    json.dumps(data, allow_nan=False)\n    return data",
      "    return data",
      "enum or Literal values and defaults JSON cannot write (inf, nan) never reach a schema", "test_hostile_values"),
    M("tool.py",
      "            return clean_json([p if isinstance(p, dict) else p.content_part() for p in parts])",
      "            return [p if isinstance(p, dict) else p.content_part() for p in parts]",
      "a tool's content parts reach the session with lone surrogates repaired", "test_hostile_values"),
    M("tool.py",
      "    except Exception as error:  # an int beyond str()'s digits, a content_part() or __str__ that raises",
      "    except ZeroDivisionError as error:",
      "a tool that ran is never reported as failed for a result that cannot be shown", "test_hostile_values"),
    M("handoffs.py",
      "                if not isinstance(data, dict) or \"response\" not in data:",
      "                if False:",
      "a wrapped handoff input sent bare is told as a missing 'response' key", "test_handoffs"),
    M("schema.py",
      "    if \"$ref\" in out:  # a lone one is sent as it is",
      "    if False:  # a lone one is sent as it is",
      "a lone $ref in a hand-written strict schema must resolve where the tool is made", "test_schema"),
    M("agent_output.py",
      "    key = (output_type, repr(output_type))",
      "    key = output_type",
      "a union output type reads its arms in its own order, whatever agent was made first", "test_output_types"),
    M("agent_output.py",
      "            return validate_value(self.output_type, data, strict=self._strict)",
      "            return validate_value(self.output_type, data)",
      "a non-strict output type ignores the keys its schema let the model add", "test_output_types"),
    M("validate.py",
      "    if isinstance(value, tuple) and hasattr(value, \"_fields\"):",
      "    if False:",
      "a NamedTuple is written as the object its schema describes", "test_output_types"),
    M("turn.py",
      "    except ModelBehaviorError as e:  # InvalidFinalOutput, or what a custom schema raises",
      "    except InvalidFinalOutput as e:  # InvalidFinalOutput, or what a custom schema raises",
      "a custom output schema's ModelBehaviorError is answered by the invalid_final_output error handler",
      "test_output_types"),
    M("upstream/error_handlers.py",
      "        except TypeError as e:  # kept in the history as the model would have written it: JSON",
      "        except ZeroDivisionError as e:  # kept in the history as the model would have written it: JSON",
      "an error handler's output JSON cannot write is a UserError naming it", "test_output_types"),
    M("agent_output.py",
      "                                     f\"{preview(repr(text))}\", text) from None",
      "                                     f\"{text!r}\", text) from None",
      "an invalid final output quotes a bounded preview of the answer", "test_hostile_values"),
    M("agent_output.py",
      "            data = clean_json(STRICT_JSON.decode(text))",
      "            data = STRICT_JSON.decode(text)",
      "a structured final output's lone surrogates are repaired, as tool arguments' are", "test_hostile_values"),
    M("docstrings.py",
      "    r\"^(Args|",
      "    r\"^\\s*(Args|",
      "docstring sections are read at the docstring's own indentation, not inside an entry", "test_hostile_values"),
    M("docstrings.py",
      "\\)\\s*)?:(.*)$\")",
      "\\))?\\s*:(.*)$\")",
      "a docstring entry's long run of spaces is read in linear time, not tried at every split", "test_hostile_values"),
    M("handoffs.py",
      "            if not callable(getattr(self, name)) and not isinstance(getattr(self, name), plain):",
      "            if False:",
      "a Handoff built by hand is checked where it is made", "test_misuse"),
    M("run.py",
      "                steps.join_input_guardrails(run, None)  # racing input guardrails: a trip is raised, never lost",
      "                pass",
      "a cancel never loses the trip of a racing input guardrail", "test_cancellation"),
    M("state.py",
      "        if self.cancel_mode != \"immediate\":\n            self.cancel_mode = mode",
      "        if True:\n            self.cancel_mode = mode",
      "a milder cancel never softens an immediate one", "test_cancellation"),
    M("steps.py",
      "    write_to_session(run, items, f\"turn-{run.state.current_turn}\" if turn.claim is not None else None)\n"
      "    run.state.unsaved_session_input = []",
      "    write_to_session(run, items, f\"turn-{run.state.current_turn}\" if turn.claim is not None else None)",
      "the run's new input joins the session once, with the first turn written", "test_session_runs",
      "test_cancellation"),
    M("agent.py",
      "                with caller.abortable(nested.state.cancel):",
      "                with caller.abortable(lambda: None):",
      "a cancel reaches an agent tool's inner run", "test_cancellation"),
    M("steps.py",
      "    if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):",
      "    if not isinstance(output, list):",
      "a custom model's completed stream without output items (dicts) is a ModelBehaviorError", "test_robustness"),
    M("ledger.py",
      "    return state.run_id + \"#\"",
      "    return state.run_id",
      "a call id the model chose never meets the run's own claims in the ledger", "test_hostile_state"),
    M("ledger.py",
      "    if isinstance(entry, dict) and all(isinstance(entry.get(key), kind) for key, kind in kinds.items()):",
      "    if isinstance(entry, dict):",
      "a journal entry miniagents did not write is a SessionStoreError, not a KeyError", "test_hostile_state"),
    M("ledger.py",
      "in it leaves it to continue\n        write_journal(run, journaled(state), state.current_turn)",
      "in it leaves it to continue\n        pass",
      "a process that dies in an approved resume leaves its turn to continue", "test_hostile_state"),
    M("state.py",
      "    if depth > MAX_DEPTH:",
      "    if False:",
      "a state nested deeper than it could be saved again is refused when it loads", "test_hostile_state"),
    M("run.py",
      "    Step(refuse_finished, \"state.finished\"),\n",
      "",
      "a state whose run ended with a final output does not run again", "test_hostile_state"),
    M("models/protocol.py",
      "        skip_lf = chunk.endswith(b\"\\r\")  # (a chunk that was only that \\n leaves none to skip)\n"
      "        if not chunk:\n            continue\n",
      "        if not chunk:\n            continue\n        skip_lf = chunk.endswith(b\"\\r\")\n",
      "SSE lines are read the same however the stream is chunked (a \\r, then a lone \\n, then a blank line)",
      "test_sse_properties"),
    M("models/http.py",
      "        except (ValueError, RecursionError):  # (nested deeper than Python reads)\n"
      "            raise self._not_an_api(raw) from None",
      "        except ValueError:\n            raise self._not_an_api(raw) from None",
      "a body nested deeper than Python reads is a ModelHTTPError, not a RecursionError", "test_http_failures"),
    M("models/protocol.py",
      "    shown_type = redact(content_type, secret) or \"no Content-Type\"",
      "    shown_type = content_type or \"no Content-Type\"",
      "a Content-Type that holds the key is shown without it", "test_http_failures"),
    M("models/http.py",
      "        if (seconds is not None or name == \"timeout\") and not seconds_bound(seconds):",
      "        if seconds is not None and not seconds_bound(seconds):",
      "a model's timeout must be a wait a clock can keep (None is refused where the model is made)",
      "test_http_bounds"),
    M("sql_dialect.py",
      "        if code & 0xFF == _SQLITE_ERROR and any(corrupt in text.lower() for corrupt in _CORRUPT_TEXTS):",
      "        if False:",
      "a row that is not UTF-8 text, or a header no SQLite writes, is a SessionStoreError", "test_session_files"),
    M("models/protocol.py",
      "    return sorted(plain | {encode(s) for s in plain for encode in (lambda s: quote(s, safe=\"\"), quote, quote_plus)},",
      "    return sorted(plain | {encode(s) for s in plain for encode in ()},",
      "a secret a server echoes percent-encoded is hidden", "test_key_secrecy"),
    M("models/http.py",
      "        if any(ch in \"\\r\\n\\x00\" or ord(ch) > 255 for ch in f\"{name}{value}\"):",
      "        if False:",
      "a header that cannot be sent is a UserError naming it, never quoting its value", "test_key_secrecy"),
    M("models/protocol.py",
      "        text = decoded if any(value in decoded for value in values) else text",
      "        text = text",
      "a secret echoed as JSON escapes in a body that does not parse is hidden", "test_key_secrecy"),
    M("guardrails.py",
      "        if kind not in (\"allow\", \"reject_content\", \"raise_exception\") or (",
      "        if False and (",
      "a tool guardrail's behavior that is none of the three is a UserError naming it", "test_guardrails"),
    M("run.py",
      "        except Exception as error:  # a tripwire or a failure (a custom model's too) is raised, a cancel or not",
      "        except AgentsException as error:",
      "a racing input guardrail is joined, and its trip wins, when a custom model raises its own error",
      "test_guardrails"),
    M("run.py",
      "    Step(ledger.close_journal, \"run.ledger\"),\n    Step(leave_agent, \"run.plugins\"),",
      "    Step(leave_agent, \"run.plugins\"),\n    Step(ledger.close_journal, \"run.ledger\"),",
      "a plugin raising as the agent leaves cannot keep the session's journal open", "test_plugins"),
    M("steps.py",
      "    turn.reserved = sum(call.paused is not None and call.kind == \"function\" for call in turn.calls)  # counted when",
      "    turn.reserved = 0  # counted when",
      "an agent-tool call whose inner run paused is counted once when it goes on", "test_usage_limits"),
    M("steps.py",
      "    calls = sum(call.kind != \"handoff\" and call.paused is None for call in held)",
      "    calls = sum(call.kind != \"handoff\" for call in held)",
      "a tool-call limit does not count again a call whose inner run goes on", "test_usage_limits"),
    M("steps.py",
      "    turn.limit, turn.reserved = UsageLimitExceeded(*limit), 0  # none of them runs",
      "    turn.limit = UsageLimitExceeded(*limit)",
      "a limit reached inside an inner run that went on keeps the count true", "test_usage_limits"),
    M("agent.py",
      "    limits = limits.within(own) if limits and own else limits or own",
      "    limits = own or limits",
      "an agent tool's own usage limits keep within its caller's", "test_usage_limits"),
    M("agent.py",
      "                or isinstance(names, (list, tuple)) and all(isinstance(name, str) for name in names)):",
      "                or isinstance(behavior, dict) and \"stop_at_tool_names\" in behavior):",
      "stop_at_tool_names must be a list of names (a string would match by substring)", "test_agent"),
    M("run.py",
      "    if options.max_turns is not None and type(options.max_turns) is not int:  # nan would be no limit at all",
      "    if False:",
      "max_turns of the wrong kind is a UserError before the model is asked", "test_misuse"),
    M("run.py",
      "    if options.run_config is not None and not isinstance(options.run_config, RunConfig):",
      "    if False:",
      "a run_config that is not a RunConfig is a UserError before the model is asked", "test_misuse"),
    M("config.py",
      "        if limit is not None and (type(limit) is not int or limit < 1):",
      "        if False:",
      "a max_function_tool_concurrency that cannot be kept is refused where the config is made", "test_misuse"),
    M("agent.py",
      "        if instructions is not None and not isinstance(instructions, str):",
      "        if False:",
      "instructions a function returns must be text or None", "test_misuse"),
    M("steps.py",
      "        if call.paused is not None and call.target is None:  # its tool switched off (is_enabled) since: it goes on",
      "        if False:",
      "an agent tool switched off while its inner run waits goes on, and the history says what ran", "test_approvals"),
    M("models/http.py",
      "        err.retry_headers = {n: redact(self.headers[n], self.secret) for n in RETRY_HEADERS if n in self.headers}",
      "        err.retry_headers = {}",
      "runner-managed retries follow the server's Retry-After and x-should-retry", "test_retry"),
    M("models/http.py",
      "        err.retry_headers = {n: redact(self.headers[n], self.secret) for n in RETRY_HEADERS if n in self.headers}",
      "        err.retry_headers = {n: self.headers[n] for n in RETRY_HEADERS if n in self.headers}",
      "a secret a server echoes in a retry header is hidden there", "test_key_secrecy"),
    M("models/shapes.py",
      "    if value > sys.float_info.max:  # 10**400, or inf",
      "    if value == float('inf'):  # 10**400, or inf",
      "a usage count past any float is a malformed answer saying so", "test_chat_completions", "test_responses",
      "test_load_checks"),
    M("models/http.py",
      "        self.transport.release(self._conn)  # nothing left unread: it can serve the next request, on any thread",
      "        pass",
      "a connection that finished a request serves the next one on any thread (a thread that ended left one open)",
      "test_http"),
    M("models/http.py",
      "            if conn is not None and conn.sock is not None and len(self._conns) < MAX_IDLE_CONNECTIONS:",
      "            if conn is not None and conn.sock is not None:",
      "at most MAX_IDLE_CONNECTIONS connections stay open between requests", "test_http"),
    M("models/http.py",
      "            conn = self._conn = self._conn or t.connection()  # each attempt's, and a stale socket's retry, too",
      "            conn = self._conn = t.connection()",
      "a retried request keeps its connection (another was taken, and the first left open outside the pool)",
      "test_http"),
    M("models/http.py",
      '            if self.stream and self._content_type() == "application/json":  # an error, or `stream: true` ignored',
      "            if False:",
      "a streamed request answered with JSON says what the server said, not a stream cut short", "test_http"),
    M("models/http.py",
      '                if isinstance(err.body, dict) and (err.body.get("error") or err.body.get("object") == "error"):',
      "                if False:",
      "an error in a JSON answer to a streamed request is the server's own words", "test_http"),
    M("models/protocol.py",
      "        new.retry_headers = err.retry_headers",
      "        pass",
      "an explained error keeps the server's retry headers", "test_retry"),
    M("mcp/plugin.py",
      "        held = run.scratch.setdefault(self, [])  # the servers this drive holds (see MCPServerStdio.hold)",
      "        held = []",
      "MCP: a server a run connected is ended when the run ends, an agent met during the run's too", "test_mcp_run"),
    M("capabilities/__init__.py",
      "        if agent.capabilities and id(agent) not in prepared:",
      "        if agent.capabilities and id(agent) not in prepared and agent in run.agents[:1]:",
      "capabilities: an agent met during the run (a hand-built Handoff's) has its capabilities", "test_capabilities"),
    M("upstream/hooks.py",
      "        isinstance(entry, Handoff) and entry._agent is None for entry in agent.handoffs) for agent in agents)",
      "        False for entry in agent.handoffs) for agent in agents)",
      "upstream shell: the hooks of an agent met during the run (a hand-built Handoff's) fire", "test_hooks"),
    M("mcp/plugin.py",
      "    if isinstance(properties, dict) and properties and not (isinstance(required, list) and set(properties) <= set(",
      "    if isinstance(properties, dict) and properties and not (set(properties) <= set(",
      "a tool schema whose required is not a list is sent as given, never a crash", "test_mcp_run"),
    M("mcp/__main__.py",
      "    return \"\".join(c if c in keep or c.isprintable() else json.dumps(c)[1:-1] for c in str(text))",
      "    return str(text).encode(\"utf-8\", \"backslashreplace\").decode(\"utf-8\")",
      "the listing command prints a server's control characters (and a lone surrogate) as escapes",
      "test_mcp_docs_and_cli"),
    M("mcp/__main__.py",
      "        print(f\"\\n{shown(tool.name)} ({how}{alias})\")",
      "        print(f\"\\n{shown(tool.name, chr(10))} ({how}{alias})\")",
      "the listing command shows a newline in a tool's name as its escape", "test_mcp_docs_and_cli"),
    M("mcp/__main__.py",
      "{shown(about.get('version', ''))}",
      "{shown(about.get('version', ''), chr(10))}",
      "the listing command shows a newline in a server's version as its escape", "test_mcp_docs_and_cli"),
    M("mcp/__main__.py",
      "            print(\"    \" + shown(line))",
      "            print(\"  \" + shown(line))",
      "the listing command indents a description's lines deeper than the input's", "test_mcp_docs_and_cli"),
    M("mcp/errors.py",
      "        forms |= {secret, repr(secret)[1:-1], repr(secret.encode(\"utf-8\", \"surrogatepass\"))[2:-1], *escaped}",
      "        forms |= {secret}",
      "MCP: an env value never reaches a message in its JSON- or repr-escaped forms", "test_mcp_hostile"),
    M("mcp/errors.py",
      "repr(secret.encode(\"utf-8\", \"surrogatepass\"))[2:-1], ",
      "",
      "MCP: an env value is hidden as repr() shows its UTF-8 bytes", "test_mcp_hostile"),
    M("mcp/errors.py",
      "f.replace(\"&\", \"\\\\u0026\")",
      "f.replace(\"&\", \"&\")",
      "MCP: an env value is hidden as Go's JSON escapes it (&<> as \\u0026)", "test_mcp_hostile"),
    M("mcp/errors.py",
      "lambda e: \"\\\\u\" + e.group()[2:].upper()",
      "lambda e: e.group()",
      "MCP: an env value is hidden as Jackson escapes it (hex in upper case)", "test_mcp_hostile"),
    M("mcp/errors.py",
      "        escaped |= {json.dumps(form, ensure_ascii=only)[1:-1] for form in escaped for only in (True, False)}",
      "        pass",
      "MCP: an env value is hidden as JSON in JSON escapes it", "test_mcp_hostile"),
    M("mcp/errors.py",
      "            end = max(end, stop)\n",
      "            end = stop\n",
      "MCP: two env values that overlap in a text are hidden as one (no part of either shows)", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "        if size >= len(text) or len(shown) >= limit + margin:",
      "        if True:",
      "MCP: a preview never shows the raw end of the part it searched", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "    size = limit + margin\n",
      "    size = len(text)\n",
      "MCP: a preview searches only the start of a long text", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "    more = len(shown) - limit + max(0, len(text) - size)",
      "    more = len(shown) - limit",
      "MCP: a preview counts what it did not search", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "        while not self._write_lock.acquire(timeout=min(POLL, max(0.0, deadline - time.monotonic()))):",
      "        while not self._write_lock.acquire():",
      "MCP: a timeout never waits for the reader's answer to a ping a server does not read", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "            if waiter.cancelled:\n                raise self.error(MCPCancelledError,",
      "            if False:\n                raise self.error(MCPCancelledError,",
      "MCP: a cancel ends a call waiting to write its request", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "            while view and not waiter.cancelled:",
      "            while view:",
      "MCP: a cancel ends a call writing its request", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "            sent = not isinstance(error, (MCPTimeoutError, MCPCancelledError))",
      "            sent = not isinstance(error, MCPTimeoutError)",
      "MCP: a request cancelled before it was written is not cancelled at the server", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "        if view and (len(view) < len(data) or not stopped):",
      "        if view and not stopped:",
      "MCP: a request cancelled while written in part fails the connection", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "\"the client stopped waiting\", sent)",
      "\"the client stopped waiting\")",
      "MCP: a request never sent (the write lock's wait timed out) is not cancelled", "test_mcp_hostile"),
    M("mcp/plugin.py",
      "            if self.failure is not _UNSET or isinstance(error, Cancelled):",
      "            if self.failure is None or isinstance(error, Cancelled):",
      "MCP: a failure_error_function makes what the model is told of a failed call", "test_mcp_run"),
    M("mcp/stdio.py",
      "        shown = code if type(code) is int else self.shown(code, 40)",
      "        shown = code",
      "MCP: a JSON-RPC error code that is no int is shown cut", "test_mcp_protocol"),
    M("mcp/server.py",
      "            if sum(sizes) > MAX_LISTING_BYTES:",
      "            if False:",
      "MCP: a tools listing over its size cap in all its pages is a protocol error", "test_mcp_protocol"),
    M("mcp/server.py",
      "            if key not in self._warned and len(self._warned) < WARNED_KEPT:",
      "            if key not in self._warned:",
      "MCP: entries left out of a listing are warned about a bounded number of times", "test_mcp_protocol"),
    M("mcp/stdio.py",
      "        shown = hide(text[:size], forms)",
      "        shown = text[:size]",
      "no part of an env value reaches a message where the text is cut", "test_mcp_hostile"),
    M("mcp/server.py",
      "    if cwd is not None and not isinstance(cwd, (str, bytes, os.PathLike)):",
      "    if False:",
      "a cwd that is no path is a UserError when the server is made", "test_mcp_protocol"),
    M("mcp/stdio.py",
      "            self._fail(MCPConnectionError, self._exit(), stop=True)",
      "            pass",
      "a server that exits while a process it started holds its stdout is noticed", "test_mcp_hostile"),
    M("tracing/tree.py",
      "        elif item.get(\"type\") == \"message\" or item.get(\"role\") == \"assistant\":",
      "        elif item.get(\"type\") == \"message\" or item.get(\"role\") != \"assistant\":",
      "the trace reader shows a message that gives only its role", "test_tracing"),
    M("upstream/repl.py",
      "            print()\n            return",
      "            pass\n            return",
      "run_demo_loop ended by end of input ends its prompt line", "test_porting_names"),
    M("mcp/stdio.py",
      "                    self._fail(MCPConnectionError, self._ended(\"closed its stdin (it reads no more requests)\"))",
      "                    self._fail(MCPConnectionError, \"closed its stdin (it reads no more requests)\")",
      "a server that closes its stdin and exits is told by its exit and its last words", "test_mcp_hostile"),
    M("mcp/stdio.py",
      "                self._watcher = self._watch_orphan()",
      "                self._watcher = None",
      "a server whose program is killed is ended with its group", "test_mcp_hostile"),
    M("vendor/__init__.py",
      "    if (os.path.realpath(target) + os.sep).startswith(os.path.realpath(SOURCE) + os.sep):",
      "    if os.path.realpath(target) == os.path.realpath(SOURCE):",
      "a copy inside the package being copied is refused", "test_vendor_command"),
    M("vendor/__init__.py",
      "    if os.path.islink(there):",
      "    if False:",
      "a copy that is a symbolic link is not replaced", "test_vendor_command"),
    M("vendor/__init__.py",
      "    if not isinstance(manifest, dict):",
      "    if False:",
      "a VENDORED.json that is no object is CheckFailed, not a traceback", "test_vendor_command"),
    M("seams.py",
      "    return needs(f\"{PACKAGE}.{shell}\", f\"{what} (the shell {PACKAGE}.{shell})\" if what else f\"{PACKAGE}.{shell}\")",
      "    return importlib.import_module(f\"{PACKAGE}.{shell}\")",
      "a shell this Python cannot import (no select) escapes hasattr and import * as a bare ModuleNotFoundError",
      "test_missing_modules"),
    M("seams.py",
      "            load_shell(shell, fullname if first in SHELLS else first)",
      "            present(shell) or load_shell(shell, fullname if first in SHELLS else first)",
      "from the package import a name of a shell this Python cannot import is a bare ImportError",
      "test_missing_modules"),
    M("mcp/plugin.py",
      "binascii.crc32(name.encode('utf-8', 'surrogatepass'))",
      "__import__('zlib').crc32(name.encode('utf-8', 'surrogatepass'))",
      "the MCP shell needs zlib (a Python without it loses MCPServerStdio)", "test_missing_modules"),
    M("upstream/__init__.py",
      "    except MissingFeatureError:\n        raise\n",
      "",
      "in a copy without tracing/, `from agents import trace` is a bare ImportError", "test_runner"),
    M("upstream/__init__.py",
      "            raise AttributeError(str(missing)) from missing",
      "            raise",
      "in a copy without tracing/, hasattr(agents, 'turn_span') raises", "test_runner"),
    M("upstream/__init__.py",
      "        if upstream in NAMES:  # `from agents import turn_span`",
      "        if False:  # `from agents import turn_span`",
      "in a copy without tracing/, `from agents import turn_span` is a bare ImportError", "test_runner"),
    M("vendor/__init__.py",
      "    if _in_stdlib(parts[0]):",
      "    if False:",
      "the vendor command takes --as http, a name the standard library has", "test_vendor_command"),
    M("vendor/__init__.py",
      "    return top in sys.builtin_module_names or PathFinder.find_spec(top, folders) is not None",
      "    return False",
      "the vendor command on Python 3.9 takes --as email.miniagents", "test_vendor_command"),
    M("vendor/__init__.py",
      "    if parts[0] == \"agents\" and \"upstream\" not in without:",
      "    if False:",
      "the vendor command takes --as agents._vendor.miniagents with the upstream shell", "test_vendor_command"),
    M("vendor/__init__.py",
      "    if parts[0] == \"agents\" and \"upstream\" not in without:",
      "    if parts[0] == \"agents\":",
      "the vendor command refuses --as agents.x --without upstream", "test_vendor_command"),
    M("upstream/alias.py",
      "    if SHELL.partition(\".\")[0] == \"agents\":",
      "    if False:",
      "a copy named under agents, run by the upstream runner, recurses forever", "test_runner"),
    M("models/http.py",
      "        needs(\"unicodedata\", \"a connection to a model's server (the idna codec a host name is looked up by)\")",
      "        pass",
      "a Python without unicodedata makes every HTTP model call a bare LookupError", "test_missing_modules"),
    M("models/http.py",
      "USER_AGENT = f\"miniagents/{__version__} (python stdlib)\"",
      "USER_AGENT = \"miniagents/0.1 (python stdlib)\"",
      "the User-Agent names a version the package is not", "test_http"),
    M("seams.py",
      "`python -m {PACKAGE}.tracing`",
      "`python -m miniagents.tracing`",
      "a renamed copy's missing-tracing error tells to run python -m miniagents.tracing", "test_renamed_copy"),
    M("capabilities/workspace.py",
      "            except (re.error, RecursionError, OverflowError) as error:  # nested too deeply, a count too large",
      "            except re.error as error:",
      "a regular expression re.compile cannot build is a message to the model", "test_workspace"),
    M("ledger.py",
      "        set_aside(run)  # a resumed state, with another run's turn in flight: it journals nothing over that one",
      "        pass",
      "a resumed state never writes over the turn of a run whose process died", "test_journal_neighbours"),
    M("ledger.py",
      "    if other is None or other[\"run_id\"] == run.state.run_id:",
      "    if True:",
      "a resume that meets another run's first journal entry goes on and runs its call once",
      "test_journal_neighbours"),
    M("ledger.py",
      "    if run.state.unsaved_session_input:\n        raise UnfinishedTurnError(",
      "    if False:\n        raise UnfinishedTurnError(",
      "a run with new input that meets another run's first journal entry stops before the model is asked",
      "test_journal_neighbours"),
    M("ledger.py",
      "    as_a_crash = store_failed(run, run.failure) or not isinstance(run.failure, (Exception, type(None)))",
      "    as_a_crash = not isinstance(run.failure, (Exception, type(None)))",
      "a run the session failed after a call ran leaves its turn to continue", "test_journal_neighbours"),
    M("ledger.py",
      "        if isinstance(error, (SessionStoreError, MissingFeatureError)) or not isinstance(error, Exception):",
      "        if True:",
      "whatever a session's store raises in a run is a SessionStoreError: an agent tool's inner run stops its caller",
      "test_store_failures"),
    M("ledger.py",
      "(SessionStoreError, MissingFeatureError)) or not",
      "(SessionStoreError, MissingFeatureError, UserError)) or not",
      "a custom session's UserError in an agent tool's inner run stops the run, never told to the model",
      "test_store_failures"),
    M("ledger.py",
      "        run.scratch[stored] = True  # (an async write) did its part is unknown, so the turn stays journaled too",
      "        pass",
      "a cancel while an async store writes the turn leaves the turn journaled", "test_store_failures"),
    M("ledger.py",
      "    except BaseException as error:\n        run.scratch[stored] = True",
      "    except Exception as error:\n        run.scratch[stored] = True",
      "Ctrl-C while the turn is written leaves the turn journaled", "test_store_failures"),
    M("state.py",
      "    except (TypeError, ValueError) as error:  # an input item, or an item a custom model or tool gave, holds a",
      "    except ValueError as error:  # an input item, or an item a custom model or tool gave, holds a",
      "an input item the journal cannot hold is a UserError before the model is asked", "test_store_failures"),
    M("state.py",
      "json.dumps(document, allow_nan=False))  # its own",
      "json.dumps(document))  # its own",
      "a custom model's item the journal cannot hold (inf) is a UserError before any call runs",
      "test_store_failures", "test_run_state"),
    M("ledger.py",
      "    except BaseException as error:\n        run.scratch[stored] = True",
      "    except BaseException as error:\n        pass",
      "a claim that fails while a sibling call raises leaves the turn journaled: the claimed call never ran",
      "test_store_failures"),
    M("steps.py",
      "        ledger.stored(run, run.session.add_items, items, once=",
      "        caller.call(run.session.add_items, items, once=",
      "a turn's write refused with the driver's own error leaves the turn journaled: a continue charges once",
      "test_store_failures"),
    M("ledger.py",
      "else stored(run, run.ledger.claim_call, run.state.run_id,",
      "else caller.call(run.ledger.claim_call, run.state.run_id,",
      "a claim that fails before its call starts never says the call may have happened", "test_store_failures"),
    M("run.py",
      "    if not ledger.store_failed(run, error):",
      "    if True:",
      "a run whose store failed writes nothing more of its turn: it stays journaled", "test_store_failures"),
    M("ledger.py",
      "    except UserError as error:  # not a state this agent can continue (corrupt, or another agent's)",
      "    except ZeroDivisionError as error:",
      "a journaled turn this agent cannot continue is a SessionStoreError saying how to go on",
      "test_journal_neighbours"),
    M("run.py",
      "    settings = SessionSettings.coerce(run.config.session_settings)  # settings, or a dict as upstream takes them",
      "    settings = run.config.session_settings or SessionSettings()",
      "RunConfig session settings given as a dict are read, junk refused", "test_session_runs"),
    M("run.py",
      "        check_takes_turns(session)",
      "        pass",
      "limit_turns with a session whose get_items cannot take it is a UserError", "test_session_runs"),
    M("dbapi/__init__.py",
      "        if \"can only be used in that same thread\" in str(exc):  # sqlite3's ProgrammingError, by its text",
      "        if False:",
      "a sqlite3 connection only its own thread may use is a SessionStoreError saying what to pass",
      "test_session_dbapi"),
    M("dbapi/__init__.py",
      "                self._probe_style(paramstyle)",
      "                pass",
      "a placeholder style the driver refuses is a UserError when the session is made", "test_session_dbapi"),
    M("errors.py",
      "    if b\"\\0\" in encoded:",
      "    if False:",
      "a path holding a NUL character is a typed error where it is given (a session, a recording, a trace)",
      "test_session_files", "test_format", "test_tracing"),
    M("errors.py",
      "    except UnicodeEncodeError:",
      "    except ZeroDivisionError:",
      "a path holding a lone surrogate is a typed error where it is given, not a bare UnicodeEncodeError",
      "test_session_files"),
    M("errors.py",
      "        encoded = os.fsencode(name)",
      "        encoded = name.encode() if isinstance(name, str) else name",
      "a path of bytes that are no UTF-8, as os.fsdecode makes it a str (surrogate escapes), still works",
      "test_session_files"),
    M("recording/replay.py",
      "        at += len(piece)",
      "        at += 0",
      "a recorded text's pieces between [REDACTED] markers are found one after another", "test_secrecy"),
    M("recording/redaction.py",
      "    spans = [match.span(1) for match in URL_PASSWORD.finditer(text)] if \"://\" in text and \"@\" in text else []",
      "    spans = []",
      "a URL's password is not recorded, streamed across deltas too", "test_secrecy"),
    M("recording/redaction.py",
      "    return _scrubbed(value, searched(secrets))",
      "    found = searched(secrets)\n    return _scrubbed(value, found) if found else value",
      "a URL's password is not recorded when no other secret is known", "test_secrecy"),
    M("recording/redaction.py",
      r'''r"(?i)(?<![a-z0-9+.-])[a-z]''',
      r'''r"(?i)\b[a-z]''',
      "a URL's password right after a letter or _ is not recorded (no scheme character before the scheme, not \\b)",
      "test_secrecy"),
    M("recording/redaction.py",
      r'''://[^/?#\s:\"'<>]*:(''',
      r'''://[^/?#\s:@\"'<>]*:(''',
      "a URL's password after a user that holds @ (admin@srv) is not recorded", "test_secrecy"),
    M("recording/redaction.py",
      r'''://[^/?#\s:''',
      r'''://[^/\s:''',
      "a query's 10:00&ann@example.com is no URL password: it is recorded as it is", "test_secrecy"),
    M("recording/recorder.py",
      "                   + redaction.url_passwords([request, response]))",
      "                   )",
      "the password a URL reveals is kept out of the rest of a recorded call by value (a tool call's arguments)",
      "test_secrecy"),
    M("recording/redaction.py",
      "        for form in dict.fromkeys((text, unquote(text), ESCAPED_SLASH.sub(\"/\", text))):",
      "        for form in dict.fromkeys((text, ESCAPED_SLASH.sub(\"/\", text))):",
      "the password of a percent-encoded URL (a query's dsn=postgres%3A%2F%2F...) is not recorded", "test_secrecy"),
    M("recording/redaction.py",
      "        for form in dict.fromkeys((text, unquote(text), ESCAPED_SLASH.sub(\"/\", text))):",
      "        for form in dict.fromkeys((text, unquote(text))):",
      "the password of a URL behind JSON's \\/ in text no JSON parser reads is not recorded", "test_secrecy"),
    M("recording/redaction.py",
      "for read in (str, unquote))",
      "for read in (str,))",
      "a URL's password is also searched for as it means (p%40ss is p@ss), where the model repeats it",
      "test_secrecy"),
    M("recording/redaction.py",
      "    return [found for name, value in os.environ.items() if is_secret_variable(name)",
      "    return [found for name, value in os.environ.items() if is_credential_name(name)",
      "a password variable the adapters' rule does not name (PGPASSWORD, GITHUB_PAT) is not recorded", "test_secrecy"),
    M("recording/redaction.py",
      "from ..models.protocol import is_credential_name, is_secret_variable, secret_values",
      "from ..models.protocol import is_secret_variable, secret_values\nis_credential_name = lambda name: \"key\" in name.lower()",
      "the recording names credentials by the adapters' rule (sig, code, session)", "test_secrecy"),
    M("recording/redaction.py",
      "    return secret_values([s for s in found if isinstance(s, str) and len(s) >= SHORTEST_SECRET])",
      "    return sorted({s for s in found if isinstance(s, str) and len(s) >= SHORTEST_SECRET}, key=len, reverse=True)",
      "a secret is also searched for percent-encoded in what is recorded", "test_secrecy"),
    M("recording/redaction.py",
      "        return {change(key): map_strings(inner, change) for key, inner in value.items()}",
      "        return {key: map_strings(inner, change) for key, inner in value.items()}",
      "the recording's redact= hook reaches object keys", "test_secrecy"),
    M("recording/redaction.py",
      "        return in_json_text(self.text(text), self.text)",
      "        return self.text(text)",
      "the recording's redact= hook reaches text behind JSON escapes", "test_secrecy"),
    M("recording/redaction.py",
      "        request_secrets(transport.headers, transport.query))",
      "        ())",
      "an adapter's credential-named default header is kept out of a recording by value", "test_secrecy"),
    M("recording/redaction.py",
      "    return {**part, \"logprobs\": []} if \"logprobs\" in part else part",
      "    return part",
      "a recorded part or delta a secret was cut out of loses its logprobs", "test_secrecy"),
    M("recording/recorder.py",
      "        except BaseException as error:  # a full disk, or an interrupt (Ctrl-C) part-way",
      "        except OSError as error:  # a full disk, or an interrupt (Ctrl-C) part-way",
      "a write an interrupt stops part-way is cut back like a full disk's", "test_recorder"),
    M("recording/recorder.py",
      "redaction.model_secrets(model) + hidden",
      "redaction.model_secrets(model)",
      "a credential the settings hide by name is kept out of the rest of a recorded call by value", "test_secrecy"),
    M("tracing/redaction.py",
      "            if named and credential_name(name):",
      "            if False:",
      "a credential-named value, at any depth, never reaches a trace", "test_tracing", "test_tracing_runs"),
    M("tracing/redaction.py",
      "            if named and credential_name(name):",
      "            if credential_name(name):",
      "tracing: a name that sounds like a credential (code, token, session_id) is data outside configuration",
      "test_tracing"),
    M("tracing/redaction.py",
      "    if secrets is None or len(texts) < 2:",
      "    if True:",
      "tracing: a secret split across a message's text parts never reaches a trace", "test_tracing"),
    M("tracing/redaction.py",
      "        return {**shown, \"logprobs\": []} if \"logprobs\" in shown and changed else shown",
      "        return shown",
      "tracing: the logprobs of a part a secret was cut out of never spell it in a trace", "test_tracing"),
    M("tracing/redaction.py",
      "            \"\\\\\\\\\" in text or text.count('\"text\":') > 1 or secrets.search(text))):",
      "            \"\\\\\\\\\" in text or text.count('\"text\":') > 1)):",
      "tracing: a list whose JSON text holds a secret is walked, never read back as it is", "test_tracing"),
    M("tracing/redaction.py",
      "    if any(key in text for key in CONFIGURED) or any(probe.search(folded) for probe in MAY_CHANGE) or (",
      "    if any(key in text for key in CONFIGURED) or (",
      "tracing: a list whose JSON text holds an authorization value or a query is walked, never read back as it is",
      "test_tracing"),
    M("models/protocol.py",
      "    return bool((is_credential_name(name) or SECRET_VARIABLE.search(name)) and not WHERE_VARIABLE.search(name))",
      "    return bool(is_credential_name(name) and not WHERE_VARIABLE.search(name))",
      "tracing: a password variable the adapters' rule does not name (PGPASSWORD, DB_PASS, GITHUB_PAT) never reaches "
      "a trace", "test_tracing"),
    M("models/protocol.py",
      "    return bool((is_credential_name(name) or SECRET_VARIABLE.search(name)) and not WHERE_VARIABLE.search(name))",
      "    return bool(is_credential_name(name) or SECRET_VARIABLE.search(name))",
      "tracing: a variable that names where a secret is (PGPASSFILE, SSH_AUTH_SOCK) is no secret", "test_tracing"),
    M("tracing/redaction.py",
      "    values += [json.dumps(value, ensure_ascii=escaped)[1:-1] for value in values for escaped in (False, True)]",
      "    values += [json.dumps(value, ensure_ascii=escaped)[1:-1] for value in values for escaped in (False,)]",
      "tracing: a secret echoed as json.dumps writes it by default (outside the BMP: two escapes) never reaches a "
      "trace", "test_tracing"),
    M("recording/redaction.py",
      "    return list(dict.fromkeys(found))[:MOST_URL_PASSWORDS]",
      "    return list(dict.fromkeys(found))",
      "recording: only the first URL passwords of a call are searched for by value (a page of thousands)",
      "test_secrecy"),
    M("tracing/redaction.py",
      r'''r":(?:\\*/){2}[^/\s@]*@",''',
      r'''r"://[^/\s@]*@", r":(?:\\+/){2}[^/\s@]*@",''',
      "tracing: a URL's password whose slashes JSON escaped in a mix (:\\//) never reaches a trace by the shortcut",
      "test_tracing"),
    M("tracing/redaction.py",
      "        text = USERINFO.sub(rf\"\\1{MASK}@\", slashed) if USERINFO.search(slashed) else text",
      "        pass",
      "tracing: a URL's password never reaches a trace", "test_tracing"),
    M("tracing/redaction.py",
      r'''r"(?i)((?<![a-z0-9+.-])[a-z]''',
      r'''r"(?i)(\b[a-z]''',
      "tracing: a URL's password right after a letter or _ never reaches a trace (no scheme character before it)",
      "test_tracing"),
    M("tracing/redaction.py",
      r'''://[^/?#\s:\"'<>]*:)''',
      r'''://[^/?#\s:@\"'<>]*:)''',
      "tracing: a URL's password after a user that holds @ (admin@srv) never reaches a trace", "test_tracing"),
    M("tracing/redaction.py",
      r'''://[^/?#\s:''',
      r'''://[^/\s:''',
      "tracing: a query's 10:00&ann@example.com is no URL password: it reaches a trace as it is", "test_tracing"),
    M("tracing/redaction.py",
      "    if \"@\" in text and (\"://\" in text or \":\\\\/\" in text):",
      "    if \"@\" in text and (\"://\" in text):",
      "tracing: a URL's password in JSON text that escapes its slashes never reaches a trace", "test_tracing"),
    M("tracing/processors.py",
      "            line = self._dumps({\"event\": event, **redacted(unwritable(record, error), known_secrets())}) + \"\\n\"",
      "            raise",
      "tracing: a span whose data no JSON holds keeps its line, saying so", "test_tracing"),
    M("tracing/redaction.py",
      "    if names != seen[0]:  # one tuple replaced whole: safe across threads",
      "    if seen[0] is None:",
      "tracing: a token a tool exports during a trace is hidden from the next record on",
      "test_tracing"),
    M("tracing/redaction.py",
      "    if isinstance(value, Mapping):",
      "    if isinstance(value, dict):",
      "tracing: a credential-named value of a MappingProxyType or UserDict in metadata never reaches a trace",
      "test_tracing"),
    M("tracing/redaction.py",
      "    if dataclasses.is_dataclass(value) and not isinstance(value, (type, Mapping, list, tuple)):  # as json reads it",
      "    if False:",
      "tracing: a credential-named field of a dataclass in metadata never reaches a trace", "test_tracing"),
    M("tracing/redaction.py",
      "        text = AUTHORIZATION.sub(lambda m: f\"{m.group(1) or m.group(2)} {MASK}\", text)",
      "        pass",
      "tracing: a Basic, Token or Digest authorization value never reaches a trace", "test_tracing"),
    M("tracing/redaction.py",
      "            decoded = ESCAPED_SLASH.sub(\"/\", JSON_ESCAPE.sub(",
      "            decoded = (JSON_ESCAPE.sub(",
      "tracing: a secret in JSON text that escapes its slashes never reaches a trace", "test_tracing"),
    M("tracing/create.py",
      "    return redacted({k: v for k, v in dict(raw).items() if k not in _UNTRACED_SETTINGS and v is not None}, "
      "named=True)",
      "    return {k: v for k, v in dict(raw).items() if k not in _UNTRACED_SETTINGS and v is not None}",
      "a credential-named model setting never reaches a processor of your own", "test_tracing"),
    M("retry/__init__.py",
      "        delay = bounded(delay)",
      "        delay = delay",
      "a wait asked for is a number from 0 to the adapters' longest Retry-After", "test_retry"),
    M("context.py",
      "    if unknown:\n        raise UserError(f\"{where} has no field",
      "    if False:\n        raise UserError(f\"{where} has no field",
      "a dict of settings (retry, model settings, usage limits) with a key they lack is a UserError naming it",
      "test_retry", "test_misuse"),
    M("config.py",
      "from_fields(UsageLimits, self.usage_limits, \"RunConfig.usage_limits\")",
      "UsageLimits(**self.usage_limits)",
      "RunConfig's usage_limits as a dict with a key UsageLimits lacks is a UserError naming it and the fields",
      "test_misuse"),
    M("retry/__init__.py",
      "        if self.jitter is not None and not isinstance(self.jitter, bool):",
      "        if False:",
      "a retry backoff's jitter that is no bool is a UserError (\"no\" was jitter on)", "test_retry"),
    M("retry/__init__.py",
      "    if not isinstance(advice, (ModelRetryAdvice, type(None))):",
      "    if False:",
      "a model's retry advice that is no ModelRetryAdvice is a UserError naming its type", "test_retry"),
    M("retry/__init__.py",
      "    advice = caller.call(ask, request) if callable(ask)",
      "    advice = ask(request) if callable(ask)",
      "an async get_retry_advice is awaited, as an async policy is", "test_retry"),
    M("recording/format.py",
      "    if not stat.S_ISREG(os.fstat(fd).st_mode):",
      "    if False:",
      "a FIFO, a device or a directory is refused as a recording", "test_format"),
    M("recording/format.py",
      "        if unended:  # a write that stopped part-way (a full disk, a killed process)",
      "        if False:",
      "a recording whose last line was cut off part-way is named truncated at that line", "test_format"),
    M("recording/format.py",
      "    if len(raw) > MAX_LINE_BYTES:",
      "    if False:",
      "a recording's line over the line cap is refused before it is decoded", "test_format"),
    M("recording/format.py",
      "found {preview(repr(line.get('n')))}",
      "found {line.get('n')!r}",
      "a hostile call number in a recording is shown shortened in the load error", "test_format"),
    M("recording/format.py",
      "    if depth(line) > MAX_DEPTH:\n        raise ValueError",
      "    if False:\n        raise ValueError",
      "a call nested past the replay's bound is a RecordingError when it is recorded", "test_recorder"),
    M("recording/format.py",
      "parse_constant=_not_a_number, parse_float=_finite)",
      "parse_constant=_not_a_number)",
      "a recording holding a number past the largest float (1e400: inf) is refused at load", "test_load_checks"),
    M("recording/format.py",
      "_not_a_number(preview(number))",
      "_not_a_number(number)",
      "a recording's refused number is quoted cut short (a line may hold 64 MiB of digits)", "test_load_checks"),
    M("tracing/tree.py",
      "        if kind == \"trace.span\" and not well_formed(record):",
      "        if False:",
      "the tree reader skips a span of shapes it cannot read", "test_tracing"),
    M("retry/__init__.py",
      "    if cancelled.wait(decision.delay or 0.0):",
      "    if cancelled.wait(decision.delay or 0.0) and False:",
      "a cancel during a retry's wait stops the retry", "test_retry"),
    M("models/chat_stream.py",
      "            if slot is not None and cid and slot[\"id\"] not in (None, cid) and (\n"
      "                    not slot[\"made_up\"] or name not in (\"\", slot[\"name\"])):",
      "            if slot is not None and cid and slot[\"id\"] not in (None, cid) and (\n                    True):",
      "a call whose id comes after its name is one call, not two (its tool runs once)", "test_chat_completions"),
    M("models/chat_stream.py",
      "        if slot is not None and index not in (None, slot[\"index\"]):",
      "        if False:",
      "two streamed calls with one id at two indexes stay two calls", "test_chat_completions"),
    M("models/chat_stream.py",
      "            slot = self._by_index.get(index)",
      "            slot = next((s for s in reversed(self.calls) if s[\"index\"] == index), None)",
      "streamed call fragments find their call in constant time, not by scanning", "test_sse_properties"),
    M("models/chat_stream.py",
      "raise ModelBehaviorError(f\"The model streamed a tool call without a function name (call {n}).\")",
      "raise ModelBehaviorError(f\"The model streamed a tool call without a function name (call {slot['id'] or n}).\")",
      "a streamed call without a name is named by its place, never by the server's id", "test_chat_completions"),
    M("models/chat_stream.py",
      "            if reasoning_of(delta):\n                events += self._reasoning(reasoning_of(delta))",
      "            for key in (\"reasoning_content\", \"reasoning\"):\n"
      "                if reasoning_of({key: delta.get(key)}):\n"
      "                    events += self._reasoning(delta[key])",
      "reasoning sent under both keys is streamed once", "test_chat_completions"),
    M("models/chat_stream.py",
      "    if finish_reason == \"error\":",
      "    if finish_reason == \"errors\":",
      "finish_reason 'error' is a failed generation, not an answer", "test_chat_completions"),
    M("models/responses.py",
      "    response = check_final(dict(shapes.obj(response, \"response.completed.response\")), exchange)",
      "    response = dict(shapes.obj(response, \"response.completed.response\"))",
      "a completed event whose response did not complete raises as a plain answer does", "test_responses"),
    M("models/responses.py",
      "_acted_on(there) != _acted_on(item):",
      "_acted_on(there) != _acted_on(there):",
      "a completed output that contradicts the items streamed is refused", "test_responses"),
    M("models/chat_stream.py",
      "                             for item in items], items), key=lambda pair: pair[0])",
      "                             for item in items], items), key=lambda pair: 0)",
      "a chat stream's completed output is in the order its items opened", "test_sse_properties"),
    M("models/endpoint.py",
      "                    event = {**event, \"item\": self._cleaned(sent, [event[\"item\"]])[0]}",
      "                    event = {**event, \"item\": event[\"item\"]}",
      "a streamed answer in a code fence is unwrapped in each item event as in the result", "test_llama_server"),
    M("models/endpoint.py",
      "                answer.usage.add(spent)\n",
      "",
      "the usage of an answer set aside for a resend is added to the plain answer returned", "test_llama_server"),
    M("models/endpoint.py",
      "                    if spent.requests:  #",
      "                    if False:  #",
      "the usage of an answer set aside for a resend is added to the streamed answer's completed event",
      "test_llama_server"),
    M("models/endpoint.py",
      "switched + [part for part in checked if shown[part] is False]",
      "switched + checked",
      "a part an answer shows neither ignored nor taken (a turn of calls) is not remembered as taken",
      "test_llama_server"),
    M("upstream/providers.py",
      "        key = (model_name, env(\"OPENAI_DEFAULT_MODEL\"), base_url, responses, api_key_of(self._api_key))  # a key",
      "        key = (model_name, env(\"OPENAI_DEFAULT_MODEL\"), base_url, responses)  # a key",
      "a key set after a run is the next run's, as upstream reads it per run", "test_porting_models"),
    M("tracing/provider.py",
      "atexit.register(_shut_down)",
      "pass",
      "what a batch of traces still holds at exit is exported", "test_porting_differences"),
    M("upstream/runner.py",
      "    if run_config is not None and not isinstance(run_config, KernelRunConfig):",
      "    if False:",
      "a run_config of the wrong kind is a UserError in the shell too", "test_porting_differences"),
    M("run.py",
      "    if not all(callable(getattr(session, method, None)) for method in (\"get_items\", \"add_items\")):",
      "    if False:",
      "a session that is no session is a UserError before the model is asked", "test_misuse"),
    M("context.py",
      "        if not isinstance(getattr(item, \"tool_name\", None), str) or not isinstance(getattr(item, \"call_id\", None), str):",
      "        if False:",
      "approving or rejecting what is no interruption is a UserError", "test_misuse"),
    M("models/chat_stream.py",
      "                    not slot[\"made_up\"] or name not in (\"\", slot[\"name\"])):",
      "                    not slot[\"made_up\"]):",
      "a call before its id and a call of another name with an id at one index stay two calls",
      "test_chat_completions"),
    M("models/chat_stream.py",
      "            slot[\"id\"], slot[\"made_up\"] = slot[\"id\"] or cid, False  # events named it): the server's finds the call",
      "            slot[\"id\"], slot[\"made_up\"] = cid, False  # events named it): the server's finds the call",
      "the id a streamed call's events named first is its id throughout", "test_chat_completions"),
    M("models/responses.py",
      "    return isinstance(value, int) and not isinstance(value, bool)",
      "    return isinstance(value, int)",
      "an output_index that is a bool is no index", "test_responses"),
    M("models/responses.py",
      "                elif key in collected:",
      "                elif False:",
      "two items streamed at one output index are refused", "test_responses"),
    M("models/responses.py",
      "            calls.get(item.get(\"call_id\"), item) if item[\"type\"] == \"function_call\" else item",
      "            item",
      "a call streamed with no index is paired with the completed one by its call id", "test_responses"),
    M("models/responses.py",
      "    if not output and response.get(\"status\") != \"completed\":",
      "    if False:",
      "an empty completed response is refused, streamed as it is plain", "test_responses"),
    M("models/responses.py",
      "        if ended is not None and ended.startswith(streamed):  # a tail held back (llama.cpp's stop words, tags)\n"
      "            continue\n",
      "        if True:\n"
      "            continue\n",
      "streamed deltas that disagree with the completed response are refused", "test_responses_deltas"),
    M("tool.py",
      "              SessionStoreError, AlreadyResumedError, UnfinishedTurnError)",
      "              AlreadyResumedError, UnfinishedTurnError)",
      "a session failure inside an agent tool stops the run, never a tool error", "test_journal_neighbours"),
    M("run.py",
      "        if run.state.running is not None:",
      "        if False:",
      "a cancelled stream still stopping cannot be resumed", "test_cancellation"),
    M("run.py",
      "TAKEN = \"run.shared run.streamed\"",
      "TAKEN = \"run.streamed\"",
      "a paused state given to a second run while the first still runs is refused (its approved call runs once)",
      "test_exactly_once"),
    M("run.py",
      "    if run.state.running is run:\n        run.state.running = None",
      "    if run.state.running is run:\n        pass",
      "a state is free again once the run that took it ended", "test_exactly_once"),
    M("run.py",
      "            release(run)\n            raise",
      "            raise",
      "a state a refused start took is free again", "test_exactly_once"),
    M("run.py",
      "    with run.around(run):  # nothing, or the plugins' `run` seam and a taken state's release (`held`)\n"
      "        state, aborts = run.state, caller.CANCEL_CALLBACKS.set(run.state.aborts)",
      "    state, aborts = run.state, caller.CANCEL_CALLBACKS.set(run.state.aborts)\n"
      "    with run.around(run):  # nothing, or the plugins' `run` seam and a taken state's release (`held`)",
      "a run seam that raises as it is entered leaves no cancel callbacks registered", "test_exactly_once"),
    M("run.py",
      "            yield\n    finally:\n        release(run)",
      "            yield\n    finally:\n        pass",
      "a state is free again whatever ends its run (a run seam raising as it is entered, a journal not closed)",
      "test_exactly_once"),
    M("run.py",
      "    run.shared = True\n    return state",
      "    run.shared = bool(state.model_responses)\n    return state",
      "a state with no response yet (a limit stopped it before the model was asked, or made by hand) is refused to a "
      "second run while the first goes on", "test_exactly_once"),
    M("run.py",
      "        result._release = weakref.finalize(result, release, run)",
      "        pass",
      "a streamed result dropped unread leaves its state free", "test_exactly_once"),
    M("result.py",
      "        if not started:  # its events will never be read: the run never starts, and its state is free now\n            self._release()\n",
      "        if not started:  # its events will never be read: the run never starts, and its state is free now\n",
      "a streamed run cancelled before its events were read leaves its state free at once", "test_exactly_once"),
    M("run.py",
      "    if run.emit is not None and run.state.cancel_mode != \"immediate\" and not turn.announced:",
      "    if run.emit is not None and run.state.cancel_mode is None and not turn.announced:",
      "a streamed turn that fails after its reader cancelled after the turn still tells its outputs",
      "test_exactly_once"),
    M("run.py",
      "            run.state.transcript.append(output)\n        announce_kept(run, turn)",
      "            run.state.transcript.append(output)\n        pass",
      "a streamed turn whose handoff fails, with no session, tells its reader the outputs the state keeps",
      "test_exactly_once"),
    M("steps.py",
      "    turn.announced = True\n",
      "",
      "a streamed turn's outputs are told once, when a failure after they were told keeps them", "test_exactly_once"),
    M("recording/recorder.py",
      "        if isinstance(response, ModelResponse):  # anything else is left for the run to refuse, unrecorded",
      "        if True:",
      "a recorded custom model's return that is no ModelResponse is the run's UserError", "test_recorder"),
    M("recording/recorder.py",
      "        if any(isinstance(event, dict) and event.get(\"type\") == \"response.completed\" for event in events):",
      "        if True:",
      "a recorded stream that ended without response.completed leaves no line and the run's own error",
      "test_recorder"),
    M("recording/recorder.py",
      "                data = format.encode_call(",
      "                data = format.encode(",
      "a recorded call whose response a replay would refuse is a RecordingError when it is recorded",
      "test_recorder"),
    M("recording/recorder.py",
      "                self._file.truncate(self._end)",
      "                pass",
      "a recording's write that fails part-way is cut back to the last whole line", "test_recorder"),
    M("recording/recorder.py",
      "            self._write(data)\n            self.count = number",
      "            self.count = number\n            self._write(data)",
      "a recorded call whose write failed uses up no call number", "test_recorder"),
    M("recording/recorder.py",
      "        if not callable(getattr(model, \"get_response\", None)):  # the rule RunConfig(model=...) keeps",
      "        if False:",
      "Recorder.wrap() of a model name or None is a UserError naming it", "test_recorder"),
    M("recording/recorder.py",
      "                if self._end + len(data) > format.MAX_BYTES:",
      "                if False:",
      "a recording that would grow past what a replay reads is a RecordingError when recorded", "test_recorder"),
    M("upstream/runner.py",
      "        if isinstance(response, ModelResponse):  # anything else is left for the kernel to refuse",
      "        if True:",
      "upstream's omitted reasoning ids leave a return that is no ModelResponse to the kernel's UserError",
      "test_runner"),
    M("ledger.py",
      "        run.journal, run.scratch[set_aside] = \"\", False",
      "        pass",
      "a resumed state that went on unjournaled journals its next turn once the other turn is gone",
      "test_journal_neighbours"),
    M("dbapi/__init__.py",
      "before, page = rows[-1][0], min(page * 2, 4096)",
      "before, page = rows[-1][0], min(page * 3, 4096)",
      "a DB-API session's history pages grow other than twofold from 64 rows to 4096", "test_session_dbapi"),
    M("models/bounded.py",
      "            self._file.close()",
      "            pass",
      "closing a paced response leaves its socket open until the collector finds it", "test_http_bounds"),
    M("vendor/__init__.py",
      "\"a scripted tool run, an approval resumed from JSON and a SQLiteSession turn work\"",
      "\"\"",
      "the vendor check's line leaves out the steps it ran with sqlite3", "test_vendor_command"),
    M("vendor/__init__.py",
      "\"a scripted tool run and an approval resumed from JSON work\"",
      "\"a scripted tool run, an approval resumed from JSON and a SQLiteSession turn work\"",
      "the vendor check's line claims a session turn a Python without sqlite3 skipped", "test_vendor_command"),
    # --- What an attack on tool schemas and validation found (each rule pinned by its test) -------------------
    M("schema.py",
      "        if p.kind == p.KEYWORD_ONLY and p.name in bound:\n            continue\n",
      "",
      "a keyword a functools.partial binds (an API key) is neither sent to the model nor replaced by it",
      "test_hostile_values"),
    M("schema.py",
      "        func, keywords = func.func, keywords | frozenset(func.keywords)",
      "        func, keywords = func.func, frozenset(func.keywords)",
      "the keywords every partial of a nested partial binds are left out of the schema", "test_hostile_values"),
    M("schema.py",
      "            func.keywords) | _filled_first(func.func)",
      "            ) | _filled_first(func.func)",
      "a **kwargs key named as a keyword a partial binds is refused (it would replace the bound value)",
      "test_hostile_values"),
    M("schema.py",
      "    if strict.get(\"type\") != \"object\":",
      "    if False:",
      "a strict schema whose root is no object (a RootModel output type) is refused where it is made",
      "test_hostile_values"),
    M("schema.py",
      "    if \"object\" in kinds and not isinstance(out.get(\"properties\"), dict):",
      "    if False:",
      "a strict object without properties is refused, not closed silently (an MCP tool's is sent as given)",
      "test_hostile_values", "test_mcp_run"),
    M("schema.py",
      "    if \"array\" in kinds and not (isinstance(out.get(\"items\"), dict) or out.get(\"prefixItems\")):",
      "    if False:",
      "a strict array without items (tuple[()]) is refused where the tool is made", "test_hostile_values"),
    M("schema.py",
      "    if kind is None and not {\"anyOf\", \"$ref\", \"enum\", \"const\"} & out.keys():",
      "    if False:",
      "a strict schema without a type is refused where the tool is made", "test_hostile_values"),
    M("schema.py",
      "        if untaken and all(p.kind != p.VAR_KEYWORD for p in params):",
      "        if False:",
      "a dataclass whose own __init__ takes not every field is refused where it is made", "test_hostile_values"),
    M("schema.py",
      "        untaken = [n for n in names if n not in {p.name for p in params if p.kind in KEYWORDS}]",
      "        untaken = [n for n in names if n not in {p.name for p in params}]",
      "an __init__ taking a field only by position or as *args is refused too; one with **kwargs takes them all",
      "test_hostile_values"),
    M("schema.py",
      "            name = base = re.sub(r\"[^A-Za-z0-9_.-]\", \"_\", cls.__name__)",
      "            name = base = cls.__name__",
      "a class named \"orders/row\" is defined under a JSON Pointer token its $ref names", "test_hostile_values"),
    M("schema.py",
      "builder.guarded(builder.prop, ",
      "builder.prop(",
      "a tool parameter's chain of dataclasses deeper than Python recurses is a UserError, not a RecursionError",
      "test_hostile_values"),
    M("schema.py",
      "builder.guarded(builder.schema, tp)",
      "builder.schema(tp)",
      "an output type's chain of dataclasses deeper than Python recurses is a UserError, not a RecursionError",
      "test_hostile_values"),
    M("validate.py",
      "INT_KEY = \"^(0|-?[1-9][0-9]*)$\"",
      "INT_KEY = \"^-?[0-9]+$\"",
      "a dict[int, T] key has one text: \"01\" or \"-0\" never silently replaces another key's value",
      "test_hostile_values"),
    M("schema.py",
      "            if not values:\n",
      "            if False:\n",
      "an enum without members is refused where the tool is made", "test_hostile_values"),
    M("agent_output.py",
      "            if not isinstance(text, str):  # (None, bytes",
      "            if False:  # (None, bytes",
      "a final output that is no text is an InvalidFinalOutput, not a bare TypeError", "test_hostile_values"),
]


# ----------------------------------------------------------------------------- applying a mutant


def generated_mutants(root: str = ROOT) -> List[Mutant]:
    """Every generated mutant, with the test files to run first (see mutation_generate.py)."""
    test_files = all_test_files(root)
    first = {f: mutation_generate.tests_for(f, test_files, root) for f in mutation_generate.module_files(root)}
    return [Mutant(e.file, e.old, e.new, e.id, first[e.file], e.start, e.line)
            for e in mutation_generate.generate(root)]


def load_equivalent(path: str = EQUIVALENT_FILE) -> Dict[str, str]:
    """{generated mutant id: why it cannot change behaviour}, from `<id> | <reason>` lines (# comments)."""
    found: Dict[str, str] = {}
    if not os.path.exists(path):
        return found
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            mutant_id, sep, reason = line.rpartition(" | ")
            if not sep or not mutant_id.strip() or not reason.strip():
                raise ValueError(f"{path}:{number}: want `<mutant id> | <reason>`, got {line!r}")
            found[mutant_id.strip()] = reason.strip()
    return found


def mutate(text: str, mutant: Mutant) -> str:
    """The text with the mutant in place. Raises ValueError when the mutant no longer fits the text."""
    if mutant.generated:
        if text[mutant.start:mutant.start + len(mutant.old)] != mutant.old:
            raise ValueError(f"{mutant.file}:{mutant.line}: the generated mutant no longer matches; regenerate")
        return text[:mutant.start] + mutant.new + text[mutant.start + len(mutant.old):]
    count = text.count(mutant.old)
    if count != 1:
        first_line = mutant.old.strip().splitlines()[0] if mutant.old.strip() else mutant.old
        raise ValueError(f"curated mutant {mutant.breaks!r} in {mutant.file}: its old text ({first_line[:60]!r}...) "
                         f"occurs {count} times, want exactly 1; update that MUTANTS entry in "
                         "tests/mutation_check.py")
    return text.replace(mutant.old, mutant.new)


def apply(root: str, mutant: Mutant) -> str:
    """Write the mutant into `root`; return the original text (to restore). Raises ValueError if it
    does not apply exactly once or the result does not compile."""
    path = os.path.join(root, mutant.file)
    with open(path, encoding="utf-8") as f:
        original = f.read()
    mutated = mutate(original, mutant)
    compile(mutated, path, "exec")  # a mutant that does not compile would be "caught" for nothing
    with open(path, "w", encoding="utf-8") as f:
        f.write(mutated)
    return original


def restore(root: str, mutant: Mutant, original: str) -> None:
    with open(os.path.join(root, mutant.file), "w", encoding="utf-8") as f:
        f.write(original)


def make_copy(dest_parent: str, n: int, root: str = ROOT) -> str:
    dest = os.path.join(dest_parent, f"repo{n}")
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(*IGNORED))
    return dest


def child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    # No .pyc files: a restored source can have the same size and mtime second as its mutant, and a stale
    # cached mutant would then run in place of the real code.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["MINIAGENTS_HYPOTHESIS_PROFILE"] = "mutation"  # derandomised, shorter (tests/conftest.py)
    return env


# ----------------------------------------------------------------------------- the test processes


class Interrupted(Exception):
    """The check was asked to stop (SIGINT, SIGTERM, SIGHUP): every test process it started is ended first."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOPPING = threading.Event()  # set once the check is interrupted: no new test process starts, waits end at once
RUNS: "set[TestRun]" = set()  # the test processes running now
RUNS_LOCK = threading.Lock()
MARK = "MUTATION_CHECK_RUN"  # in each test process's environment: finds what its tests started outside its group
GRACE = 5.0  # seconds between SIGTERM and SIGKILL


class TestRun:
    """One pytest run: started in a session of its own (so it leads its own process group), its output in a file
    (a pipe would keep the wait going for as long as anything it started holds the pipe), and always ended whole:
    the group, every process descended from the pytest, and every process whose environment carries this run's
    mark (a test's child that left the group with setsid, like a database server's), SIGTERM first, SIGKILL after
    `GRACE` seconds for what is left; then the pytest is reaped."""

    __test__ = False  # not a test class, whatever pytest thinks of the name
    counter = 0

    def __init__(self, command: List[str], cwd: str):
        with RUNS_LOCK:
            if STOPPING.is_set():
                raise Interrupted(signal.SIGTERM)
            TestRun.counter += 1
            self.mark = f"{os.getpid()}-{TestRun.counter}"
            env = dict(child_env(), **{MARK: self.mark})
            self.output = tempfile.TemporaryFile()
            self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=self.output, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
            RUNS.add(self)
        self.lock = threading.Lock()
        self.ended: Optional[str] = None  # what ending it took, once ended ("" when nothing was left)

    def wait(self, timeout: float) -> Optional[int]:
        """Its exit code, or None when it is still running after `timeout` seconds or the check is stopping. The
        pytest is not reaped here (`end` does it), so its pid stays its group's id until its group is gone."""
        deadline = time.monotonic() + timeout
        while True:
            code = self._exit_code()
            if code is not None:
                return code
            left = deadline - time.monotonic()
            if left <= 0 or STOPPING.is_set():
                return None
            STOPPING.wait(min(0.1, left))

    def _exit_code(self) -> Optional[int]:
        if self.proc.returncode is not None:
            return self.proc.returncode
        if not hasattr(os, "waitid"):  # macOS: poll() reaps, which is fine where there is no /proc to read
            return self.proc.poll()
        info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None or info.si_pid == 0:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    def text(self, tail: int = 3000) -> str:
        self.output.seek(0)
        return self.output.read().decode("utf-8", "replace")[-tail:] if tail else \
            self.output.read().decode("utf-8", "replace")

    def end(self) -> str:
        """End what is left of the run and reap the pytest; a phrase saying what it took ("" when nothing was
        left). Safe to call twice and from two threads (a worker and an interrupted main thread)."""
        with self.lock:
            if self.ended is None:
                self.ended = self._end()
                self.output.close()
                with RUNS_LOCK:
                    RUNS.discard(self)
            return self.ended

    def _end(self) -> str:
        group = self.proc.pid
        left = self._left(marked=True)
        running = self._exit_code() is None
        if not left and not running:
            if _process_table() is None:  # nothing to read what is left from: end the group blind, then reap
                self._signal(signal.SIGKILL, set())
            self.proc.wait()
            return ""
        count = len(left) + running
        self._signal(signal.SIGTERM, left)
        deadline = time.monotonic() + GRACE
        while (self._exit_code() is None or self._left()) and time.monotonic() < deadline:
            time.sleep(0.05)
        how = "SIGTERM"
        if self._exit_code() is None or self._left(marked=True):
            self._signal(signal.SIGKILL, left | self._left(marked=True))
            how = f"SIGKILL {GRACE:.0f} s after SIGTERM"
        try:
            self.proc.wait(timeout=30)  # SIGKILL cannot be refused: a bound, not a hope
        except subprocess.TimeoutExpired:
            return f"process group {group}: {count} processes sent {how}, but its pytest did not end within 30 s"
        deadline = time.monotonic() + 30
        while self._left(marked=True) and time.monotonic() < deadline:  # gone, not only signalled
            time.sleep(0.05)
        still = self._left(marked=True)
        return f"process group {group} ended ({count} process{'es' if count != 1 else ''}, {how})" + (
            f"; still running 30 s later: {', '.join(map(str, sorted(still)))}" if still else "")

    def _signal(self, signum: int, pids: "set[int]") -> None:
        """`signum` to the run's process group and to each of `pids` (all positive: never a group by accident)."""
        for pid in [None] + sorted(p for p in pids if p > 0):
            try:
                os.killpg(self.proc.pid, signum) if pid is None else os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _left(self, marked: bool = False) -> "set[int]":
        """The run's processes still alive (zombies are not), the pytest aside: the members of its group and its
        descendants, and with `marked` those whose environment carries its mark. Read from /proc; where there
        is none, the empty set (the group is then signalled as a whole, and the pytest waited for)."""
        table = _process_table()
        if table is None:
            return set()
        children: Dict[int, List[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        found = {pid for pid, (_, group, _) in table.items() if group == self.proc.pid}
        seen, todo = set(), [self.proc.pid]
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        found |= seen
        if marked:
            found |= {pid for pid in table if pid not in found and _has_mark(pid, self.mark)}
        found.discard(self.proc.pid)
        return {pid for pid in found if pid in table and table[pid][2] not in ("Z", "X")}


def _process_table() -> Optional[Dict[int, Tuple[int, int, str]]]:
    """{pid: (parent pid, process group, state)} of every process, from /proc; None where there is no /proc."""
    if not os.path.isdir("/proc/self"):
        return None
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                table[int(name)] = (int(fields[1]), int(fields[2]), fields[0].decode())
            except (OSError, IndexError, ValueError):
                pass  # gone meanwhile
    return table


def _has_mark(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{MARK}={mark}".encode() in f.read().split(b"\0")
    except OSError:
        return False


STOPPED: List[str] = []  # what ending each run an interrupted check stopped took


def end_every_run() -> None:
    """Stop the check's test processes, all of them (an interrupted check); what it took is kept in STOPPED."""
    STOPPING.set()
    with RUNS_LOCK:
        running = list(RUNS)
    for run in running:
        STOPPED.append(run.end())


def run_pytest(root: str, args: List[str], timeout: float) -> Tuple[Optional[int], str, str]:
    """Run pytest in `root`: (exit code, or None when it timed out; the tail of its output; what ending it took,
    "" when it ended by itself and left nothing running)."""
    run = TestRun(PYTEST + args, root)
    try:
        code = run.wait(timeout)
        out = run.text()
    finally:
        ended = run.end()
    if STOPPING.is_set() and code is None:
        raise Interrupted(signal.SIGTERM)
    return code, out, ended


def baseline_failures(out: str) -> Tuple[List[str], List[str]]:
    """(test ids that failed, test files that failed to import) from a `-rfE` short summary."""
    failed, broken = [], []
    for line in out.splitlines():
        for tag in ("FAILED ", "ERROR "):
            if line.startswith(tag):
                node = line[len(tag):].split(" - ")[0].strip()
                (failed if "::" in node else broken).append(node)
    return failed, broken


# Tests of the source's shape, not its behaviour, left out of every mutant's run: the mutant list's own test
# (a mutant always "fails" it) and the README tables' (function line ranges and code-line counts: any mutant that
# removes a line "fails" it, which says nothing about the behaviour the mutant changed).
SHAPE_TESTS = ("test_mutation_check.py", "test_readme_tables.py")


def all_test_files(root: str) -> List[str]:
    """Every test module under tests/ (its area folders included), relative to the root."""
    found = []
    for folder, _, files in os.walk(os.path.join(root, "tests")):
        found += [os.path.relpath(os.path.join(folder, n), root).replace(os.sep, "/") for n in files
                  if n.startswith("test_") and n.endswith(".py") and n not in SHAPE_TESTS]
    return sorted(found)


@dataclass
class Outcome:
    mutant: Mutant
    status: str   # KILLED | SURVIVED | TIMEOUT | ERROR
    seconds: float
    detail: str = ""
    by: str = ""  # the first test that failed
    ended: str = ""  # what ending its test processes took (a timeout; a test's process left running)


def check(root: str, mutant: Mutant, full: bool, timeout: float, skip: List[str]) -> Outcome:
    start = time.monotonic()
    try:
        original = apply(root, mutant)
    except (ValueError, SyntaxError) as e:
        return Outcome(mutant, "ERROR", 0.0, str(e))
    try:
        ignored = {a.split("=", 1)[1] for a in skip if a.startswith("--ignore=")}
        everything = [t for t in all_test_files(root) if t not in ignored]
        first = [t for t in mutant.tests if t in everything] if not full else []
        stages = ([first] if first else []) + [[t for t in everything if t not in first]]
        ended = []
        for files in stages:
            if not files:  # the first stage ran every test file already
                continue
            left = timeout - (time.monotonic() - start)
            if left <= 0:
                return Outcome(mutant, "TIMEOUT", time.monotonic() - start, ended="; ".join(ended))
            code, out, how = run_pytest(root, skip + files, left)
            ended += [how] if how else []
            if code is None:
                return Outcome(mutant, "TIMEOUT", time.monotonic() - start, ended="; ".join(ended))
            if code in (1, 2, 3):  # tests failed / collection error / internal error caused by the mutant
                failed, broken = baseline_failures(out)
                return Outcome(mutant, "KILLED", time.monotonic() - start, by=(failed + broken + ["?"])[0],
                               ended="; ".join(ended))
            if code == 4 and "while loading conftest" in out:  # the package no longer imports: the baseline's did
                return Outcome(mutant, "KILLED", time.monotonic() - start, by="tests/conftest.py (cannot load)",
                               ended="; ".join(ended))
            if code != 0:
                return Outcome(mutant, "ERROR", time.monotonic() - start, f"pytest exit {code}\n{out}",
                               ended="; ".join(ended))
        return Outcome(mutant, "SURVIVED", time.monotonic() - start, ended="; ".join(ended))
    finally:
        restore(root, mutant, original)


# ----------------------------------------------------------------------------- main


def select(args: argparse.Namespace) -> List[Mutant]:
    mutants = generated_mutants(getattr(args, "root", ROOT)) if args.generated else list(MUTANTS)
    if args.only:
        wanted = [text.lower() for text in args.only]
        mutants = [m for m in mutants if any(text in m.id.lower() for text in wanted)]
    draw = random.Random(args.seed)
    if args.per_module is not None:  # a stratified sample: every module gets the same number (or all it has)
        by_module: Dict[str, List[Mutant]] = {}
        for m in mutants:
            by_module.setdefault(m.file, []).append(m)
        mutants = [m for module in sorted(by_module) for m in
                   (by_module[module] if len(by_module[module]) <= args.per_module
                    else draw.sample(by_module[module], args.per_module))]
    if args.sample is not None and args.sample < len(mutants):
        mutants = draw.sample(mutants, args.sample)
    return sorted(mutants, key=lambda m: (m.file, m.start or 0)) if args.generated else mutants


def misfits(root: str, mutants: List[Mutant]) -> List[str]:
    """A line per mutant that no longer fits the code in `root` (which mutant, which file, what to do)."""
    problems = []
    for m in mutants:
        with open(os.path.join(root, m.file), encoding="utf-8") as f:
            try:
                mutate(f.read(), m)
            except ValueError as e:
                problems.append(str(e))
    return problems


def report_generated(outcomes: List[Outcome], equivalent: Dict[str, str]) -> Tuple[int, int]:
    """Print the kill rate per module and the survivors; return (killed, counted), where `counted` leaves out
    the survivors listed as equivalent."""
    by_module: Dict[str, List[Outcome]] = {}
    for o in outcomes:
        by_module.setdefault(o.mutant.file, []).append(o)
    print(f"\n{'module':36s} {'mutants':>7s} {'killed':>6s} {'equiv':>5s} {'survived':>8s} {'kill rate':>9s}")
    killed_all = counted_all = 0
    for module in sorted(by_module):
        rows = by_module[module]
        killed = sum(o.status in ("KILLED", "TIMEOUT") for o in rows)
        equiv = sum(o.status == "SURVIVED" and o.mutant.id in equivalent for o in rows)
        counted = sum(o.status != "ERROR" for o in rows) - equiv
        killed_all, counted_all = killed_all + killed, counted_all + counted
        rate = f"{100.0 * killed / counted:.0f}%" if counted else "-"
        print(f"{module:36s} {len(rows):7d} {killed:6d} {equiv:5d} {counted - killed:8d} {rate:>9s}")
    rate = f"{100.0 * killed_all / counted_all:.1f}%" if counted_all else "-"
    print(f"{'all':36s} {len(outcomes):7d} {killed_all:6d} {len(outcomes) - counted_all:5d} "
          f"{counted_all - killed_all:8d} {rate:>9s}")
    stale = [o.mutant.id for o in outcomes if o.mutant.id in equivalent and o.status in ("KILLED", "TIMEOUT")]
    for mutant_id in stale:
        print(f"listed as equivalent but killed (remove it from tests/mutation_equivalent.txt): {mutant_id}")
    return killed_all, counted_all


def location(mutant: Mutant, root: str = ROOT) -> str:
    """`file:line` of a mutant: for a curated one, the first line of its old text in the file as it is now."""
    if mutant.generated:
        return f"{mutant.file}:{mutant.line}"
    try:
        with open(os.path.join(root, mutant.file), encoding="utf-8") as f:
            text = f.read()
        at = text.index(mutant.old) + len(mutant.old) - len(mutant.old.lstrip())
    except (OSError, ValueError):
        return mutant.file
    return f"{mutant.file}:{text.count(chr(10), 0, at) + 1}"


def report_survivors(outcomes: List[Outcome], equivalent: Dict[str, str], root: str = ROOT) -> None:
    """Name every mutant the suite did not fail, with where it is and what it changed: the survivors, those
    listed as equivalent, and those that only ran out of time (caught, but a hang is worth a look)."""
    def line(o: Outcome) -> str:
        what = (f"{mutation_generate._squash(o.mutant.old)[:70]}  ->  {mutation_generate._squash(o.mutant.new)[:70]}"
                if o.mutant.generated else o.mutant.breaks)
        return f"  {location(o.mutant, root)}  {what}" + (f"\n      [{o.mutant.id}]" if o.mutant.generated else "")

    groups = [("survivors (file:line  mutation" + ("  [id for tests/mutation_equivalent.txt]" if any(
                   o.mutant.generated for o in outcomes) else "") + ")",
               [o for o in outcomes if o.status == "SURVIVED" and o.mutant.id not in equivalent]),
              ("survived, listed as equivalent in tests/mutation_equivalent.txt",
               [o for o in outcomes if o.status == "SURVIVED" and o.mutant.id in equivalent]),
              ("caught only by the timeout (the suite hung or was too slow with it)",
               [o for o in outcomes if o.status == "TIMEOUT"])]
    for title, rows in groups:
        if rows:
            print(f"\n{title}:")
            for o in rows:
                print(line(o))


def install_stop_handlers() -> Dict[int, object]:
    """SIGINT, SIGTERM (and SIGHUP, unless it is ignored, as under nohup) raise `Interrupted` in the main thread,
    so the check ends its test processes before it goes; the handlers they replace, to put back."""
    previous: Dict[int, object] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous

    def stop(signum, frame):
        raise Interrupted(signum)

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and not (name == "SIGHUP" and signal.getsignal(signum) == signal.SIG_IGN):
            previous[signum] = signal.signal(signum, stop)
    return previous


def main(argv: Optional[List[str]] = None) -> int:
    """The check; see the module's docstring. An interrupted check (SIGINT, SIGTERM, SIGHUP) ends every test
    process it started, then exits 128 + the signal's number."""
    previous = install_stop_handlers()
    STOPPING.clear()
    del STOPPED[:]
    try:
        return _main(argv)
    except (Interrupted, KeyboardInterrupt) as stop:
        for signum in previous:  # a second Ctrl-C must not cut the cleanup short
            signal.signal(signum, signal.SIG_IGN)
        end_every_run()
        signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
        ended = [how for how in STOPPED if how]
        print(f"\ninterrupted ({signal.Signals(signum).name}): "
              + ("; ".join(ended) if ended else "no test process was running")
              + "; the work tree was never touched", file=sys.stderr, flush=True)
        return 128 + signum
    finally:
        end_every_run()  # nothing is running by now; a bound on what an unexpected error could leave
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--only", metavar="SUBSTRING", action="append",
                        help="only mutants whose id (file, description) contains it; repeat it for several "
                             "(a generated id starts with its module: --only miniagents/tool.py::)")
    parser.add_argument("--generated", action="store_true",
                        help="mutants generated from the AST of every module (tests/mutation_generate.py)")
    parser.add_argument("--sample", type=int, metavar="N", help="a random sample of N mutants (see --seed)")
    parser.add_argument("--per-module", type=int, metavar="N",
                        help="a random sample of N mutants from each module (all of a module that has fewer), "
                             "so every module's kill rate is measured; with --sample, then N of those")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--min-kill-rate", type=float, metavar="PERCENT",
                        help="generated: exit 1 when fewer than PERCENT%% of the mutants are killed (default 100)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel jobs, each with its own copy (default 2)")
    parser.add_argument("--full", action="store_true", help="always run the full suite for each mutant")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per mutant (default 360, or twice the unmutated suite's time when longer: a "
                             "survivor runs the whole suite, which must fit well inside, or it would count as caught)")
    parser.add_argument("-v", "--verbose", action="store_true", help="name the test that caught each mutant")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip running the unmutated suite first")
    parser.add_argument("--strict-baseline", action="store_true",
                        help="stop if the unmutated suite fails (default: leave its failing tests out and say so)")
    parser.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)  # another repository: the check's own tests
    args = parser.parse_args(argv)
    timeout = args.timeout or 360.0
    root_dir = os.path.abspath(args.root)

    mutants = select(args)
    if args.list:
        for n, m in enumerate(mutants, 1):
            print(f"{n:4d}  {m.describe()}  [{', '.join(m.tests) or 'full suite'}]"
                  + (f"\n      {m.id}" if m.generated else ""))
        return 0
    if not mutants:
        print(f"no mutant matches {' or '.join(args.only or [])!r}", file=sys.stderr)
        return 2
    equivalent = load_equivalent(os.path.join(root_dir, "tests", "mutation_equivalent.txt")) \
        if args.generated else {}
    started = time.monotonic()
    jobs = max(1, min(args.jobs, len(mutants)))
    with tempfile.TemporaryDirectory(prefix="mutation_check_") as tmp:
        os.chmod(tmp, 0o755)  # tests that drop root's privileges in a child (session files) read the copy too
        copies = [make_copy(tmp, n, root_dir) for n in range(jobs)]
        problems = misfits(copies[0], mutants)  # fail fast on a mutant list that no longer fits the code
        if problems:
            print("ERROR  mutants that no longer fit the code:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 2
        skip: List[str] = []
        if not args.no_baseline:
            # The whole suite, not stopping at the first failure, to learn what fails without any mutant.
            limit = max(timeout, 240.0) * 3
            run = TestRun(PYTEST[:3] + PYTEST[4:] + ["-rfE"], copies[0])
            try:
                code = run.wait(limit)
                out = run.text(tail=0)
            finally:
                ended = run.end()
            if code is None:
                print(f"the unmutated suite did not finish in {limit:.0f} s ({ended})", file=sys.stderr)
                return 2
            failed, broken = baseline_failures(out)
            if code not in (0, 1) or (code == 1 and not failed and not broken):
                print(f"the unmutated suite cannot run (pytest exit {code}):\n{out[-3000:]}", file=sys.stderr)
                return 2
            if (failed or broken) and args.strict_baseline:
                print("the unmutated suite fails:\n  " + "\n  ".join(failed + broken), file=sys.stderr)
                return 2
            skip = [f"--deselect={t}" for t in failed] + [f"--ignore={f}" for f in broken]
            print(f"baseline: {time.monotonic() - started:.0f} s; "
                  + (f"left out, failing without any mutant: {', '.join(failed + broken)}"
                     if skip else "the unmutated suite passes")
                  + (f"; its tests left processes running: {ended}" if ended else ""), flush=True)
            if args.timeout is None:  # a survivor runs the whole suite: on a slow machine 360 s is too short
                timeout = max(timeout, 2 * (time.monotonic() - started))

        free: "queue.Queue[str]" = queue.Queue()
        for c in copies:
            free.put(c)
        lock = threading.Lock()
        mutated_at = time.monotonic()

        def work(m: Mutant) -> Outcome:
            if STOPPING.is_set():
                raise Interrupted(signal.SIGTERM)
            root = free.get()
            try:
                outcome = check(root, m, args.full, timeout, skip)
            finally:
                free.put(root)
            with lock:
                ended = ("; its test processes: " if outcome.status == "TIMEOUT"
                         else "; what its tests left running: ") + outcome.ended if outcome.ended else ""
                print(f"{outcome.status:8s} {m.describe()}  ({outcome.seconds:.1f} s{ended})"
                      + (f"  by {outcome.by}" if args.verbose and outcome.by else ""), flush=True)
                if outcome.detail:
                    print("    " + outcome.detail.replace("\n", "\n    "), flush=True)
            return outcome

        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            outcomes = list(pool.map(work, mutants))
        finally:
            if sys.exc_info()[0] is not None:  # interrupted: end the running tests before waiting for their jobs
                end_every_run()
            pool.shutdown(wait=True, cancel_futures=True)

    elapsed = time.monotonic() - started
    errors = [o for o in outcomes if o.status == "ERROR"]
    timeouts = sum(o.status == "TIMEOUT" for o in outcomes)
    if args.generated:
        killed, counted = report_generated(outcomes, equivalent)
        report_survivors(outcomes, equivalent, root_dir)
        per_mutant = (time.monotonic() - mutated_at) * jobs / len(outcomes)
        print(f"\n{killed}/{counted} generated mutants killed" + (f" ({timeouts} by timeout)" if timeouts else "")
              + (f", {len(errors)} errors" if errors else "")
              + f" in {elapsed:.0f} s; {per_mutant:.1f} s of one job per mutant")
        if errors:
            return 2
        wanted = 100.0 if args.min_kill_rate is None else args.min_kill_rate
        return 0 if counted == 0 or 100.0 * killed / counted >= wanted else 1
    killed = sum(o.status in ("KILLED", "TIMEOUT") for o in outcomes)
    survived = [o for o in outcomes if o.status == "SURVIVED"]
    report_survivors(outcomes, equivalent, root_dir)
    print(f"\nmutants: {killed}/{len(outcomes)} killed"
          + (f" ({timeouts} by timeout)" if timeouts else "")
          + (f", {len(errors)} errors" if errors else "")
          + f" in {elapsed:.0f} s")
    if errors:
        return 2
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
