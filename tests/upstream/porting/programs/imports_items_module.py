"""agents.items also holds the response type aliases and ModelResponse (upstream tests import them there)."""
from agents import Agent
from agents.items import (ItemHelpers, MessageOutputItem, ModelResponse, TResponseInputItem, TResponseOutputItem,
                          ToolCallItem)
from agents.testing import assistant_message

message = assistant_message("Hi there")
assert ItemHelpers.text_message_output(MessageOutputItem(agent=Agent(name="A"), raw_item=message)) == "Hi there"
assert ItemHelpers.input_to_new_input_list("hello") == [{"content": "hello", "role": "user"}]
print("ok")
