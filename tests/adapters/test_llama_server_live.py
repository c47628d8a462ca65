"""Against a real llama.cpp `llama-server` (LLAMA_SERVER_URL, e.g. http://127.0.0.1:8089/v1; docs/servers.md says how
to start one with SmolLM2-135M): a forced tool call and structured output through both adapters, plain and
streamed. Each skips with the reason when no server is given, or when its chat template cannot offer tools.

What is asserted is what the server guarantees once it takes the request in a form it reads, not what a small model
chooses: a tool forced as "required" is a grammar, so the answer is a call of that tool or is cut at max_tokens (the
model is never let stop without it); a Chat output schema is a grammar too; a Responses output schema the server
drops reaches the model only through the instructions, which the prompt's token count shows."""
import json
import os
import urllib.request

import pytest

from miniagents import ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel
from miniagents.models import endpoint

URL = os.environ.get("LLAMA_SERVER_URL", "").rstrip("/")
pytestmark = pytest.mark.skipif(not URL, reason="LLAMA_SERVER_URL is not set: no llama-server to run against "
                                                "(docs/servers.md says how to start one)")
ADAPTERS = {"chat": OpenAIChatCompletionsModel, "responses": OpenAIResponsesModel}
MAX_TOKENS = 48
TOOL = {"type": "function", "name": "get_order_status", "description": "Look up the status of an order.",
        "strict": True, "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                       "required": ["order_id"], "additionalProperties": False}}
OTHER = {**TOOL, "name": "cancel_order", "description": "Cancel an order."}
SCHEMA = {"name": "final_output", "strict": True, "schema": {
    "type": "object", "properties": {"order_id": {"type": "string"}, "eta_days": {"type": "integer"}},
    "required": ["order_id", "eta_days"], "additionalProperties": False}}
INPUT = [{"role": "user", "content": "Where is my order A1?"}]


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    monkeypatch.setattr(endpoint, "_accepted_forms", {})


@pytest.fixture(scope="module")
def props():
    root = URL[:-len("/v1")] if URL.endswith("/v1") else URL
    with urllib.request.urlopen(root + "/props", timeout=10) as answer:
        return json.load(answer)


def model(api):
    return ADAPTERS[api]("smol", base_url=URL, api_key="local", max_retries=0, timeout=120)


def ask(m, streamed, settings, tools=(), schema=None, instructions="You are a help desk. Be brief."):
    """(output items, usage) of one call."""
    args = (instructions, INPUT, settings, list(tools), schema, [])
    if not streamed:
        response = m.get_response(*args)
        return response.output, {"input_tokens": response.usage.input_tokens,
                                 "output_tokens": response.usage.output_tokens}
    final = list(m.stream_response(*args))[-1]["response"]
    return final["output"], final["usage"]


def text_of(items):
    return "".join(p.get("text", "") for i in items if i["type"] == "message" for p in i["content"])


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("api", ADAPTERS)
def test_a_forced_tool_reaches_llama_server_in_a_form_it_reads(api, streamed, props):
    if not props.get("chat_template_caps", {}).get("supports_tools"):
        pytest.skip("this llama-server's chat template offers no tools (it leaves them out of the prompt): start it "
                    "with --chat-template-file (docs/servers.md)")
    m = model(api)
    settings = ModelSettings(tool_choice="get_order_status", max_tokens=MAX_TOKENS, temperature=0, include_usage=True)
    items, usage = ask(m, streamed, settings, [TOOL, OTHER])
    called = [i["name"] for i in items if i["type"] == "function_call"]
    form = endpoint._accepted_forms[(m.path, m.base_url, m.model)]["tool_choice"]
    assert form == "required" or called == ["get_order_status"], (form, called)  # llama-server drops the object
    assert set(called) <= {"get_order_status"}  # only the forced tool was offered
    assert called or usage["output_tokens"] >= MAX_TOKENS, (text_of(items), usage)  # the grammar forbids a stop


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_structured_output_through_chat_completions_is_json_or_cut_short(streamed):
    settings = ModelSettings(max_tokens=MAX_TOKENS, temperature=0, include_usage=True)
    items, usage = ask(model("chat"), streamed, settings, schema=SCHEMA)
    text = text_of(items)
    if usage["output_tokens"] < MAX_TOKENS:
        assert set(json.loads(text)) == {"order_id", "eta_days"}, text


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_structured_output_through_responses_reaches_the_model_in_the_instructions(streamed):
    settings = ModelSettings(max_tokens=MAX_TOKENS, temperature=0, include_usage=True)
    m = model("responses")
    _, plain = ask(m, streamed, settings)
    items, usage = ask(m, streamed, settings, schema=SCHEMA)
    form = endpoint._accepted_forms.get((m.path, m.base_url, m.model), {}).get("text.format")
    if form is None:  # the first answer was JSON: nothing to learn (a server that reads text.format, or luck)
        json.loads(text_of(items))
        return
    assert form == "in the instructions too"
    schema_tokens = len(json.dumps(SCHEMA["schema"])) // 8  # a token is 2-4 characters: a safe lower bound
    assert usage["input_tokens"] >= plain["input_tokens"] + schema_tokens, (usage, plain)
