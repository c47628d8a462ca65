"""Capabilities (miniagents/capabilities/): the per-run clones, what `prepare` collects for the Runner
(tools, instruction fragments, request parameters), and the fail-fast checks. Issue 14.

`Agent(capabilities=...)` and the per-run execution copy of the agent are the Runner's part; these tests
pin the interface it calls.
"""
from __future__ import annotations

import pytest

from miniagents import Agent, Capability, Handoff, Runner, UserError, Workspace, function_tool, handoff
from miniagents.capabilities import prepare
from miniagents.testing import ScriptedModel, assistant_message, function_call


class Notes(Capability):
    """A capability with per-run state: it remembers what the model noted during one run."""

    type = "notes"

    def __init__(self):
        self.noted = []
        self.settings = {"nested": {"a": 1}}

    def tools(self):
        noted = self.noted

        @function_tool
        def note(text: str) -> str:
            """Remember a note for this run."""
            noted.append(text)
            return f"{len(noted)} notes"

        return [note]

    async def instructions(self, manifest=None):
        return "Use note() to remember facts."

    def sampling_params(self, sampling_params):
        return {"metadata": {"notes": "on", "model": sampling_params.get("model")}}


class ResponsesOnly(Capability):
    type = "compaction"
    model_adapters = ("OpenAIResponsesModel",)

    def required_capability_types(self):
        return {"notes"}


def test_the_base_capability_adds_nothing():
    base = Capability()
    prepared = prepare([base], ScriptedModel())
    assert prepared.tools == [] and prepared.instructions is None and prepared.extra_args is None
    assert base.process_context([{"role": "user", "content": "hi"}]) == [{"role": "user", "content": "hi"}]
    assert base.supports_model(object()) and base.required_capability_types() == set()


def test_each_run_gets_fresh_clones_so_nothing_leaks_between_runs():
    shared = Notes()
    first, second = prepare([shared], ScriptedModel()), prepare([shared], ScriptedModel())
    assert first.capabilities[0] is not shared and first.capabilities[0] is not second.capabilities[0]
    first.tools[0].on_invoke_tool(None, '{"text": "order A-1"}')
    assert first.capabilities[0].noted == ["order A-1"]
    assert second.capabilities[0].noted == [] and shared.noted == []
    first.capabilities[0].settings["new"] = 1
    assert shared.settings == {"nested": {"a": 1}}


class Scrub(Capability):
    """A policy: an instruction, and the user's words kept from the model."""

    type = "scrub"

    def instructions(self, manifest=None):
        return "Never reveal the secret."

    def process_context(self, items):
        return [dict(item, content="[scrubbed]") if item.get("role") == "user" else item for item in items]


@pytest.mark.parametrize("by_hand", [False, True], ids=["handoff", "hand-built-Handoff"])
def test_an_agent_met_during_the_run_has_its_capabilities(by_hand):
    """An agent only a hand-built `Handoff` reaches joins the run when it is handed to: its capabilities are made
    then, as for an agent the run found when it started (its instructions, its tools, what its model is shown)."""
    model = ScriptedModel([[assistant_message("B done")]])
    b = Agent(name="B", instructions="I am B.", capabilities=[Scrub(), Notes()], model=model)
    to_b = Handoff(tool_name="to_b", tool_description="Go to B.", input_json_schema={}, agent_name="B",
                   on_invoke_handoff=lambda ctx, arguments: b) if by_hand else handoff(b, tool_name_override="to_b")
    a = Agent(name="A", handoffs=[to_b], model=ScriptedModel([[function_call("to_b", {}, call_id="h")]]))
    assert Runner.run_sync(a, "my secret is 42").final_output == "B done"
    call = model.calls[0]
    assert call.system_instructions == "I am B.\n\nNever reveal the secret.\n\nUse note() to remember facts."
    assert [tool.name for tool in call.tools] == ["note"]
    assert [item["content"] for item in call.input if item.get("role") == "user"] == ["[scrubbed]"]


def test_prepare_collects_tools_instructions_and_merged_request_parameters():
    model = ScriptedModel()
    model.model = "gpt-4o-mini"
    prepared = prepare([Notes(), Workspace(".")], model, extra_args={"metadata": {"team": "support"}, "seed": 7})
    assert [t.name for t in prepared.tools] == ["note", "list_files", "read_file", "search"]
    assert prepared.instructions.startswith("Use note() to remember facts.\n\nYou can read the files")
    assert prepared.extra_args == {"metadata": {"team": "support", "notes": "on", "model": "gpt-4o-mini"}, "seed": 7}


def test_a_capability_the_model_adapter_cannot_serve_fails_before_any_model_call():
    model = ScriptedModel()
    with pytest.raises(UserError) as caught:
        prepare([Notes(), ResponsesOnly()], model)
    assert str(caught.value) == ("capability ResponsesOnly ('compaction') cannot run on the model adapter "
                                 "ScriptedModel; it serves OpenAIResponsesModel")
    assert model.calls == ()


def test_a_subclass_of_a_named_adapter_qualifies():
    class MyResponses(ScriptedModel):
        pass

    class ScriptedOnly(Capability):
        model_adapters = ("ScriptedModel",)

    assert prepare([ScriptedOnly()], MyResponses()).capabilities


def test_a_missing_required_capability_is_named():
    class Fine(ResponsesOnly):
        model_adapters = None

    with pytest.raises(UserError, match="Fine requires missing capabilities: notes"):
        prepare([Fine()], ScriptedModel())
    assert prepare([Fine(), Notes()], ScriptedModel()).capabilities


def test_only_capability_objects_are_accepted():
    with pytest.raises(UserError, match="capabilities must be Capability objects, got str"):
        prepare(["workspace"], ScriptedModel())


def test_the_workspace_instruction_fragment_names_its_tools(tmp_path):
    assert "list_files, read_file and search" in Workspace(tmp_path).instructions()
    assert "write_file" not in Workspace(tmp_path).instructions()
    assert "write_file creates or replaces a file" in Workspace(tmp_path, writable=True).instructions()
