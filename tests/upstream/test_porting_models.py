"""Upstream's model-side names (issue 11): the objects a model receives, MultiProvider, client objects, hosted tools
and structured tool outputs on the wire, and runner-managed retries over the HTTP adapters."""
import pytest

from miniagents.upstream import (Agent, AgentOutputSchema, FileSearchTool, FunctionTool, Handoff, ModelRetrySettings,
                        ModelSettings, ModelTracing, MultiProvider, OpenAIChatCompletionsModel, OpenAIProvider,
                        OpenAIResponsesModel, RunConfig, Runner, ToolOutputImage, UserError, WebSearchTool,
                        function_tool, retry_policies, set_default_openai_client)
from miniagents.models import connection
from miniagents.upstream import MultiProviderMap, providers
from miniagents.models.responses import build_body
from miniagents.testing import ScriptedModel, assistant_message, function_call
from openai_server import call_item, response_obj, text_item


@function_tool
def lookup(order: str) -> str:
    """Look an order up."""
    return "shipped"


class FakeClient:
    """What ported code passes as openai_client: an object with base_url and api_key (like openai.AsyncOpenAI)."""

    def __init__(self, base_url, api_key="sk-client", organization=None):
        self.base_url, self.api_key, self.organization = base_url, api_key, organization


# --- What a model receives --------------------------------------------------------------------------------------


def test_a_model_receives_the_objects_the_agent_offers_and_a_tracing_mode():
    helper = Agent(name="Helper")
    model = ScriptedModel([[assistant_message('{"response": 3}')]] * 3)
    agent = Agent(name="A", tools=[lookup, WebSearchTool()], handoffs=[helper], model=model, output_type=int)
    Runner.run_sync(agent, "hi")
    call = model.last_call
    assert [type(t) for t in call.tools] == [FunctionTool, WebSearchTool] and call.tools[0] is lookup
    assert isinstance(call.handoffs[0], Handoff) and call.handoffs[0].tool_name == "transfer_to_helper"
    assert isinstance(call.output_schema, AgentOutputSchema) and call.output_schema.output_type is int
    assert call.tool_names == ["lookup", "web_search", "transfer_to_helper"]
    assert call.tracing is ModelTracing.ENABLED and call.tracing.include_data()
    Runner.run_sync(agent, "hi", run_config=RunConfig(trace_include_sensitive_data=False))
    assert model.last_call.tracing is ModelTracing.ENABLED_WITHOUT_DATA
    Runner.run_sync(agent, "hi", run_config=RunConfig(tracing_disabled=True))
    assert model.last_call.tracing.is_disabled()


def test_the_objects_also_read_like_the_specs_the_old_boundary_passed():
    spec = lookup.spec()
    assert lookup["name"] == spec["name"] == "lookup" and lookup.get("parameters") == spec["parameters"]
    assert AgentOutputSchema(int)["strict"] is True and AgentOutputSchema(None).get("schema") is None
    assert WebSearchTool()["type"] == "web_search"


def test_a_web_search_tools_optional_settings_are_sent_under_the_responses_apis_names_only_when_set():
    assert "external_web_access" not in WebSearchTool().spec()
    spec = WebSearchTool(external_web_access=False, search_content_types=["text", "image"]).spec()
    assert spec["external_web_access"] is False and spec["search_content_types"] == ["text", "image"]
    assert WebSearchTool(search_content_types=["image"]).includes == ("web_search_call.results",)


# --- Providers and client objects -------------------------------------------------------------------------------


