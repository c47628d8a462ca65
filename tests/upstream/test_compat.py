"""Upstream's import paths, type aliases and the explained error for left-out features (miniagents/compat.py)."""
import importlib
import pathlib
import re
import subprocess
import sys
import typing

import pytest

import doc_pages
import miniagents
from miniagents import seams
from miniagents import upstream as compat
from miniagents.testing import ScriptedModel, assistant_message, function_call

PORTING = doc_pages.read("docs/porting.md")  # what ports, what differs, what is left out
LEFT_OUT_NAMES = sorted(name for names, _ in compat.LEFT_OUT.values() for name in names.split())
LEFT_OUT_PATHS = sorted(path for _, paths in compat.LEFT_OUT.values() for path in paths.split())


@pytest.mark.parametrize("path", sorted(compat.UPSTREAM_PATHS))
def test_every_upstream_path_imports_and_every_name_it_lists_reads(path):
    module = importlib.import_module("miniagents." + path)
    names = compat.UPSTREAM_PATHS[path].split()
    assert sorted(module.__all__) == sorted(entry.partition("=")[0] for entry in names)
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None, name
        assert name in dir(module)
        namespace = {}
        exec(f"from miniagents.{path} import {name}", namespace)
        assert namespace[name] is value


def test_a_path_that_is_a_real_miniagents_module_is_left_to_that_module():
    assert not set(compat.UPSTREAM_PATHS) & {"run", "items", "tool", "agent", "handoffs", "testing", "result"}
    for path in compat.UPSTREAM_PATHS:
        spec = importlib.util.find_spec("miniagents." + path)
        assert isinstance(importlib.import_module("miniagents." + path), compat.UpstreamPathModule), (path, spec)
    import miniagents.run

    assert not isinstance(miniagents.run, compat.UpstreamPathModule)
    assert miniagents.run.Runner is miniagents.Runner
    assert sys.meta_path[-1] is seams.ShellFinder  # last: real modules are found first


def test_every_dotted_path_has_its_parent_package():
    for path in compat.UPSTREAM_PATHS:
        parent = path.rpartition(".")[0]
        assert not parent or parent in compat.UPSTREAM_PATHS or parent == "models", path


def test_upstream_names_are_read_when_accessed_not_copied(monkeypatch):
    import miniagents.exceptions
    import miniagents.extensions.handoff_filters

    marker = type("Moved", (Exception,), {})
    monkeypatch.setattr(miniagents, "UserError", marker)
    assert miniagents.exceptions.UserError is marker
    monkeypatch.setattr("miniagents.upstream.handoff_helpers.remove_all_tools", marker)
    assert miniagents.extensions.handoff_filters.remove_all_tools is marker


def test_the_names_upstream_code_imports_most_are_the_miniagents_objects():
    from miniagents.decorators import tool
    from miniagents.memory import SQLiteSession
    from miniagents.memory.session import Session
    from miniagents.run_config import RunConfig
    from miniagents.tool_guardrails import ToolInputGuardrailResult

    assert tool is miniagents.function_tool
    assert SQLiteSession is miniagents.SQLiteSession and Session is miniagents.Session
    assert RunConfig is miniagents.RunConfig
    assert ToolInputGuardrailResult is miniagents.ToolInputGuardrailResult


def test_an_upstream_path_says_which_name_it_lacks():
    import miniagents.memory

    with pytest.raises(AttributeError, match="'miniagents.memory' has no attribute 'Nope'"):
        miniagents.memory.Nope
    with pytest.raises(ImportError, match="cannot import name 'Nope'"):
        exec("from miniagents.memory import Nope", {})


def test_import_miniagents_as_agents_reaches_paths_and_aliases():
    import miniagents as agents

    assert agents.memory.SQLiteSession is agents.SQLiteSession
    assert agents.exceptions.MaxTurnsExceeded is agents.MaxTurnsExceeded
    assert agents.TResponseInputItem == typing.Dict[str, typing.Any]
    assert set(typing.get_args(agents.StreamEvent)) == {
        agents.RawResponsesStreamEvent, agents.RunItemStreamEvent, agents.AgentUpdatedStreamEvent}
    assert agents.TContext in agents.RunContextWrapper.__parameters__
    assert typing.get_args(agents.ToolNotFoundBehavior) == ("raise_error", "return_error_to_model")
    assert typing.get_args(agents.ReasoningItemIdPolicy) == ("preserve", "omit")
    assert typing.get_args(agents.ToolNameCollisionPolicy) == ("warn", "error")
    assert set(agents.RunErrorHandlers.__annotations__) == {"max_turns", "model_refusal", "invalid_final_output",
                                                            "usage_limit"}  # the last is miniagents' own
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        agents.Nope


def test_every_top_level_alias_reads_and_is_in_all():
    for name in miniagents._LAZY:
        assert getattr(miniagents, name) is not None
        assert name in miniagents.__all__
    namespace = {}
    exec("from miniagents import *", namespace)
    assert {"TResponseInputItem", "StreamEvent", "RunErrorData"} <= set(namespace)


@pytest.mark.parametrize("name", LEFT_OUT_NAMES)
def test_a_left_out_name_raises_the_explained_error(name):
    feature = next(f for f, (names, _) in compat.LEFT_OUT.items() if name in names.split())
    assert not hasattr(miniagents, name)
    with pytest.raises(AttributeError) as attribute_error:
        getattr(miniagents, name)
    with pytest.raises(ImportError) as import_error:
        exec(f"from miniagents import {name}", {})
    for error in (attribute_error.value, import_error.value):
        assert isinstance(error, compat.NotProvided)
        assert f"{name} is part of {feature}" in str(error)
        assert "miniagents does not provide" in str(error) and "'What is left out'" in str(error)


