"""A tool returning ToolOutputImage / ToolOutputText: the model receives input_image / input_text parts."""
from agents import Agent, Runner, ToolOutputImage, ToolOutputText, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def snapshot() -> ToolOutputImage:
    """Take a picture."""
    return ToolOutputImage(image_url="https://example.com/cat.png", detail="low")


@function_tool
def describe() -> list:
    """Describe with text and an image."""
    return [ToolOutputText(text="a cat"), {"type": "image", "image_url": "https://example.com/cat.png"}]


model = ScriptedModel([[function_call("snapshot", {}, call_id="c1"), function_call("describe", {}, call_id="c2")],
                       [assistant_message("A cat.")]])
result = Runner.run_sync(Agent(name="A", tools=[snapshot, describe], model=model), "what is it?")
outputs = {item["call_id"]: item["output"] for item in model.last_call.input
           if item.get("type") == "function_call_output"}
assert outputs["c1"] == [{"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"}]
assert outputs["c2"] == [{"type": "input_text", "text": "a cat"},
                         {"type": "input_image", "image_url": "https://example.com/cat.png"}]
assert isinstance(result.new_items[2].output, ToolOutputImage)
print("ok")