def test_multi_provider_routes_by_prefix_as_upstream():
    local = OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="k", use_responses=False)
    routes = MultiProviderMap()
    routes.add_provider("local", local)
    provider = MultiProvider(provider_map=routes, openai_base_url="http://127.0.0.1:8/v1", openai_api_key="k",
                             openai_use_responses=True)
    assert routes.has_prefix("local") and routes.get_mapping() == {"local": local}
    assert provider.get_model("local/llama3").model == "llama3"
    assert isinstance(provider.get_model("local/llama3"), OpenAIChatCompletionsModel)
    assert provider.get_model("openai/gpt-4.1").model == "gpt-4.1"
    assert provider.get_model("gpt-4.1") is provider.get_model("openai/gpt-4.1")
    assert MultiProvider(openai_prefix_mode="model_id", openai_api_key="k").get_model("openai/x").model == "openai/x"
    assert MultiProvider(unknown_prefix_mode="model_id", openai_api_key="k").get_model("org/m").model == "org/m"
    with pytest.raises(UserError, match="Unknown prefix: mystery"):
        provider.get_model("mystery/model")
    with pytest.raises(UserError, match="'litellm' prefix needs upstream's litellm extension"):
        provider.get_model("litellm/anthropic/claude")
    with pytest.raises(UserError, match="openai_prefix_mode"):
        MultiProvider(openai_prefix_mode="strip")
    with pytest.raises(UserError, match="unknown_prefix_mode must be one of: 'error', 'model_id'"):
        MultiProvider(unknown_prefix_mode="strip")
    routes.remove_provider("local")
    assert not routes.has_prefix("local")


def test_a_run_without_a_provider_routes_model_names_through_multi_provider(server, monkeypatch):
    monkeypatch.setattr(providers, "_default_provider", None)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.reply({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                               "finish_reason": "stop"}]})
    assert Runner.run_sync(Agent(name="A", model="openai/llama3"), "hello").final_output == "hi"
    assert server.bodies[0]["model"] == "llama3"
    assert isinstance(providers._default_provider, MultiProvider)


def test_openai_client_objects_say_where_requests_go_and_with_which_key(server, monkeypatch):
    model = OpenAIChatCompletionsModel(model="llama3", openai_client=FakeClient(server.url + "/"))
    server.reply({"choices": [{"index": 0, "message": {"role": "assistant", "content": "a"},
                               "finish_reason": "stop"}]})
    assert Runner.run_sync(Agent(name="A", model=model), "hi").final_output == "a"
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-client"
    assert OpenAIResponsesModel("m", FakeClient(server.url)).base_url == server.url
    provider = OpenAIProvider(openai_client=FakeClient(server.url, organization="org-1"))
    assert provider.get_model("m").transport.headers["OpenAI-Organization"] == "org-1"
    with pytest.raises(UserError, match="must have base_url and api_key attributes"):
        OpenAIChatCompletionsModel("m", openai_client=object())
    monkeypatch.setattr(connection, "_default_client", None)
    set_default_openai_client(FakeClient(server.url, api_key="sk-default"))
    default = OpenAIResponsesModel("m")
    assert default.base_url == server.url and default.transport.headers["Authorization"] == "Bearer sk-default"
    assert "sk-default" not in repr(default) + repr((connection._default_client or {}).get("base_url"))


