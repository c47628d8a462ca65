"""Tools that take the run context (RunContextWrapper) and the tool context (ToolContext)."""
from dataclasses import dataclass, field

from agents import Agent, RunContextWrapper, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext


@dataclass
class Shop:
    cart: list = field(default_factory=list)
    seen_calls: list = field(default_factory=list)


@function_tool
def add_to_cart(ctx: RunContextWrapper[Shop], item: str, quantity: int = 1) -> str:
    """Add an item to the cart."""
    ctx.context.cart.extend([item] * quantity)
    return f"{len(ctx.context.cart)} items in cart"


@function_tool
def whoami(ctx: ToolContext[Shop]) -> str:
    """Report the tool call."""
    ctx.context.seen_calls.append((ctx.tool_name, ctx.tool_call_id))
    return "noted"


model = ScriptedModel([
    [function_call("add_to_cart", {"item": "apple", "quantity": 2}, call_id="c1"),
     function_call("whoami", {}, call_id="c2")],
    [assistant_message("Done.")],
])
shop = Shop()
agent = Agent[Shop](name="Shopper", tools=[add_to_cart, whoami], model=model)
result = Runner.run_sync(agent, "Buy two apples", context=shop)

assert result.final_output == "Done."
assert shop.cart == ["apple", "apple"]
assert shop.seen_calls == [("whoami", "c2")]
assert result.context_wrapper.context is shop
assert "ctx" not in add_to_cart.params_json_schema["properties"]
assert add_to_cart.params_json_schema["required"] == ["item", "quantity"]
print("ok")
