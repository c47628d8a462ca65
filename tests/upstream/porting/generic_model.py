"""A generic scripted model: answers any agent without a script, so that upstream's example programs run
offline, unchanged, on upstream's SDK and on miniagents alike.

`python generic_model.py agents|miniagents PROGRAM_ARGS...` makes every model name the default provider
resolves a `ScriptedModel` (the package's own `testing` module) whose every step is this responder, then
runs the program: with upstream's `agents` as installed, or through `python -m miniagents.upstream`.

The responder plays a cooperative model: after the user's last message it calls, once each, the function
tools whose names share the most words with that message (arguments made from the tool's schema), then
hands off once per conversation, then answers: JSON made from the output schema, or a line of text.
"""
import itertools
import json
import os
import re
import runpy
import sys

_ids = itertools.count(1)
_handed_off = set()  # conversations (first input text) that took a handoff already


def _field(item, key):
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def sample(schema, defs=None, depth=0):
    """A value that fits the JSON schema `schema` (first choices: first enum value, False, 1, "example")."""
    defs = defs if defs is not None else {**schema.get("$defs", {}), **schema.get("definitions", {})}
    if depth > 8:
        return None
    if "$ref" in schema:
        return sample(defs.get(schema["$ref"].rpartition("/")[2], {}), defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            choices = [choice for choice in schema[key] if choice.get("type") != "null"] or schema[key]
            return sample(choices[0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {name: sample(sub, defs, depth + 1) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [sample(schema.get("items", {}), defs, depth + 1) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return float(max(1, schema.get("minimum", 1)))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "example"


def _most_relevant(tools, request):
    """The tools whose names share the most words with the request (all of them when none shares one)."""
    words = set(re.findall(r"[a-z]+", json.dumps(request, default=str).lower()))
    score = {tool.name: len(set(tool.name.lower().split("_")) & words) for tool in tools}
    best = max(score.values(), default=0)
    return [tool for tool in tools if score[tool.name] == best]


def respond(call, testing):
    """The output items for one model call."""
    items = [{"role": "user", "content": call.input}] if isinstance(call.input, str) else list(call.input)
    users = [n for n, item in enumerate(items) if _field(item, "role") == "user"]
    since = items[users[-1] + 1:] if users else items
    called = {_field(item, "name") for item in since if _field(item, "type") == "function_call"}
    tool_choice = getattr(call.model_settings, "tool_choice", None)
    tools = [tool for tool in call.tools if hasattr(tool, "params_json_schema")]
    tools = _most_relevant(tools, _field(items[users[-1]], "content") if users else "")
    tools = [tool for tool in tools if tool.name not in called]
    if tools and tool_choice != "none":
        return [testing.function_call(tool.name, sample(tool.params_json_schema), call_id=f"call_{next(_ids)}")
                for tool in tools]
    conversation = json.dumps(_field(items[0], "content"), default=str) if items else ""
    if call.handoffs and conversation not in _handed_off:
        _handed_off.add(conversation)
        handoff = call.handoffs[0]
        arguments = sample(handoff.input_json_schema or {"type": "object", "properties": {}})
        return [testing.function_call(handoff.tool_name, arguments, call_id=f"call_{next(_ids)}")]
    schema = call.output_schema
    if schema is not None and not schema.is_plain_text():
        return [testing.assistant_message(json.dumps(sample(schema.json_schema())))]
    return [testing.assistant_message(f"A generic scripted answer ({next(_ids)}).")]


def generic_model(testing):
    """A ScriptedModel of `testing` that never runs out of steps."""
    model = testing.ScriptedModel()

    def responder(call):
        model.enqueue(testing.ModelStep(responder=responder))
        return respond(call, testing)

    model.enqueue(testing.ModelStep(responder=responder))
    return model


def main(package, argv):
    if package == "agents":
        import agents.testing as testing
        from agents.models.multi_provider import MultiProvider
        from agents.models.openai_provider import OpenAIProvider
    else:
        import miniagents.testing as testing
        from miniagents.models.provider import DefaultProvider
        from miniagents.upstream.providers import MultiProvider, OpenAIProvider
    for provider in (MultiProvider, OpenAIProvider) + ((DefaultProvider,) if package != "agents" else ()):
        provider.get_model = lambda self, model_name=None: generic_model(testing)
    if argv[0] == "-m":  # as `python -m` sets it: the current directory first
        sys.path[0] = os.getcwd()
    if package == "agents":
        sys.argv = argv[1:] if argv[0] == "-m" else argv
        if argv[0] == "-m":
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
        return 0
    from miniagents.upstream.__main__ import main as run_on_miniagents

    return run_on_miniagents(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
