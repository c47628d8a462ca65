"""MCP tools in a run: the plugin that offers an agent's servers' tools to the model each turn.

Two seams (miniagents/seams.py):

- `run`: around one drive of the loop (of every run: an agent met during it may have servers). A server the run
  finds not connected is connected by the run (at the first turn of an agent that has it) and cleaned up when the
  drive ends: final output, pause, error or cancel. A server you connected yourself (`with server:`) is left as it
  is. So a paused run holds no process while it waits for a person, and its resume, in this process or another,
  connects a server of the same name again.
- `offer`: every turn, each of the agent's servers lists its tools (once, with `cache_tools_list`) and each becomes
  a `FunctionTool` beside the agent's own. The kernel looks a call's tool up by name in that offer, so approvals,
  the RunState JSON and the exactly-once ledger treat an MCP tool like any function tool.

A tool's input schema is made strict when that changes nothing a call may send: the strict pass succeeds (it
refuses an object without properties, which it would close, and what strict endpoints refuse) and every property of
every object is already required (strict mode makes all of them required, so an optional parameter would have to
be invented). Otherwise it is sent as the server gave it (`strict_json_schema=False`);
`mcp_config={"convert_schemas_to_strict": False}` sends every schema as given. A tool whose name the model APIs
refuse (they take `[A-Za-z0-9_-]{1,64}`; MCP allows dots) is offered under a name made of it, and called under its
own. Two tools with one name (two servers, or a server and the agent's own tools or handoffs) are a `UserError`:
`tool_filter` leaves one out, `mcp_config={"include_server_in_tool_names": True}` prefixes every MCP tool with its
server's name.
"""
from __future__ import annotations

import contextlib
import dataclasses
import binascii
import json
import re
from typing import Any, Iterator, Optional

from .. import seams
from ..caller import Cancelled, arity, call
from ..errors import UserError
from ..schema import ensure_strict_json_schema
from ..tool import FunctionTool, ToolError
from ..validate import parse_arguments
from .errors import MCPError
from .server import _UNSET, MCPServerStdio

CONFIG_KEYS = {"convert_schemas_to_strict", "include_server_in_tool_names", "failure_error_function"}
VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class MCPPlugin(seams.Plugin):
    """The agents' MCP servers in runs (registered when `miniagents.mcp` is imported)."""

    @contextlib.contextmanager
    def run(self, run: Any) -> Iterator[None]:
        """Every drive: an agent met during it (one only a hand-built `Handoff` reaches) may bring servers."""
        held = run.scratch.setdefault(self, [])  # the servers this drive holds (see MCPServerStdio.hold)
        try:
            yield
        finally:
            while held:
                held.pop().release()

    def offer(self, run: Any, setup: Any) -> Any:
        agent = setup.agent
        if not agent.mcp_servers:
            return setup
        config = agent.mcp_config or {}
        if set(config) - CONFIG_KEYS:
            raise UserError(f"Agent {agent.name!r}: unknown mcp_config keys {sorted(set(config) - CONFIG_KEYS)} "
                            f"(known: {', '.join(sorted(CONFIG_KEYS))})")
        tools, owners = dict(setup.tools), {}
        for server in agent.mcp_servers:
            held = run.scratch.setdefault(self, [])
            if isinstance(server, MCPServerStdio) and server not in held:
                server.hold()  # connected now when it is not: the runs holding it clean it up when the last ends
                held.append(server)
            listing = server.list_tools
            listed = call(listing, run.state.context_wrapper, agent) if arity(listing) >= 2 else call(listing)
            for tool in listed:
                offered = function_tool(server, tool, agent, config)
                if offered is None:
                    continue
                other = owners.get(offered.name) or ("a handoff" if offered.name in setup.handoffs else None) or (
                    "one of the agent's own tools" if offered.name in setup.tools else None)
                if other is not None:
                    raise UserError(
                        f"Agent {agent.name!r}: MCP server {server_name(server)!r} offers a tool named "
                        f"{offered.name!r}, as {other} does. Leave one out with the server's tool_filter "
                        "(create_static_tool_filter(blocked_tool_names=[...])), or prefix MCP tools with their "
                        "server's name: Agent(mcp_config={'include_server_in_tool_names': True})")
                owners[offered.name] = f"MCP server {server_name(server)!r}"
                tools[offered.name] = offered
        return dataclasses.replace(setup, tools=tools)


def server_name(server: Any) -> str:
    name = getattr(server, "name", None)
    return name if isinstance(name, str) else type(server).__name__


def read(thing: Any, key: str) -> Any:
    """A field of an MCP object: an attribute (our types, upstream's `mcp` types) or a dict key (plain JSON)."""
    return thing.get(key) if isinstance(thing, dict) else getattr(thing, key, None)


def public_name(name: str, server: Any, prefixed: bool) -> str:
    """The name the model sees: the tool's own when the model APIs take it; else each character they refuse
    becomes `_`, and a name over 64 characters is cut and ends with a checksum of the whole (so two stay apart)."""
    if prefixed:
        name = f"mcp_{server_name(server)}__{name}"
    if VALID_NAME.fullmatch(name):
        return name
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if len(safe) <= 64:
        return safe
    suffix = f"_{binascii.crc32(name.encode('utf-8', 'surrogatepass')):08x}"
    return safe[:64 - len(suffix)] + suffix


