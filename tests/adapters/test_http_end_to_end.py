"""End to end over real sockets: an agent with a function tool and a handoff, through the kernel, per API."""
import asyncio
import json

from miniagents import Agent, RunConfig, Runner, function_tool
from miniagents.models.chat_completions import OpenAIChatCompletionsModel
from miniagents.upstream.providers import OpenAIProvider
from openai_server import call_item, chat_chunks, chat_completion, response_events, response_obj, sse, text_item

ran = []


@function_tool
def convert_currency(amount: float, to: str) -> str:
    """Convert EUR to another currency."""
    ran.append((amount, to))
    return f"{amount * 162.0:.1f} {to}"


def agents():
    billing = Agent(name="Billing", instructions="You bill.", handoff_description="Billing questions.")
    triage = Agent(name="Triage", instructions="You triage.", tools=[convert_currency], handoffs=[billing])
    return triage


def test_chat_completions_agent_with_tool_and_handoff(server):
    ran.clear()
    server.reply(chat_completion(None, [("call_1", "convert_currency", '{"amount": 40, "to": "JPY"}')]))
    server.reply(chat_completion("Handing over.", [("call_2", "transfer_to_billing", "")]))
    server.reply(chat_completion("Your bill: 6480.0 JPY"))
    provider = OpenAIProvider(base_url=server.url, api_key="sk-test")
    result = Runner.run_sync(agents(), "40 EUR in JPY, then bill me", run_config=RunConfig(model_provider=provider))
    assert result.final_output == "Your bill: 6480.0 JPY" and result.last_agent.name == "Billing"
    assert ran == [(40.0, "JPY")]
    first, second, third = server.bodies
    assert {t["function"]["name"] for t in first["tools"]} == {"convert_currency", "transfer_to_billing"}
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "6480.0 JPY"}
    assert third["messages"][0] == {"role": "system", "content": "You bill."}
    handoff_msg = [m for m in third["messages"] if m.get("tool_call_id") == "call_2"][0]
    assert json.loads(handoff_msg["content"]) == {"assistant": "Billing"}
    assert all(m.get("tool_calls") != [] for b in server.bodies for m in b["messages"])


def test_responses_agent_with_tool_and_handoff_streamed(server):
    ran.clear()
    server.reply_sse(response_events([call_item("call_1", "convert_currency", '{"amount": 40, "to": "JPY"}')],
                                     rid="resp_1"))
    server.reply_sse(response_events([call_item("call_2", "transfer_to_billing", "{}", iid="fc_2")],
                                     rid="resp_2"), chunk_size=7)
    server.reply_sse(response_events([text_item("Your bill: 6480.0 JPY")], rid="resp_3"))
    provider = OpenAIProvider(base_url=server.url, api_key="sk-test", use_responses=True)

    async def main():
        result = Runner.run_streamed(agents(), "40 EUR in JPY, then bill me",
                                     run_config=RunConfig(model_provider=provider))
        kinds = [e.type async for e in result.stream_events()]
        return result, kinds

    result, kinds = asyncio.run(main())
    assert result.final_output == "Your bill: 6480.0 JPY" and ran == [(40.0, "JPY")]
    assert "raw_response_event" in kinds
    first, second, third = server.bodies
    assert first["instructions"] == "You triage." and "store" not in first
    assert [t["name"] for t in first["tools"]] == ["convert_currency", "transfer_to_billing"]
    assert second["input"][-2:] == [call_item("call_1", "convert_currency", '{"amount": 40, "to": "JPY"}'),
                                    {"type": "function_call_output", "call_id": "call_1", "output": "6480.0 JPY"}]
    assert third["instructions"] == "You bill."


def test_chat_streamed_agent_over_every_byte(server):
    server.reply_sse(sse(*chat_chunks("Hello from a local server")), chunk_size=1)
    agent = Agent(name="A", instructions="hi",
                  model=OpenAIChatCompletionsModel("llama3", base_url=server.url, api_key="x"))

    async def main():
        result = Runner.run_streamed(agent, "hi")
        deltas = [e.data["delta"] async for e in result.stream_events()
                  if e.type == "raw_response_event" and e.data["type"] == "response.output_text.delta"]
        return result, deltas

    result, deltas = asyncio.run(main())
    assert "".join(deltas) == "Hello from a local server " == result.final_output


def test_non_streamed_responses_agent_uses_instructions_and_response_id(server):
    server.reply(response_obj([text_item("hi")], rid="resp_9"))
    agent = Agent(name="A", instructions="be nice")
    result = Runner.run_sync(agent, "hello", run_config=RunConfig(
        model_provider=OpenAIProvider(base_url=server.url, api_key="sk-test", use_responses=True)))
    assert result.final_output == "hi" and server.bodies[0]["input"] == [{"role": "user", "content": "hello"}]


def test_a_lone_surrogate_from_the_model_does_not_break_the_next_request_or_the_session(server):
    from miniagents import SQLiteSession

    seen = []

    @function_tool
    def search(query: str) -> str:
        """Search."""
        seen.append(query)
        return f"results for {query}"

    server.reply(chat_completion(None, [("call_1", "search", '{"query": "caf\udce9"}')]))
    server.reply(chat_completion("Found it \ud83d"))
    agent = Agent(name="A", tools=[search], model=OpenAIChatCompletionsModel("m", base_url=server.url, api_key="x"))
    session = SQLiteSession("s1")
    result = Runner.run_sync(agent, "find it", session=session)
    assert seen == ["caf\ufffd"] and result.final_output == "Found it \ufffd"
    assert server.bodies[1]["messages"][-1]["content"] == "results for caf\ufffd"
    assert [i.get("output") for i in session.get_items() if i.get("type") == "function_call_output"] == [
        "results for caf\ufffd"]