@pytest.mark.parametrize("path", LEFT_OUT_PATHS)
def test_a_left_out_module_path_raises_the_explained_error(path):
    feature = compat._FEATURE_OF_PATH[path]
    for statement in (f"import miniagents.{path}", f"from miniagents.{path} import Anything",
                      f"import miniagents.{path}.deeper"):
        expected = f"miniagents.{path} is part of {feature}, which miniagents does not provide"
        with pytest.raises(ImportError, match=re.escape(expected)):
            exec(statement, {})
    top = path.split(".")[0]
    if top not in compat.UPSTREAM_PATHS:
        assert not hasattr(miniagents, top)


def test_a_left_out_name_under_an_upstream_path_is_explained_too():
    with pytest.raises(ImportError, match="MCPToolCancellationError is part of MCP servers"):
        exec("from miniagents.exceptions import MCPToolCancellationError", {})
    import miniagents.exceptions

    assert not hasattr(miniagents.exceptions, "MCPToolCancellationError")


def test_the_section_the_error_points_to_lists_every_left_out_feature():
    section = doc_pages.section(PORTING, "## What is left out")
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(compat.LEFT_OUT) - 1  # realtime and voice share a row
    for feature in compat.LEFT_OUT:
        assert feature.split(" ")[0].lower() in section.lower(), feature


def test_importing_miniagents_builds_no_upstream_path_and_loads_no_alias_module():
    code = ("import sys, miniagents; print(sorted(m for m in sys.modules if m.startswith('miniagents.') and "
            "m.split('.')[1] in ('aliases', 'handoff_helpers', 'memory', 'exceptions', 'decorators')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- remove_all_tools and the handoff prompt (upstream's agents.extensions) -------------------------


def test_remove_all_tools_shows_the_next_agent_the_conversation_only():
    from miniagents.extensions.handoff_filters import remove_all_tools

    billing_model = ScriptedModel([[assistant_message("Billing here.")]])
    billing = miniagents.Agent(name="Billing", model=billing_model)

    @miniagents.function_tool
    def lookup(order: int) -> str:
        return f"order {order}: shipped"

    triage_model = ScriptedModel([
        [function_call("lookup", {"order": 7}, call_id="c1")],
        [assistant_message("Passing you on."), function_call("transfer_to_billing", {}, call_id="h1")],
    ])
    triage = miniagents.Agent(name="Triage", model=triage_model, tools=[lookup],
                              handoffs=[miniagents.handoff(billing, input_filter=remove_all_tools)])
    history = [{"role": "user", "content": "earlier"},
               {"type": "function_call", "call_id": "old", "name": "lookup", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "old", "output": "x"},
               {"role": "user", "content": "Refund order 7"}]
    result = miniagents.Runner.run_sync(triage, history)
    assert result.final_output == "Billing here."
    sent = billing_model.calls[0].input
    assert [item.get("type") for item in sent if item.get("type")] == ["message"]
    assert [item.get("content") for item in sent if item.get("role") == "user"] == ["earlier", "Refund order 7"]


def test_remove_all_tools_drops_every_hosted_tools_traffic_too():
    from miniagents.extensions.handoff_filters import remove_all_tools

    hosted = ["file_search_call", "web_search_call", "code_interpreter_call", "image_generation_call",
              "computer_call", "computer_call_output", "local_shell_call", "mcp_call", "mcp_list_tools"]
    history = [{"role": "user", "content": "hi"}] + [{"type": kind, "id": kind} for kind in hosted]
    data = miniagents.HandoffInputData(input_history=tuple(history), pre_handoff_items=(), new_items=())
    assert remove_all_tools(data).input_history == ({"role": "user", "content": "hi"},)


def test_remove_all_tools_keeps_a_string_history_and_filters_input_items():
    from miniagents.extensions.handoff_filters import remove_all_tools
    from miniagents.items import MessageOutputItem, ToolCallItem

    message = MessageOutputItem(agent=None, raw_item=assistant_message("hi"))
    call = ToolCallItem(agent=None, raw_item=function_call("f", {}, call_id="c"))
    data = miniagents.HandoffInputData(input_history="hello", pre_handoff_items=(call, message),
                                       new_items=(call,), input_items=(message, call))
    filtered = remove_all_tools(data)
    assert filtered.input_history == "hello"
    assert filtered.pre_handoff_items == (message,) and filtered.new_items == ()
    assert filtered.input_items == (message,)
    assert remove_all_tools(data.clone(input_items=None)).input_items is None


def test_prompt_with_handoff_instructions_puts_the_prefix_first():
    from miniagents.extensions.handoff_prompt import RECOMMENDED_PROMPT_PREFIX, prompt_with_handoff_instructions

    assert RECOMMENDED_PROMPT_PREFIX.startswith("# System context\n")
    assert "transfer_to_<agent_name>" in RECOMMENDED_PROMPT_PREFIX
    assert prompt_with_handoff_instructions("Be brief.") == RECOMMENDED_PROMPT_PREFIX + "\n\nBe brief."


def test_every_upstream_top_level_name_exists_or_raises_the_explained_error():
    """docs/porting.md: of upstream's 253 top-level names, 162 exist and 91 raise the explained error."""
    path = pathlib.Path(__file__).parent / "porting" / "upstream_top_level.txt"
    names = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    exist, explained = [], []
    for name in names:
        try:
            getattr(miniagents, name)
            exist.append(name)
        except compat.NotProvided:
            explained.append(name)
    assert (len(names), len(exist), len(explained)) == (253, 162, 91)
    assert "Of upstream's 253 top-level names (openai-agents 0.24.0), 162 exist" in PORTING.replace("\n", " ")
