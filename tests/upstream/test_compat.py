"""The upstream shell (miniagents.upstream): upstream's names and module paths, and the explained error for
left-out features."""
import importlib
import pathlib
import re
import subprocess
import sys

import pytest

import doc_pages
import miniagents
import miniagents.upstream as agents
from miniagents.testing import ScriptedModel, assistant_message, function_call

PORTING = doc_pages.read("docs/porting.md")  # what ports, what differs, what is left out
LEFT_OUT_NAMES = sorted(name for names, _ in agents.LEFT_OUT.values() for name in names.split())
LEFT_OUT_PATHS = sorted(path for _, paths in agents.LEFT_OUT.values() for path in paths.split())


@pytest.mark.parametrize("path", sorted(agents.PATHS))
def test_every_upstream_path_imports_and_every_name_it_lists_reads(path):
    module = importlib.import_module("miniagents.upstream." + path)
    for entry in agents.PATHS[path].split():
        name = entry.partition("=")[0]
        value = getattr(module, name)
        assert value is not None and name in module.__all__, name
        namespace = {}
        exec(f"from miniagents.upstream.{path} import {name}", namespace)
        assert namespace[name] is value


def test_a_path_of_a_kernel_module_has_its_names_and_upstreams_extra_ones():
    from miniagents.upstream import run

    assert run.Runner is agents.Runner and run.Runner is not miniagents.Runner  # upstream's, through AgentRunner
    assert run.Options is miniagents.run.Options  # the kernel module's own names too
    from miniagents.upstream.items import ItemHelpers, MessageOutputItem

    assert ItemHelpers is agents.ItemHelpers and MessageOutputItem is miniagents.MessageOutputItem
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        run.Nope


def test_a_name_neither_upstream_nor_left_out_is_pythons_plain_attribute_error():
    """Only a name upstream has and this project left out gets the explained error; any other is the usual
    AttributeError, so `hasattr`, `getattr(..., default)` and tools probing for dunders behave as with any module."""
    for name in ("Nope", "__wrapped__"):
        with pytest.raises(AttributeError) as missing:
            getattr(agents, name)
        assert type(missing.value) is AttributeError
        assert str(missing.value) == f"module {agents.__name__!r} has no attribute {name!r}"
        assert getattr(agents, name, "absent") == "absent"


def test_upstream_names_are_read_when_accessed_not_copied(monkeypatch):
    from miniagents.upstream import exceptions
    from miniagents.upstream.extensions import handoff_filters

    marker = type("Moved", (Exception,), {})
    monkeypatch.setattr(miniagents, "UserError", marker)
    assert exceptions.UserError is marker
    monkeypatch.setattr("miniagents.upstream.handoff_helpers.remove_all_tools", marker)
    assert handoff_filters.remove_all_tools is marker


def test_the_names_upstream_code_imports_most_are_the_kernels_objects_or_the_shells():
    from miniagents.upstream.decorators import tool
    from miniagents.upstream.memory import SQLiteSession
    from miniagents.upstream.run_config import RunConfig
    from miniagents.upstream.tool_guardrails import ToolInputGuardrailResult

    assert tool is agents.function_tool and SQLiteSession is miniagents.SQLiteSession
    assert issubclass(RunConfig, miniagents.RunConfig) and issubclass(agents.Agent, miniagents.Agent)
    assert ToolInputGuardrailResult is miniagents.ToolInputGuardrailResult


def test_an_unknown_name_or_path_says_so():
    with pytest.raises(AttributeError, match="'miniagents.upstream.memory' has no attribute 'Nope'"):
        agents.memory.Nope
    with pytest.raises(ImportError, match="cannot import name 'Nope'"):
        exec("from miniagents.upstream.memory import Nope", {})
    with pytest.raises(ModuleNotFoundError):
        exec("import miniagents.upstream.no_such_module", {})


@pytest.mark.parametrize("name", LEFT_OUT_NAMES)
def test_a_left_out_name_raises_the_explained_error(name):
    feature = next(f for f, (names, _) in agents.LEFT_OUT.items() if name in names.split())
    assert not hasattr(agents, name)
    with pytest.raises(ImportError) as import_error:
        exec(f"from miniagents.upstream import {name}", {})
    assert isinstance(import_error.value, agents.NotProvided)
    assert f"{name} is part of {feature}" in str(import_error.value) and "'What is left out'" in str(import_error.value)