def function_tool(server: Any, tool: Any, agent: Any, config: dict) -> Optional[FunctionTool]:
    """One MCP tool as the `FunctionTool` the model is offered (None for an entry with no usable name)."""
    name = read(tool, "name")
    if not isinstance(name, str) or not name:
        return None
    schema = read(tool, "inputSchema")
    schema = dict(schema) if isinstance(schema, dict) else {"type": "object"}
    schema.setdefault("properties", {})  # MCP may leave it out; the model APIs want it
    strict = False
    if config.get("convert_schemas_to_strict", True) and all_required(schema):
        try:
            schema, strict = ensure_strict_json_schema(schema), True
        except UserError:
            pass  # strict mode cannot express it: sent as given
    failure = getattr(server, "_failure_error_function", _UNSET)
    if failure is _UNSET:
        failure = config.get("failure_error_function", _UNSET)
    approval = server.needs_approval(tool, agent) if callable(getattr(server, "needs_approval", None)) else False
    description = read(tool, "description") or read(tool, "title") or ""
    invoke = Invocation(server, name, failure)
    extra = {} if failure is _UNSET else {"failure_error_function": failure}
    return FunctionTool(public_name(name, server, bool(config.get("include_server_in_tool_names"))),
                        description if isinstance(description, str) else "", schema, invoke,
                        strict_json_schema=strict, needs_approval=approval, **extra)


def all_required(schema: Any, depth: int = 0) -> bool:
    """Whether every object in `schema` requires all of its properties (so strict mode changes no call); a
    `required` that is not a list requires none of them, and a schema nested deeper than any the strict pass takes
    is sent as given."""
    if depth > 64:
        return False
    if isinstance(schema, list):
        return all(all_required(s, depth + 1) for s in schema)
    if not isinstance(schema, dict):
        return True
    properties, required = schema.get("properties"), schema.get("required")
    if isinstance(properties, dict) and properties and not (isinstance(required, list) and set(properties) <= set(
            r for r in required if isinstance(r, str))):
        return False
    return all(all_required(v, depth + 1) for k, v in schema.items()
               if k not in ("default", "enum", "const", "examples"))


@dataclasses.dataclass(frozen=True)
class Invocation:
    """`on_invoke_tool` of an MCP tool: the call goes to its server; the result becomes the model's text."""

    server: Any
    name: str
    failure: Any

    def __call__(self, context: Any, raw_arguments: str) -> str:
        arguments = parse_arguments(raw_arguments, self.name)  # not a JSON object: the model is told to fix it
        try:
            result = call(self.server.call_tool, self.name, arguments)
        except MCPError as error:
            if self.failure is not _UNSET or isinstance(error, Cancelled):  # a failure_error_function given makes
                raise  # the model's text (None: raises), as upstream's; a cancel stops the call as it stops any tool
            raise ToolError(error.summary) from error  # one line, no stderr: the model is told what happened
        text = result_text(result, getattr(self.server, "use_structured_content", False))
        if read(result, "isError") is True:
            raise ToolError(text or f"The tool {self.name} failed and said nothing more.")
        return text


def result_text(result: Any, use_structured_content: bool) -> str:
    """A tool result as the model's text: each content item (text as is, images, audio and resources as a short
    description), or the structured content as JSON (when asked for, or when there is no content)."""
    structured = read(result, "structuredContent")
    if structured is not None and use_structured_content and read(result, "isError") is not True:
        return json.dumps(structured, ensure_ascii=False)
    parts = [describe(item) for item in read(result, "content") or []]
    if not parts and structured is not None:
        return json.dumps(structured, ensure_ascii=False)
    return "\n".join(parts)


def describe(item: Any) -> str:
    """One content item as text."""
    kind = read(item, "type")
    if kind == "text":
        text = read(item, "text")
        return text if isinstance(text, str) else ""
    if kind in ("image", "audio"):
        return f"[{kind}: {read(item, 'mimeType') or 'unknown type'}, {size(read(item, 'data'))}]"
    if kind == "resource_link":
        about = read(item, "description")
        return f"[resource link: {read(item, 'name') or ''} {read(item, 'uri') or ''}" + (
            f" ({read(item, 'mimeType')})" if read(item, "mimeType") else "") + (f": {about}" if about else "") + "]"
    if kind == "resource":
        resource = read(item, "resource") or {}
        head = f"[resource {read(resource, 'uri') or ''}" + (
            f" ({read(resource, 'mimeType')})" if read(resource, "mimeType") else "")
        text = read(resource, "text")
        return f"{head}]\n{text}" if isinstance(text, str) else f"{head}: {size(read(resource, 'blob'))}]"
    return f"[{kind if isinstance(kind, str) else 'unknown'} content]"


def size(data: Any) -> str:
    """The size of base64 data, in bytes decoded."""
    return f"{len(data.rstrip('=')) * 3 // 4} bytes" if isinstance(data, str) else "no data"
