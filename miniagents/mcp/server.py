"""MCP servers under upstream's names (`agents.mcp`): `MCPServerStdio`, its tool filters and approval policy.

A server is configuration plus, once connected, one `StdioConnection` (stdio.py): the child process and the
JSON-RPC conversation with it. The methods are synchronous, as the kernel is; each returns something that can
also be awaited (`await server.connect()`, `await server.list_tools()`), so programs written for upstream's async
API run unchanged. `async with server:` starts the process off the event loop.

What the protocol asks of a client that only uses tools is all here: the `initialize` handshake (the newest
version this client speaks is asked for; a server that answers with one it does not speak is refused with an
`MCPVersionError` naming both), `notifications/initialized`, `tools/list` page after page (`nextCursor`), and
`tools/call`. A `notifications/tools/list_changed` drops the cached list; log messages go to the package's
logger (this module's, under it) at debug level.
"""
from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypedDict

from .. import __version__
from ..caller import CANCEL_CALLBACKS, AlreadyDone, Ready, call
from ..errors import UserError, warn
from .errors import MCPCancelledError, MCPConnectionError, MCPProtocolError, MCPRequestError, MCPTimeoutError, \
    MCPTransportNotProvidedError, MCPVersionError
from .stdio import MAX_MESSAGE_BYTES, StdioConnection, preview

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # spoken; the first is asked for
CLIENT_INFO = {"name": "miniagents", "version": __version__}
MAX_PAGES = 1000  # tools/list pages read before the server is taken to page forever
MAX_LISTING_BYTES = 16 * 1024 * 1024  # the answers of one tools listing, all its pages (each may be as large)
WARNED_KEPT = 100  # entries of tools/list left out that are warned about (once each); then no more
_UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()  # "not given": None means something here


class ToolList(list, AlreadyDone):
    """The list `list_tools()` returns; `await` gives the same list (upstream's method is async)."""

    __slots__ = ()


