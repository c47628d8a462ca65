"""MCP (a shell): tools from Model Context Protocol servers over stdio, with the standard library only.

Upstream's `agents.mcp` names: `MCPServerStdio` (a server run as a child process), `create_static_tool_filter`,
`ToolFilterContext`, `MCPServerStreamableHttp` and `MCPServerSse` (not provided: making one raises an explained
`MCPTransportNotProvidedError`). Give servers to an agent, `Agent(mcp_servers=[server])`, and their tools are
offered to the model each turn beside the agent's own; calls go to the server. A run connects a server that is
not connected and cleans it up when it ends; connect it yourself (`with server:`) to keep it across runs.

Importing this package registers `MCPPlugin` (plugin.py) on the kernel's seams; the kernel never imports it.
The modules: stdio.py (the child process and the JSON-RPC conversation, every wait bounded), server.py (the
server as upstream names it: handshake, tools, filters, approval policy), plugin.py (the tools in a run),
errors.py (`MCPError` and its kinds), `python -m` on this package lists a server's tools.
"""
from __future__ import annotations

from .. import seams
from .errors import (MCPCancelledError, MCPConnectionError, MCPError, MCPProtocolError, MCPRequestError,
                     MCPServerStartError, MCPTimeoutError, MCPTransportNotProvidedError, MCPVersionError)
from .plugin import MCPPlugin
from .server import PROTOCOL_VERSIONS, CallToolResult, Content, MCPServer, MCPServerSse, MCPServerStdio, \
    MCPServerStdioParams, MCPServerStreamableHttp, MCPTool, ToolFilterContext, create_static_tool_filter

PLUGIN = MCPPlugin()
seams.register(PLUGIN)

__all__ = ["MCPServer", "MCPServerStdio", "MCPServerStdioParams", "MCPServerStreamableHttp", "MCPServerSse",
           "MCPTool", "CallToolResult", "Content", "ToolFilterContext", "create_static_tool_filter",
           "PROTOCOL_VERSIONS", "MCPPlugin", "MCPError", "MCPServerStartError", "MCPConnectionError",
           "MCPTimeoutError", "MCPProtocolError", "MCPVersionError", "MCPRequestError",
           "MCPTransportNotProvidedError", "MCPCancelledError"]
