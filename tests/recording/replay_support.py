"""What the recording tests share: a closed network, a help-desk agent on the test server, runs in each mode, and
the plain forms of what a run produced (its items, responses and stream events) to compare two runs by."""
from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from unittest import mock

from miniagents import Agent, Runner, function_tool
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from openai_server import chat_chunks, chat_completion, sse

KEY = "sk-test-recording-0123456789"
QUESTION = "Where is order A-1?"
INSTRUCTIONS = "You are a help desk. Answer briefly."


class NetworkClosed(OSError):
    pass


@contextlib.contextmanager
def network_closed():
    """No socket of this process can connect while inside: a replay that tried to reach a server would fail."""
    def refuse(*args, **kwargs):
        raise NetworkClosed("the network is closed in this test")
    with mock.patch.object(socket.socket, "connect", refuse), mock.patch.object(socket.socket, "connect_ex", refuse), \
            mock.patch.object(socket, "create_connection", refuse):
        yield


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order's delivery status.

    Args:
        order_id: The order's id, like A-1.
    """
    return f"Order {order_id} shipped on 2 May."


@function_tool
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    return f"Order {order_id} cancelled."


def help_desk(model, **changes) -> Agent:
    settings = {"name": "Help desk", "instructions": INSTRUCTIONS, "tools": [lookup_order], "model": model}
    return Agent(**{**settings, **changes})


def chat_model(server, **kwargs) -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel("help-desk-model", base_url=server.url, api_key=KEY, **kwargs)


def script_plain(server) -> None:
    """The server's two answers for a plain run: a tool call, then the text."""
    server.reply(chat_completion(tool_calls=[("call_A1", "lookup_order", '{"order_id": "A-1"}')]))
    server.reply(chat_completion("Order A-1 shipped on 2 May; it should arrive this week."))


def script_streamed(server) -> None:
    """The same two answers, streamed as chunks."""
    server.reply_sse(sse(*chat_chunks(tool_calls=[("call_A1", "lookup_order", '{"order_id": "A-1"}')])))
    server.reply_sse(sse(*chat_chunks("Order A-1 shipped on 2 May; it should arrive this week.")))


def plain(value):
    return json.loads(json.dumps(value, default=lambda o: o.to_json() if hasattr(o, "to_json") else repr(o)))


def run_items(result) -> list:
    return [(item.type, getattr(item.agent, "name", None), plain(item.raw_item)) for item in result.new_items]


def responses(result) -> list:
    return [(plain(r.output), r.usage.to_json(), r.response_id, r.request_id) for r in result.raw_responses]


def event_forms(events) -> list:
    forms = []
    for event in events:
        if event.type == "raw_response_event":
            forms.append(("raw", plain(event.data)))
        elif event.type == "run_item_stream_event":
            forms.append(("item", event.name, event.item.type, plain(event.item.raw_item)))
        else:
            forms.append(("agent", event.new_agent.name))
    return forms


def run(mode: str, agent: Agent, input=QUESTION, **kwargs):
    """(result, stream event forms or None) of a run by `Runner.run_sync`, `Runner.run` or `Runner.run_streamed`."""
    if mode == "sync":
        return Runner.run_sync(agent, input, **kwargs), None
    if mode == "async":
        return asyncio.run(Runner.run(agent, input, **kwargs)), None

    async def drain():
        result = Runner.run_streamed(agent, input, **kwargs)
        return result, [event async for event in result.stream_events()]
    result, events = asyncio.run(drain())
    return result, event_forms(events)