@pytest.mark.parametrize("path", LEFT_OUT_PATHS)
def test_a_left_out_module_path_raises_the_explained_error(path):
    feature = agents._FEATURE_OF_PATH[path]
    for statement in (f"import miniagents.upstream.{path}", f"from miniagents.upstream.{path} import Anything"):
        with pytest.raises(agents.NotProvidedImportError, match=f"{path} is part of {feature}"):
            exec(statement, {})


LEFT_OUT_KEYWORDS = sorted((name, keyword) for name, keywords in agents.LEFT_OUT_KEYWORDS.items()
                           for keyword in keywords)


def echo(text: str) -> str:
    return text


CALLS = {  # each callable of LEFT_OUT_KEYWORDS, called with the keywords given
    "RunConfig": lambda **keywords: agents.RunConfig(**keywords),
    "function_tool": lambda **keywords: agents.function_tool(echo, **keywords),
    "Agent.as_tool": lambda **keywords: agents.Agent(name="a").as_tool("t", "d", **keywords),
}


@pytest.mark.parametrize("name, keyword", LEFT_OUT_KEYWORDS)
def test_a_left_out_keyword_raises_the_explained_type_error(name, keyword):
    """An upstream keyword of a left-out feature names the keyword and the feature, as a TypeError (what Python
    raises for an unexpected keyword, so `except TypeError` still catches it)."""
    feature = agents.LEFT_OUT_KEYWORDS[name][keyword]
    assert feature in agents.LEFT_OUT
    with pytest.raises(agents.NotProvidedTypeError) as refused:
        CALLS[name](**{keyword: None})
    assert isinstance(refused.value, TypeError) and isinstance(refused.value, agents.NotProvided)
    assert f"{name}({keyword}=...) is part of {feature}" in str(refused.value)
    assert "docs/porting.md" in str(refused.value) and "'What is left out'" in str(refused.value)


@pytest.mark.parametrize("name", sorted(agents.LEFT_OUT_KEYWORDS))
def test_a_keyword_upstream_never_had_is_pythons_plain_type_error_and_a_taken_one_works(name):
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_keyword'") as unknown:
        CALLS[name](no_such_keyword=1)
    assert type(unknown.value) is TypeError
    taken = {"RunConfig": {"workflow_name": "w"}, "function_tool": {"name_override": "t2"},
             "Agent.as_tool": {"max_turns": 3}}[name]
    assert CALLS[name](**taken) is not None


def test_a_kernel_without_the_shell_points_at_it_for_an_upstream_name():
    with pytest.raises(AttributeError, match="may be in its upstream shell, miniagents.upstream"):
        miniagents.ItemHelpers


def test_the_section_the_error_points_to_lists_every_left_out_feature():
    section = doc_pages.section(PORTING, "## What is left out")
    for feature in agents.LEFT_OUT:
        assert feature.split(" ")[0].lower() in section.lower(), feature


def test_importing_miniagents_loads_nothing_of_the_shell():
    code = "import sys, miniagents; print(sorted(m for m in sys.modules if m.startswith('miniagents.upstream')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


AGAIN = {"imported anew": """
        for name in [name for name in sys.modules if name.startswith("miniagents.upstream")]:
            del sys.modules[name]""", "reloaded": """
        importlib.reload(miniagents.upstream)"""}


@pytest.mark.parametrize("again", AGAIN)
def test_the_shell_loaded_twice_applies_its_rules_once_per_run(again):
    """A program (or test runner) that drops the shell from sys.modules and imports it again, or reloads it: its
    plugins were registered twice, and upstream's callbacks ran twice in every run."""
    code = """if True:
        import importlib, sys
        import miniagents.upstream""" + AGAIN[again] + """
        from miniagents.upstream import Agent, RunConfig, Runner
        from miniagents.testing import ScriptedModel, assistant_message
        calls = []
        def keep(data):
            calls.append(1)
            return data.model_data
        agent = Agent(name="A", model=ScriptedModel([[assistant_message("ok")]]))
        Runner.run_sync(agent, "hi", run_config=RunConfig(call_model_input_filter=keep))
        print(len(calls))
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "1"


def test_every_upstream_top_level_name_exists_or_raises_the_explained_error():
    """docs/porting.md gives the figures: of upstream's top-level names, how many exist and how many are explained."""
    path = pathlib.Path(__file__).parent / "porting" / "upstream_top_level.txt"
    names = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    exist, explained, missing = [], [], []
    for name in names:
        try:
            getattr(agents, name)
            exist.append(name)
        except agents.NotProvided:
            explained.append(name)
        except AttributeError:
            missing.append(name)
    figures = f"Of upstream's {len(names)} top-level names (openai-agents 0.24.0), {len(exist)} exist"
    assert figures in PORTING.replace("\n", " "), (len(names), len(exist), len(explained), missing)
    assert f"{len(explained)} raise the explained error" in PORTING.replace("\n", " ")