class Content(dict):
    """One content item of a tool result, as the server sent it: read it as a dict, or by attribute
    (`item.type`, `item.text`) as code written for upstream's `mcp` types does."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name not in self:  # a server's "__deepcopy__" key is no method of the item
            raise AttributeError(name)  # (copy, pickle and templates ask for such names)
        return self[name]


@dataclass(frozen=True)
class MCPTool:
    """A tool a server offers, under the protocol's field names (as upstream's `mcp.types.Tool`)."""

    name: str
    inputSchema: dict
    description: Optional[str] = None
    title: Optional[str] = None
    outputSchema: Optional[dict] = None
    annotations: Optional[dict] = None
    meta: Optional[dict] = None


@dataclass(eq=False)
class CallToolResult(AlreadyDone):
    """What `call_tool()` returns (`await` gives the same object): `content` (a list of `Content`),
    `structuredContent`, `isError`."""

    content: list = field(default_factory=list)
    structuredContent: Any = None
    isError: bool = False
    meta: Optional[dict] = None


@dataclass
class ToolFilterContext:
    """What a callable `tool_filter` receives besides the tool: the run's context, the agent, the server's name."""

    run_context: Any
    agent: Any
    server_name: str


class MCPServerStdioParams(TypedDict, total=False):
    """`params=` of `MCPServerStdio`: `command` (required), `args`, `env`, `cwd`; `encoding` must be utf-8."""

    command: str
    args: list
    env: dict
    cwd: Any
    encoding: str
    encoding_error_handler: str


def create_static_tool_filter(allowed_tool_names: Optional[list] = None,
                              blocked_tool_names: Optional[list] = None) -> Optional[dict]:
    """A `tool_filter` that keeps the tools named in `allowed_tool_names` (when given) and drops those named in
    `blocked_tool_names`; None when neither is given."""
    if allowed_tool_names is None and blocked_tool_names is None:
        return None
    static: dict = {}
    if allowed_tool_names is not None:
        static["allowed_tool_names"] = list(allowed_tool_names)
    if blocked_tool_names is not None:
        static["blocked_tool_names"] = list(blocked_tool_names)
    return static


class MCPServer:
    """What the MCP plugin uses of a server: `name`, `connect`/`cleanup`, `list_tools`, `call_tool`, and the
    per-tool approval and failure policies. `MCPServerStdio` is the one this package provides."""

    name: str = "mcp server"
    use_structured_content: bool = False
    _failure_error_function: Any = _UNSET

    def needs_approval(self, tool: MCPTool, agent: Any) -> Any:
        """`FunctionTool.needs_approval` for `tool`: a bool, or a callable `(context, arguments, call_id)`."""
        return False


def approval_policy(require_approval: Any) -> Any:
    """`require_approval` read once: True/False, {tool name: bool}, or a callable `(run_context, agent, tool)`.

    Accepts "always"/"never" (or a bool) for every tool, a mapping of tool names to those, the
    `{"always": {"tool_names": [...]}, "never": {"tool_names": [...]}}` form, or a callable."""
    def flag(value: Any, where: str) -> bool:
        if isinstance(value, bool):
            return value
        if value in ("always", "never"):
            return value == "always"
        raise UserError(f"Invalid require_approval value at {where}: expected 'always' or 'never', got {value!r}")

    if require_approval is None:
        return False
    if callable(require_approval):
        return require_approval
    if not isinstance(require_approval, Mapping):
        return flag(require_approval, "require_approval")
    if any(isinstance(require_approval.get(k), Mapping) and "tool_names" in require_approval[k]
           for k in ("always", "never")):
        policy: dict = {}
        for key in ("always", "never"):
            names = (require_approval.get(key) or {}).get("tool_names", [])
            if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
                raise UserError(f"Invalid require_approval.{key}.tool_names: expected a list of tool names")
            for name in names:
                if name in policy and policy[name] != (key == "always"):
                    raise UserError(f"require_approval names {name!r} in both 'always' and 'never'")
                policy[name] = key == "always"
        if set(require_approval) - {"always", "never"}:
            raise UserError(f"Invalid require_approval keys {sorted(set(require_approval) - {'always', 'never'})}")
        return policy
    return {str(name): flag(value, f"require_approval[{name!r}]") for name, value in require_approval.items()}


def _timeout(value: Any) -> Optional[float]:
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise UserError(f"client_session_timeout_seconds must be a positive number of seconds, 0 or None, got "
                        f"{value!r}")
    return float(value)


def _check_params(params: Any) -> dict:
    """`params` checked when the server is made (a mistake shows where it was written, not at connect)."""
    if not isinstance(params, Mapping):
        raise UserError(f"MCPServerStdio params must be a dict with a 'command', got {type(params).__name__}")
    unknown = set(params) - set(MCPServerStdioParams.__annotations__)
    if unknown:
        raise UserError(f"MCPServerStdio params: unknown keys {sorted(unknown, key=repr)} (known: command, args, env, "
                        "cwd)")
    command, args, env, cwd = params.get("command"), params.get("args") or [], params.get("env"), params.get("cwd")
    if not isinstance(command, str) or not command:
        raise UserError("MCPServerStdio params['command'] must be the program to run (a non-empty string)")
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        raise UserError("MCPServerStdio params['args'] must be a list of strings")
    if env is not None and (not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise UserError("MCPServerStdio params['env'] must map names to string values")  # never the values
    if cwd is not None and not isinstance(cwd, (str, bytes, os.PathLike)):
        raise UserError(f"MCPServerStdio params['cwd'] must be the server's folder (a path), got {type(cwd).__name__}")
    encoding = params.get("encoding", "utf-8")
    if not isinstance(encoding, str) or encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise UserError("MCPServerStdio speaks UTF-8 only (the protocol's encoding); leave params['encoding'] out")
    if params.get("encoding_error_handler", "strict") != "strict":
        raise UserError("MCPServerStdio reads strictly: a line that is not valid UTF-8 JSON is a protocol error; "
                        "leave params['encoding_error_handler'] out")
    return {"command": command, "args": list(args), "env": dict(env) if env is not None else None, "cwd": cwd}


class MCPServerStdio(MCPServer):
    """An MCP server run as a child process, spoken to over its stdin and stdout.

    Upstream's parameters, with its meanings: `params` (`command`, `args`, `env` added to a few safe variables
    of ours, `cwd`), `cache_tools_list` (list the tools once, until `invalidate_tools_cache()` or the server says
    they changed), `name` (default "stdio: COMMAND"), `client_session_timeout_seconds` (for every request; None or
    0: no timeout), `tool_filter` (`create_static_tool_filter(...)` or a callable `(ToolFilterContext, tool)`),
    `use_structured_content` (a result's `structuredContent` as the output instead of its content),
    `max_retry_attempts` with `retry_backoff_seconds_base`/`_max` (a request that timed out or was answered with an
    error is sent again, but a tool call: it may have run), `require_approval` ("always", "never", {tool: ...},
    or a callable) and `failure_error_function` (None: a failed call raises instead of telling the model).
    miniagents' own: `max_message_bytes` (the longest line a server may write) and `shutdown_grace_seconds` (how
    long each step of ending the process waits). `message_handler`, `tool_meta_resolver` and `custom_data_extractor`
    are not provided.
    """

    def __init__(self, params: Any, cache_tools_list: bool = False, name: Optional[str] = None,
                 client_session_timeout_seconds: Optional[float] = 5, tool_filter: Any = None,
                 use_structured_content: bool = False, max_retry_attempts: int = 0,
                 retry_backoff_seconds_base: float = 1.0, message_handler: Any = None, require_approval: Any = None,
                 failure_error_function: Any = _UNSET, tool_meta_resolver: Any = None,
                 custom_data_extractor: Any = None, retry_backoff_seconds_max: Optional[float] = None, *,
                 max_message_bytes: int = MAX_MESSAGE_BYTES, shutdown_grace_seconds: float = 2.0):
        for option, value in (("message_handler", message_handler), ("tool_meta_resolver", tool_meta_resolver),
                              ("custom_data_extractor", custom_data_extractor)):
            if value is not None:
                raise UserError(f"MCPServerStdio({option}=...) is not provided by miniagents' MCP client")
        self.params = _check_params(params)
        self._name = name if isinstance(name, str) and name else f"stdio: {self.params['command']}"
        self.cache_tools_list = bool(cache_tools_list)
        self.client_session_timeout_seconds = client_session_timeout_seconds
        self._request_timeout = _timeout(client_session_timeout_seconds)
        if tool_filter is not None and not callable(tool_filter) and not (
                isinstance(tool_filter, Mapping) and set(tool_filter) <= {"allowed_tool_names", "blocked_tool_names"}):
            raise UserError("tool_filter must be create_static_tool_filter(...), a callable (context, tool) -> bool, "
                            "or None")
        self.tool_filter = tool_filter
        self.use_structured_content = bool(use_structured_content)
        if isinstance(max_retry_attempts, bool) or not isinstance(max_retry_attempts, int) or max_retry_attempts < 0:
            raise UserError(f"max_retry_attempts must be 0 or more (every wait has a bound), "
                            f"got {max_retry_attempts!r}")
        self.max_retry_attempts = max_retry_attempts
        for option, value in (("retry_backoff_seconds_base", retry_backoff_seconds_base),
                              ("retry_backoff_seconds_max", retry_backoff_seconds_max)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0 <= value < math.inf):
                raise UserError(f"{option} must be a number of seconds, 0 or more, got {value!r}")
        self.retry_backoff_seconds_base, self.retry_backoff_seconds_max = retry_backoff_seconds_base or 0, \
            retry_backoff_seconds_max
        self._approval = approval_policy(require_approval)
        if failure_error_function is not _UNSET and failure_error_function is not None and \
                not callable(failure_error_function):
            raise UserError("failure_error_function must be a callable, None, or left out")
        self._failure_error_function = failure_error_function
        if not isinstance(max_message_bytes, int) or max_message_bytes < 1024:
            raise UserError("max_message_bytes must be an int of at least 1024")
        if isinstance(shutdown_grace_seconds, bool) or not isinstance(shutdown_grace_seconds, (int, float)) or \
                not 0 < shutdown_grace_seconds < math.inf:
            raise UserError(f"shutdown_grace_seconds must be a positive number, got {shutdown_grace_seconds!r}")
        self.max_message_bytes, self.shutdown_grace_seconds = max_message_bytes, float(shutdown_grace_seconds)
        self.server_initialize_result: Optional[dict] = None
        self._connection: Optional[StdioConnection] = None
        self._connect_lock = threading.Lock()  # one connect at a time
        self._state_lock = threading.Lock()  # _connection, _epoch, the tools cache
        self._epoch = 0  # bumped by cleanup(): a connect that started before it does not survive it
        self._tools: Optional[list] = None  # the cached list (cache_tools_list)
        self._tools_generation = 0  # bumped when the cache is dropped, so a list fetched meanwhile is not kept
        self._warned: set = set()
        self._hold_lock = threading.Lock()
        self._holds, self._held_by_runs = 0, False  # runs using it; whether they connected it (so they end it)

    @property
    def name(self) -> str:
        return self._name

    @property
    def connected(self) -> bool:
        """Whether a connection is open and has not failed."""
        connection = self._connection
        return connection is not None and connection.failure() is None

    @property
    def cached_tools(self) -> Optional[list]:
        """The cached tools list (all of it, before the filter), or None."""
        return list(self._tools) if self._tools is not None else None

    @property
    def pid(self) -> Optional[int]:
        """The server process's id while connected (for diagnostics)."""
        connection = self._connection
        return connection.pid if connection is not None else None

    # --- Connecting ----------------------------------------------------------------------------------

    def connect(self) -> Ready:
        """Start the server and do the handshake (nothing when already connected; a failed connection is replaced
        by a new one). Raises an `MCPError` naming what went wrong; the process is ended then."""
        with self._connect_lock:
            with self._state_lock:
                epoch, current = self._epoch, self._connection
            if current is not None and current.failure() is None:
                return Ready(None)
            if current is not None:
                current.close()
            connection = StdioConnection(self.name, self.params["command"], self.params["args"], self.params["env"],
                                         self.params["cwd"], max_message_bytes=self.max_message_bytes,
                                         grace=self.shutdown_grace_seconds, on_notification=self._notified)
            with self._state_lock:
                if self._epoch != epoch:
                    raise MCPConnectionError(f"MCP server {self.name!r} was cleaned up while connecting", self.name)
                self._connection, self._tools = connection, None
            try:
                connection.start()
                result = connection.request("initialize", {"protocolVersion": PROTOCOL_VERSIONS[0],
                                                           "capabilities": {}, "clientInfo": CLIENT_INFO},
                                            self._request_timeout)
                self._check_handshake(connection, result)
                connection.notify("notifications/initialized")
            except BaseException:
                connection.close()
                with self._state_lock:
                    if self._connection is connection:
                        self._connection = None
                raise
            self.server_initialize_result = result
        return Ready(None)

    def _check_handshake(self, connection: StdioConnection, result: Any) -> None:
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if not isinstance(version, str):
            raise connection.error(MCPProtocolError, f"answered initialize without a protocolVersion: "
                                                     f"{self._shown(result)}")
        if version not in PROTOCOL_VERSIONS:
            raise connection.error(
                MCPVersionError, f"speaks MCP protocol version {self._shown(version, 40)}, which this client does "
                                 f"not (it asked for {PROTOCOL_VERSIONS[0]} and speaks {', '.join(PROTOCOL_VERSIONS)})",
                server_version=version, client_versions=PROTOCOL_VERSIONS)

    def hold(self) -> None:
        """A run uses the server (the MCP plugin calls this once per drive of the loop): when it is not connected,
        it is connected now and is then the runs' to clean up, when the last run holding it calls `release()`.
        A server you connected yourself is never cleaned up by a run."""
        with self._hold_lock:
            if not self.connected:
                self.connect()
                self._held_by_runs = True
            self._holds += 1

    def release(self) -> None:
        with self._hold_lock:
            self._holds = max(0, self._holds - 1)
            if self._holds == 0 and self._held_by_runs:
                self._held_by_runs = False
                self.cleanup()

    def cleanup(self) -> Ready:
        """End the server process (and whatever it started in its process group). Safe to call at any time,
        more than once, from any thread; a later `connect()` starts a new process."""
        with self._state_lock:
            self._epoch += 1
            connection, self._connection, self._tools = self._connection, None, None
        if connection is not None:
            connection.close()
        return Ready(None)

    def __enter__(self) -> "MCPServerStdio":
        self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.cleanup()

    async def __aenter__(self) -> "MCPServerStdio":
        import asyncio

        try:  # in a thread: starting a server takes a while, the event loop goes on meanwhile
            await asyncio.get_running_loop().run_in_executor(None, self.connect)
        except BaseException:  # cancelled (the connect goes on in its thread: cleanup() makes it fail) or failed
            self.cleanup()
            raise
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.cleanup()  # bounded (a few grace periods at most), and done even when the task is being cancelled

    # --- Requests ------------------------------------------------------------------------------------

    def _live(self) -> StdioConnection:
        connection = self._connection
        if connection is None:
            raise UserError(f"MCP server {self.name!r} is not connected: call connect() first, or use it in `with` "
                            "or `async with` (a run connects its agents' servers that are not connected itself)")
        return connection

    def _retrying(self, request: Callable[[], Any]) -> Any:
        """`request()`, sent again after a timeout or an error answer, `max_retry_attempts` times at most, with
        exponential backoff (a cancelled run stops the wait). Never a tool call: it may have run."""
        attempt = 0
        while True:
            try:
                return request()
            except (MCPTimeoutError, MCPRequestError):
                if attempt >= self.max_retry_attempts:
                    raise
            delay = self.retry_backoff_seconds_base * 2 ** attempt
            if self.retry_backoff_seconds_max is not None:
                delay = min(delay, self.retry_backoff_seconds_max)
            attempt += 1
            woken, aborts = threading.Event(), CANCEL_CALLBACKS.get()
            if aborts is not None:
                aborts.append(woken.set)
            try:
                if getattr(aborts, "cancelled", False) or woken.wait(delay):  # a cancel that came first too
                    raise MCPCancelledError(f"MCP server {self.name!r}: the run was cancelled before a retry",
                                            self.name)
            finally:
                if aborts is not None and woken.set in aborts:
                    aborts.remove(woken.set)

    def list_tools(self, run_context: Any = None, agent: Any = None) -> ToolList:
        """The server's tools (every page), through `tool_filter`; cached when `cache_tools_list` (a failed
        connection raises its error even then: its tools cannot be called)."""
        failed = self._live().failure()
        if failed is not None:
            raise failed
        tools = self._tools if self.cache_tools_list else None
        if tools is None:
            generation = self._tools_generation
            tools = self._retrying(self._fetch_tools)
            if self.cache_tools_list:
                with self._state_lock:
                    if generation == self._tools_generation and self._connection is not None:
                        self._tools = tools
        return ToolList(self._filter(tools, run_context, agent))

    def _fetch_tools(self) -> list:
        connection = self._live()
        capabilities = (self.server_initialize_result or {}).get("capabilities")
        if isinstance(capabilities, dict) and "tools" not in capabilities:
            return []  # it offers no tools: not even asked (a server need not answer what it does not offer)
        tools: list = []
        cursor, seen, sizes = None, set(), []
        for _ in range(MAX_PAGES):
            result = connection.request("tools/list", None if cursor is None else {"cursor": cursor},
                                        self._request_timeout, sizes)
            if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
                raise connection.error(MCPProtocolError, f"answered tools/list without a list of tools: "
                                                         f"{self._shown(result)}")
            if sum(sizes) > MAX_LISTING_BYTES:
                raise connection.error(MCPProtocolError, f"answered tools/list with more than {MAX_LISTING_BYTES} "
                                                         "bytes in all (MAX_LISTING_BYTES)")
            tools.extend(t for t in map(self._tool, result["tools"]) if t is not None)
            cursor = result.get("nextCursor")
            if cursor is None or cursor == "":
                return tools
            if not isinstance(cursor, str) or cursor in seen:
                raise connection.error(MCPProtocolError, f"answered tools/list with the cursor "
                                                         f"{self._shown(cursor, 60)} again: its pages would never end")
            seen.add(cursor)
        raise connection.error(MCPProtocolError, f"answered tools/list with more than {MAX_PAGES} pages")

    def _tool(self, entry: Any) -> Optional[MCPTool]:
        """One entry of tools/list, or None (warned once) when it is not a tool this client can offer."""
        name = entry.get("name") if isinstance(entry, dict) else None
        schema = entry.get("inputSchema", {"type": "object"}) if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or not isinstance(schema, dict):
            key = self._shown(name if isinstance(name, str) else entry, 60)
            if key not in self._warned and len(self._warned) < WARNED_KEPT:
                self._warned.add(key)
                warn("MCP server %r lists a tool without a name or an inputSchema object, left out: %s", self.name,
                     key)
            return None

        def text(key: str) -> Optional[str]:
            value = entry.get(key)
            return value if isinstance(value, str) else None

        def mapping(key: str) -> Optional[dict]:
            value = entry.get(key)
            return value if isinstance(value, dict) else None

        return MCPTool(name, schema, text("description"), text("title"), mapping("outputSchema"),
                       mapping("annotations"), mapping("_meta"))

    def _filter(self, tools: list, run_context: Any, agent: Any) -> list:
        chosen = self.tool_filter
        if chosen is None:
            return list(tools)
        if isinstance(chosen, Mapping):
            allowed, blocked = chosen.get("allowed_tool_names"), chosen.get("blocked_tool_names") or ()
            return [t for t in tools if (allowed is None or t.name in allowed) and t.name not in blocked]
        if run_context is None or agent is None:
            raise UserError("run_context and agent are required for dynamic tool filtering")
        context, kept = ToolFilterContext(run_context, agent, self.name), []
        for tool in tools:
            try:
                keep = call(chosen, context, tool)
            except Exception:  # left out, as upstream does: a filter that fails never widens what is offered
                warn("tool_filter of MCP server %r raised for tool %r; the tool is left out", self.name, tool.name,
                     exc_info=True)
                continue
            if keep:
                kept.append(tool)
        return kept

    def call_tool(self, tool_name: str, arguments: Optional[dict] = None, meta: Optional[dict] = None
                  ) -> CallToolResult:
        """Call a tool; its result (an `isError` result too). An `MCPError` when the server did not answer,
        answered with a JSON-RPC error, or failed."""
        params: dict = {"name": tool_name, "arguments": arguments if arguments is not None else {}}
        if meta is not None:
            params["_meta"] = meta
        connection = self._live()
        result = connection.request("tools/call", params, self._request_timeout)  # once: it may run, then fail
        content = result.get("content", []) if isinstance(result, dict) else None
        if not isinstance(content, list) or not all(isinstance(item, dict) for item in content):
            raise connection.error(MCPProtocolError, f"answered tools/call {tool_name!r} with something that is not "
                                                     f"a tool result: {self._shown(result)}")
        return CallToolResult([Content(item) for item in content], result.get("structuredContent"),
                              result.get("isError") is True, result.get("_meta") if isinstance(
                                  result.get("_meta"), dict) else None)

    def invalidate_tools_cache(self) -> None:
        """Forget the cached tools list: the next `list_tools()` asks the server."""
        with self._state_lock:
            self._tools, self._tools_generation = None, self._tools_generation + 1

    def _notified(self, method: str, params: Any) -> None:
        """A notification from the server (called by the reader thread)."""
        if method == "notifications/tools/list_changed":
            self.invalidate_tools_cache()
        elif method == "notifications/message":
            import logging

            params = params if isinstance(params, dict) else {}
            logging.getLogger(__name__).debug(
                "MCP server %r logged (%s) %s", self.name, self._shown(params.get("level"), 20),
                self._shown(params.get("data"), 500))

    def _shown(self, data: Any, limit: int = 200) -> str:
        """`preview` of what the server sent, without the values of its environment (as `StdioConnection.shown`)."""
        return preview(data, limit, (self.params["env"] or {}).values())

    # --- Approval ------------------------------------------------------------------------------------

    def needs_approval(self, tool: MCPTool, agent: Any) -> Any:
        policy = self._approval
        if isinstance(policy, bool):
            return policy
        if isinstance(policy, dict):
            return policy.get(tool.name, False)

        def ask(run_context: Any, arguments: Any, call_id: str) -> bool:
            return bool(call(policy, run_context, agent, tool))
        return ask

    def __deepcopy__(self, memo: dict) -> "MCPServerStdio":
        """A server is a shared service, not data: copying an agent keeps its servers (and their process)."""
        return self

    def __repr__(self) -> str:
        return f"MCPServerStdio(name={self.name!r}, connected={self.connected})"


class _NotProvided:
    """A transport this client does not have: making one raises `MCPTransportNotProvidedError`."""

    transport = ""

    def __init__(self, *args: Any, **kwargs: Any):
        raise MCPTransportNotProvidedError(
            f"{type(self).__name__} is not provided: miniagents' MCP client speaks stdio only (MCPServerStdio, a "
            f"local server as a child process), not {self.transport}. For a remote server, use HostedMCPTool (the "
            "model provider calls it), or run a stdio-to-HTTP bridge as an MCPServerStdio.")


class MCPServerStreamableHttp(_NotProvided):
    transport = "Streamable HTTP"


class MCPServerSse(_NotProvided):
    transport = "HTTP with Server-Sent Events"