def test_a_key_set_after_a_run_is_the_next_runs_as_upstream_reads_it_per_run(server, monkeypatch):
    from miniagents.upstream import set_default_openai_key

    monkeypatch.setattr(connection, "_default_client", None)
    monkeypatch.setattr(connection, "_default_key", None)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    provider = OpenAIProvider()
    sent = []
    for change in (lambda: set_default_openai_key("sk-key-one"), lambda: set_default_openai_key("sk-key-two"),
                   lambda: set_default_openai_client(FakeClient(server.url, api_key="sk-client-three"))):
        change()
        server.reply({"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]})
        Runner.run_sync(Agent(name="A", model="gpt-4o"), "hi", run_config=RunConfig(model_provider=provider))
        sent.append(server.requests[-1]["headers"]["authorization"])
    assert sent == ["Bearer sk-key-one", "Bearer sk-key-two", "Bearer sk-client-three"]


# --- Hosted tools and structured outputs on the wire -------------------------------------------------------------


def test_hosted_tools_go_on_the_responses_wire_as_configured_with_their_includes():
    files = FileSearchTool(["vs_1"], include_search_results=True)
    body = build_body("m", None, [], ModelSettings(response_include=["reasoning.encrypted_content"]),
                      [lookup, WebSearchTool(), files], None, [])
    assert body["tools"][1:] == [WebSearchTool().spec(), files.spec()]
    assert body["tools"][0]["type"] == "function" and body["tools"][0]["name"] == "lookup"
    assert body["include"] == ["reasoning.encrypted_content", "file_search_call.results"]


def test_a_hosted_tool_cannot_go_to_chat_completions():
    from miniagents.models.chat_completions import build_body as chat_body

    with pytest.raises(UserError, match="hosted tools need the Responses API"):
        chat_body("m", None, [], ModelSettings(), [WebSearchTool()], None, [])


def test_structured_tool_outputs_reach_the_responses_api_as_content_parts(server):
    @function_tool
    def picture() -> ToolOutputImage:
        return ToolOutputImage(image_url="https://x/cat.png")

    server.reply(response_obj([call_item("c1", "picture", "{}")])).reply(response_obj([text_item("a cat")]))
    model = OpenAIResponsesModel("m", base_url=server.url, api_key="k")
    assert Runner.run_sync(Agent(name="A", model=model, tools=[picture]), "look").final_output == "a cat"
    sent = [i for i in server.bodies[1]["input"] if i.get("type") == "function_call_output"]
    assert sent[0]["output"] == [{"type": "input_image", "image_url": "https://x/cat.png"}]


def test_structured_tool_outputs_reach_chat_completions_as_text_and_a_user_message(server):
    @function_tool
    def picture() -> ToolOutputImage:
        return ToolOutputImage(image_url="https://x/cat.png")

    call = {"id": "c1", "type": "function", "function": {"name": "picture", "arguments": "{}"}}
    server.reply({"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                               "finish_reason": "tool_calls"}]})
    server.reply({"choices": [{"index": 0, "message": {"role": "assistant", "content": "a cat"},
                               "finish_reason": "stop"}]})
    model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key="k")
    assert Runner.run_sync(Agent(name="A", model=model, tools=[picture]), "look").final_output == "a cat"
    messages = server.bodies[1]["messages"]
    assert messages[-2]["role"] == "tool" and "attachment" in messages[-2]["content"]
    assert messages[-1]["role"] == "user" and messages[-1]["content"][1]["image_url"]["url"] == "https://x/cat.png"


# --- Runner-managed retries over the adapters ----------------------------------------------------------------------


def unavailable():
    return {"error": {"message": "overloaded", "type": "server_error"}}


def test_without_retry_settings_the_adapter_retries_on_its_own(server):
    for _ in range(3):
        server.reply(unavailable(), status=503)
    model = OpenAIResponsesModel("m", base_url=server.url, api_key="k", max_retries=2)
    with pytest.raises(Exception, match="503"):
        Runner.run_sync(Agent(name="A", model=model), "hi")
    assert len(server.requests) == 3


def test_with_retry_settings_the_run_retries_and_the_adapter_makes_one_attempt_per_call(server):
    server.reply(unavailable(), status=503).reply(unavailable(), status=503).reply(response_obj([text_item("ok")]))
    settings = ModelSettings(retry=ModelRetrySettings(max_retries=2, backoff={"initial_delay": 0},
                                                      policy=retry_policies.provider_suggested()))
    model = OpenAIResponsesModel("m", base_url=server.url, api_key="k", max_retries=5)
    result = Runner.run_sync(Agent(name="A", model=model, model_settings=settings), "hi")
    assert result.final_output == "ok" and len(server.requests) == 3
    server.reply(unavailable(), status=503)
    no_retry = ModelSettings(retry=ModelRetrySettings(max_retries=0))
    with pytest.raises(Exception, match="503"):
        Runner.run_sync(Agent(name="A", model=model, model_settings=no_retry), "hi")
    assert len(server.requests) == 4  # an explicit zero budget turns the adapter's retries off too


def test_the_adapters_advice_is_their_own_retry_rule():
    from miniagents import ModelHTTPError, ModelTimeoutError
    from miniagents.retry.advice import http_advice as advice

    assert advice(ModelHTTPError(503, "x")).suggested is True
    assert advice(ModelHTTPError(429, "x")).suggested is True
    assert advice(ModelHTTPError(400, "x")).suggested is False
    assert advice(ModelHTTPError(429, "x", code="insufficient_quota")).suggested is False
    assert advice(ModelHTTPError(None, "reset")).suggested is True
    assert advice(ModelHTTPError(None, "x", code="cancelled")).suggested is False
    assert advice(ModelTimeoutError(5)).suggested is True
    assert advice(ValueError("x")) is None
