"""The four ways a turn can end (DESIGN.md, idea 2). The loop dispatches on these and nothing else.

A new reason to stop is a new variant here, never a flag inside the loop. They are plain data, so a
paused run (`NextStepInterruption`) can be written to JSON and resumed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(eq=False)
class NextStepRunAgain:
    """Call the same agent's model again."""


@dataclass(eq=False)
class NextStepHandoff:
    """Give the conversation to the agent behind `call` (the response's first handoff call)."""

    call: Any


@dataclass(eq=False)
class NextStepFinalOutput:
    """End the run with `output` (the output guardrails still run before it is returned)."""

    output: Any


@dataclass(eq=False)
class NextStepInterruption:
    """Pause the run: `interruptions` are the `ToolApprovalItem`s waiting for a person's decision."""

    interruptions: list = field(default_factory=list)


NextStep = Union[NextStepRunAgain, NextStepHandoff, NextStepFinalOutput, NextStepInterruption]


@dataclass(eq=False)
class SingleStepResult:
    """One turn's outcome: the items it produced (model order), and what the loop does next."""

    new_items: list
    next_step: Any
    tool_results: list = field(default_factory=list)