# --- remove_all_tools and the handoff prompt (upstream's agents.extensions) -------------------------


def test_remove_all_tools_shows_the_next_agent_the_conversation_only():
    from miniagents.upstream.extensions.handoff_filters import remove_all_tools

    billing_model = ScriptedModel([[assistant_message("Billing here.")]])
    billing = agents.Agent(name="Billing", model=billing_model)

    @agents.function_tool
    def lookup(order: int) -> str:
        return f"order {order}: shipped"

    triage_model = ScriptedModel([
        [function_call("lookup", {"order": 7}, call_id="c1")],
        [assistant_message("Passing you on."), function_call("transfer_to_billing", {}, call_id="h1")],
    ])
    triage = agents.Agent(name="Triage", model=triage_model, tools=[lookup],
                          handoffs=[agents.handoff(billing, input_filter=remove_all_tools)])
    history = [{"role": "user", "content": "earlier"},
               {"type": "function_call", "call_id": "old", "name": "lookup", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "old", "output": "x"},
               {"role": "user", "content": "Refund order 7"}]
    result = agents.Runner.run_sync(triage, history)
    assert result.final_output == "Billing here."
    sent = billing_model.calls[0].input
    assert [item.get("type") for item in sent if item.get("type")] == ["message"]
    assert [item.get("content") for item in sent if item.get("role") == "user"] == ["earlier", "Refund order 7"]


def test_remove_all_tools_drops_every_hosted_tools_traffic_too():
    from miniagents.upstream.extensions.handoff_filters import remove_all_tools

    hosted = ["file_search_call", "web_search_call", "code_interpreter_call", "image_generation_call",
              "computer_call", "computer_call_output", "local_shell_call", "mcp_call", "mcp_list_tools"]
    history = [{"role": "user", "content": "hi"}] + [{"type": kind, "id": kind} for kind in hosted]
    data = miniagents.HandoffInputData(input_history=tuple(history), pre_handoff_items=(), new_items=())
    assert remove_all_tools(data).input_history == ({"role": "user", "content": "hi"},)


def test_remove_all_tools_keeps_a_string_history_and_filters_input_items():
    from miniagents.items import MessageOutputItem, ToolCallItem
    from miniagents.upstream.extensions.handoff_filters import remove_all_tools

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
    from miniagents.upstream.extensions.handoff_prompt import RECOMMENDED_PROMPT_PREFIX, \
        prompt_with_handoff_instructions

    assert RECOMMENDED_PROMPT_PREFIX.startswith("# System context\n")
    assert "transfer_to_<agent_name>" in RECOMMENDED_PROMPT_PREFIX
    assert prompt_with_handoff_instructions("Be brief.") == RECOMMENDED_PROMPT_PREFIX + "\n\nBe brief."


def test_the_shells_own_plugins_are_read_from_their_modules():
    """Not upstream's names, so no list of upstream's checks them: `PromptPlugin` left out of the shell's name map
    (`agents.NAMES`) went unnoticed (a generated mutant survived)."""
    from miniagents.upstream.runner import UpstreamPlugin
    from miniagents.upstream.stored_prompts import PromptPlugin

    assert (agents.PromptPlugin, agents.UpstreamPlugin) == (PromptPlugin, UpstreamPlugin)


def test_every_name_porting_says_left_the_kernel_for_the_shell_reads_from_it():
    """docs/porting.md's "Names that left the kernel": each name it says is now in `miniagents.upstream` reads from
    it (`HostedTool` left out of the shell's name map, `agents.NAMES`, went unnoticed: a generated mutant)."""
    rows = [line.split(" | ") for line in doc_pages.section(PORTING, "## Names that left the kernel").splitlines()
            if line.startswith("| `")]
    names = [name for first, now, *_ in rows if now == "`miniagents.upstream`"
             for name in re.findall(r"`(\w+)`", first)]
    assert "HostedTool" in names and len(names) > 20, names
    assert [name for name in names if getattr(agents, name, None) is None] == []
