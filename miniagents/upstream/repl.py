"""`run_demo_loop`: talk to an agent in the terminal (upstream's `agents.repl`), for trying an agent by hand.

Each line you type is a user message; the conversation (and the agent a handoff switched to) carries over
from one line to the next. `exit`, `quit`, end of input or Ctrl-C ends it; blank lines are skipped. Streamed,
text appears as it arrives, with `[tool called]`, `[tool output: ...]` and `[Agent updated: ...]` notes.
`run_demo_loop` is a coroutine, as upstream's (`asyncio.run(run_demo_loop(agent))`); `run_demo_loop_sync` is
the same loop for code without an event loop. It reads stdin and writes stdout, nothing else. Its runs are the
shell's, as upstream's are its `Runner`'s: the agents' own `AgentHooks` fire, and a model name routes by its
prefix (the kernel's runner, used before, did neither, nor went through a default agent runner of the program's).
"""
from __future__ import annotations

from typing import Any, Callable, Generator, Optional

from ..result import AgentUpdatedStreamEvent, RawResponsesStreamEvent, RunItemStreamEvent
from ..run import DEFAULT_MAX_TURNS, Options, drive, start_run
from .runner import Runner, _options, keywords


def _lines(read: Optional[Callable[[str], str]]):
    """The user's lines until exit/quit/EOF/Ctrl-C, blank ones skipped (`read`: `input` unless given)."""
    read = read or input  # looked up at each call, so a patched `builtins.input` is honoured
    while True:
        try:
            line = read(" > ")
        except (EOFError, KeyboardInterrupt):
            print()
            return
        if line.strip().lower() in ("exit", "quit"):
            return
        if line.strip():
            yield line


def show_event(event: Any) -> None:
    """Print one stream event as the demo loop shows it."""
    if isinstance(event, RawResponsesStreamEvent):
        if event.data.get("type") == "response.output_text.delta":
            print(event.data.get("delta", ""), end="", flush=True)
    elif isinstance(event, RunItemStreamEvent):
        if event.item.type == "tool_call_item":
            print("\n[tool called]", flush=True)
        elif event.item.type == "tool_call_output_item":
            print(f"\n[tool output: {event.item.output}]", flush=True)
    elif isinstance(event, AgentUpdatedStreamEvent):
        print(f"\n[Agent updated: {event.new_agent.name}]", flush=True)


def _conversation(agent: Any, read: Optional[Callable[[str], str]], streamed: bool) -> Generator[tuple, Any, None]:
    """The loop's bookkeeping, in one place for both flavours: yields (agent, input items) for each line typed;
    is sent the run's result, whose last agent and history the next line continues (and whose final output it
    prints when the run was not streamed)."""
    current, items = agent, []
    for line in _lines(read):
        result = yield current, items + [{"role": "user", "content": line}]
        if result.final_output is not None and not streamed:
            print(result.final_output)
        current, items = result.last_agent, result.to_input_list()


def _next(conversation: Generator, result: Any = None) -> Optional[tuple]:
    try:
        return conversation.send(result)
    except StopIteration:
        return None


async def run_demo_loop(agent: Any, *, stream: bool = True, context: Any = None,
                        max_turns: Optional[int] = DEFAULT_MAX_TURNS,
                        read: Optional[Callable[[str], str]] = None) -> None:
    """Chat with `agent` in the terminal until you type exit or quit (see the module docstring)."""
    conversation = _conversation(agent, read, stream)
    request = _next(conversation)
    while request is not None:
        if stream:
            result = Runner.run_streamed(*request, context=context, max_turns=max_turns)
            async for event in result.stream_events():
                show_event(event)
            print()
        else:
            result = await Runner.run(*request, context=context, max_turns=max_turns)
        request = _next(conversation, result)


def run_demo_loop_sync(agent: Any, *, stream: bool = True, context: Any = None,
                       max_turns: Optional[int] = DEFAULT_MAX_TURNS,
                       read: Optional[Callable[[str], str]] = None) -> None:
    """`run_demo_loop` without an event loop: the same conversation, streamed the same way."""
    conversation = _conversation(agent, read, stream)
    request = _next(conversation)
    while request is not None:
        if stream:
            given = keywords("run_streamed", (), {"context": context, "max_turns": max_turns})
            result = drive(start_run(*request, Options(**_options(*request, **given)), streamed=True), show_event)
            print()
        else:
            result = Runner.run_sync(*request, context=context, max_turns=max_turns)
        request = _next(conversation, result)
