"""Ready-made pieces for agents that hand off: a filter that hides tool traffic from the next agent, and
a prompt prefix that tells a model how handoffs work.

Upstream keeps them under `agents.extensions.handoff_filters` and `agents.extensions.handoff_prompt`;
miniagents serves those paths from here (the upstream shell, miniagents/upstream/).
"""
from __future__ import annotations

from typing import Any

from ..handoffs import HandoffInputData

# Run items that are tool traffic rather than conversation (by their `type`).
_TOOL_RUN_ITEMS = frozenset({
    "tool_call_item", "tool_call_output_item", "handoff_call_item", "handoff_output_item", "reasoning_item",
    "tool_approval_item", "tool_search_call_item", "tool_search_output_item", "mcp_list_tools_item",
    "mcp_approval_request_item", "mcp_approval_response_item"})
# Transcript items that are tool traffic (by their `type`), the kernel's own and the hosted ones.
_TOOL_TRANSCRIPT_ITEMS = frozenset({
    "function_call", "function_call_output", "reasoning", "file_search_call", "web_search_call",
    "code_interpreter_call", "image_generation_call", "computer_call", "computer_call_output", "local_shell_call",
    "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output",
    "custom_tool_call", "custom_tool_call_output", "tool_search_call", "tool_search_output", "mcp_call",
    "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "hosted_tool_call"})


def _conversation_only(items: Any) -> tuple:
    return tuple(item for item in items if getattr(item, "type", None) not in _TOOL_RUN_ITEMS)


def remove_all_tools(handoff_input_data: HandoffInputData) -> HandoffInputData:
    """A handoff input filter: the next agent sees the conversation without any tool calls, tool outputs,
    handoff calls or reasoning. A string history has none and is kept as it is."""
    history = handoff_input_data.input_history
    if not isinstance(history, str):
        history = tuple(item for item in history
                        if not (isinstance(item, dict) and item.get("type") in _TOOL_TRANSCRIPT_ITEMS))
    input_items = handoff_input_data.input_items
    return handoff_input_data.clone(
        input_history=history,
        pre_handoff_items=_conversation_only(handoff_input_data.pre_handoff_items),
        new_items=_conversation_only(handoff_input_data.new_items),
        input_items=None if input_items is None else _conversation_only(input_items))


RECOMMENDED_PROMPT_PREFIX = (
    "# System context\n"
    "You are one agent in a multi-agent system. Each agent has its own instructions and tools, and can pass "
    "the conversation to another agent that is better suited to it. You pass it by calling a handoff "
    "function, usually named `transfer_to_<agent_name>`. Handoffs happen in the background: do not mention "
    "them or draw the user's attention to them.\n"
)


def prompt_with_handoff_instructions(prompt: str) -> str:
    """`prompt` with RECOMMENDED_PROMPT_PREFIX before it, for the instructions of an agent that hands off."""
    return f"{RECOMMENDED_PROMPT_PREFIX}\n\n{prompt}"
