"""`python -m miniagents.mcp COMMAND [ARGS...]`: start an MCP server, list its tools and their input schemas, end it.

A quick check before giving a server to an agent: that it starts, which protocol version it speaks, which tools
it offers, and how miniagents offers each to a model (its name, and whether its schema is sent strict).
Exit status: 0 listed, 1 the server failed (the error says how), 2 a usage mistake.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional

from ..errors import UserError
from .errors import MCPError
from .plugin import function_tool
from .server import MCPServerStdio


def parse(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}", description="List an MCP server's tools and their input schemas.",
        epilog=f"example: python -m {__package__} npx -y @modelcontextprotocol/server-everything")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for each answer (default 30: a first npx start can be slow)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the server (repeatable)")
    parser.add_argument("--cwd", help="the server's working folder")
    parser.add_argument("--json", action="store_true", help="print the tools as the server listed them, as JSON")
    parser.add_argument("command", help="the program that runs the server")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser.parse_args(argv)


def shown(text: Any, keep: str = "") -> str:
    """What a server sent with each character a terminal would not show as itself (a newline, which would start a
    line the server wrote, ESC and the other control characters that make its escape sequences, a lone surrogate
    UTF-8 cannot encode) as its JSON escape, which in JSON is the same string; those in `keep` as they are."""
    return "".join(c if c in keep or c.isprintable() else json.dumps(c)[1:-1] for c in str(text))


def main(argv: Optional[list] = None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # a character its encoding lacks (é on an ASCII terminal) as an escape
        if callable(getattr(stream, "reconfigure", None)):
            stream.reconfigure(errors="backslashreplace")
    env = {}
    for pair in options.env:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            print(f"--env takes NAME=VALUE, got {name or pair!r}", file=sys.stderr)  # never the value
            return 2
        env[name] = value
    try:
        server = MCPServerStdio({"command": options.command, "args": options.args, "env": env or None,
                                 "cwd": options.cwd}, client_session_timeout_seconds=options.timeout)
        with server:
            tools = server.list_tools()
            info = server.server_initialize_result or {}
    except (MCPError, UserError) as error:
        print(shown(f"error: {error}", "\n"), file=sys.stderr)  # the end of the server's stderr too
        return 1
    if options.json:
        print(shown(json.dumps([{"name": t.name, "title": t.title, "description": t.description,
                                 "inputSchema": t.inputSchema} for t in tools], indent=2, ensure_ascii=False), "\n"))
        return 0
    about = info.get("serverInfo") if isinstance(info.get("serverInfo"), dict) else {}
    print(f"{shown(about.get('name', server.name))} {shown(about.get('version', ''))} (MCP "
          f"{shown(info.get('protocolVersion'))}): {len(tools)} tool{'s' if len(tools) != 1 else ''}")
    for tool in tools:  # a description's lines indented deeper than the input's: none passes for a line of ours
        offered = function_tool(server, tool, None, {})
        how = "strict schema" if offered.strict_json_schema else "schema sent as given"
        alias = f", offered as {offered.name!r}" if offered.name != tool.name else ""
        print(f"\n{shown(tool.name)} ({how}{alias})")
        for line in tool.description.strip().split("\n") if tool.description else ():
            print("    " + shown(line))
        print("  input: " + shown(json.dumps(tool.inputSchema, ensure_ascii=False)))
    return 0


if __name__ == "__main__":
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    sys.exit(status)
