"""`RunState`: everything a run changes, in one object that becomes JSON and comes back.

The loop (run.py) reads and writes only this object, so a run paused for approval is this object
written out. Approve or reject its interruptions, then pass it back to `Runner.run_sync(agent, state)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .context import RunContextWrapper
from .items import ToolApprovalItem, drop_orphans, to_input_list


@dataclass
class PendingTurn:
    """A turn whose model response is in but whose calls are not all settled (paused for approval).

    `output` is the response's items; `start` is where the turn's items begin in `generated_items`;
    `done` maps call ids that already have an output to `(python value, text)`.
    """

    agent_name: str
    output: list
    start: int
    done: dict = field(default_factory=dict)
    session_input: list = field(default_factory=list)


class RunState:
    def __init__(self, context: Any, original_input: Any, starting_agent: Any, max_turns: Optional[int] = 10,
                 *, conversation_id: Optional[str] = None, previous_response_id: Optional[str] = None,
                 auto_previous_response_id: bool = False):
        self.context_wrapper = context if isinstance(context, RunContextWrapper) else RunContextWrapper(context)
        self.original_input = original_input
        self.starting_agent = starting_agent
        self.current_agent = starting_agent
        self.max_turns = max_turns
        self.conversation_id = conversation_id
        self.previous_response_id = previous_response_id
        self.auto_previous_response_id = auto_previous_response_id
        self.current_turn = 0
        self.generated_items: list = []
        self.model_responses: list = []
        self.pending: Optional[PendingTurn] = None
        self.agents_that_used_tools: set = set()
        self.input_guardrail_results: list = []
        self.output_guardrail_results: list = []
        self.tool_input_guardrail_results: list = []
        self.tool_output_guardrail_results: list = []
        self.final_output: Any = None
        self.transcript: list = []
        self.unsaved_session_input: list = []  # the new input, saved with the first completed turn
        self.resumed = False  # True once passed back to Runner: the session may hold settled calls
        self.rebuild_transcript()

    def rebuild_transcript(self) -> None:
        """The model's view: the input, then every settled transcript item, checked for pairing."""
        generated = [i.raw_item for i in self.generated_items[: self._settled_end()]
                     if not isinstance(i, ToolApprovalItem)]
        self.transcript = drop_orphans(to_input_list(self.original_input) + generated)

    def _settled_end(self) -> int:
        return self.pending.start if self.pending is not None else len(self.generated_items)

    # --- Approvals -------------------------------------------------------------------------

    def get_interruptions(self) -> list:
        return [i for i in self.generated_items if isinstance(i, ToolApprovalItem)] if self.pending else []

    def approve(self, item: ToolApprovalItem, always_approve: bool = False) -> None:
        self.context_wrapper.approve_tool(item, always_approve=always_approve)

    def reject(self, item: ToolApprovalItem, always_reject: bool = False, *,
               rejection_message: Optional[str] = None) -> None:
        self.context_wrapper.reject_tool(item, always_reject=always_reject, rejection_message=rejection_message)
