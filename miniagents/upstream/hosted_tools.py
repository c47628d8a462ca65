"""The tools the model provider runs (Responses API only): web and file search, hosted MCP servers, code
interpreter, image generation. Each is configuration: the kernel sends its `spec()` (the Responses API's tool
object) with the `include` values it needs, never calls it, and keeps the items its calls produce. A Chat
Completions model refuses them. Part of the upstream shell, with their base, `HostedTool`: the kernel knows only
what a tool the provider runs has (`agent.provider_tool`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Literal, Optional, TypedDict, Union

from ..errors import UserError
from ..schema import SpecReads
from ..tool import FunctionTool


class HostedTool(SpecReads):
    """Base of the hosted tools: `name` is the tool's type, `spec()` the Responses API tool object (by default a
    copy of the tool's `tool_config`, sent as given), `includes` the `include` values the request needs. A Chat
    Completions model refuses them."""

    name = ""
    includes: tuple = ()
    is_enabled = True

    def __post_init__(self):
        """A `tool_config` that is no mapping is refused where the tool is made: it was a bare TypeError or
        ValueError out of the run, when a request was built."""
        config = getattr(self, "tool_config", {})
        if not isinstance(config, Mapping):
            raise UserError(f"{type(self).__name__} tool_config must be a dict (the Responses API's tool object), "
                            f"got {type(config).__name__}")

    def spec(self) -> dict:
        return dict(getattr(self, "tool_config"))


@dataclass
class FileSearchTool(HostedTool):
    """Search the given vector stores (OpenAI's file search)."""

    vector_store_ids: List[str]
    max_num_results: Optional[int] = None
    include_search_results: bool = False
    ranking_options: Optional[dict] = None
    filters: Optional[dict] = None

    def __post_init__(self):
        n = self.max_num_results
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 50):
            raise UserError("FileSearchTool max_num_results must be zero, an integer between 1 and 50, or None.")

    @property
    def name(self) -> str:
        return "file_search"

    @property
    def includes(self) -> tuple:
        return ("file_search_call.results",) if self.include_search_results else ()

    def spec(self) -> dict:
        spec: dict = {"type": "file_search", "vector_store_ids": list(self.vector_store_ids)}
        if self.max_num_results:  # 0 and None both mean the provider's default
            spec["max_num_results"] = self.max_num_results
        if self.ranking_options:
            spec["ranking_options"] = self.ranking_options
        if self.filters:
            spec["filters"] = self.filters
        return spec


class WebSearchToolImageSettings(TypedDict, total=False):
    """Image results of `WebSearchTool` when `search_content_types` includes "image"."""

    max_results: int
    caption: bool


@dataclass
class WebSearchTool(HostedTool):
    """Search the web (OpenAI's web search)."""

    user_location: Optional[dict] = None
    filters: Optional[dict] = None
    search_context_size: Literal["low", "medium", "high"] = "medium"
    external_web_access: Optional[bool] = None
    search_content_types: Optional[List[str]] = None
    image_settings: Optional[WebSearchToolImageSettings] = None

    @property
    def name(self) -> str:
        return "web_search"

    @property
    def includes(self) -> tuple:
        return ("web_search_call.results",) if "image" in (self.search_content_types or ()) else ()

    def spec(self) -> dict:
        filters = self.filters
        dump = getattr(filters, "model_dump", None)
        spec: dict = {"type": "web_search", "filters": dump() if callable(dump) else filters,
                      "user_location": self.user_location, "search_context_size": self.search_context_size}
        if self.external_web_access is not None:
            spec["external_web_access"] = self.external_web_access
        if self.search_content_types is not None:
            spec["search_content_types"] = list(self.search_content_types)
        if self.image_settings is not None:
            spec["image_settings"] = dict(self.image_settings)
        return spec


@dataclass
class HostedMCPTool(HostedTool):
    """A remote MCP server the provider calls for the model (`tool_config`: the Responses API's `mcp` tool).
    The server's approval requests (`mcp_approval_request` items) stay in the transcript, to be answered
    with an `mcp_approval_response` input item in the next run; answering them during the run
    (`on_approval_request`) is refused: set `"require_approval": "never"` in `tool_config` instead."""

    tool_config: Dict[str, Any]
    on_approval_request: Optional[Callable] = None

    def __post_init__(self):
        super().__post_init__()
        if self.on_approval_request is not None:
            raise UserError("HostedMCPTool(on_approval_request=...) is not supported by miniagents: approval requests "
                            "stay in the transcript (answer them with an mcp_approval_response input item in the next "
                            "run), or set \"require_approval\": \"never\" in tool_config")

    @property
    def name(self) -> str:
        return "hosted_mcp"


@dataclass
class CodeInterpreterTool(HostedTool):
    """Run code in a provider-side container (`tool_config`: the Responses API's `code_interpreter` tool)."""

    tool_config: Dict[str, Any]

    @property
    def name(self) -> str:
        return "code_interpreter"


class ImageGenerationToolConfig(TypedDict, total=False):
    """The Responses API's `image_generation` tool settings (sent unchanged)."""

    type: Literal["image_generation"]
    action: str
    background: str
    input_fidelity: Optional[str]
    input_image_mask: dict
    model: str
    moderation: str
    output_compression: int
    output_format: str
    partial_images: int
    quality: str
    size: str


@dataclass
class ImageGenerationTool(HostedTool):
    """Generate images on the provider's side (`tool_config`: the Responses API's `image_generation` tool)."""

    tool_config: Dict[str, Any]

    @property
    def name(self) -> str:
        return "image_generation"


Tool = Union[FunctionTool, FileSearchTool, WebSearchTool, HostedMCPTool, CodeInterpreterTool, ImageGenerationTool]


@dataclass
class MCPToolChoice:
    """Upstream's `tool_choice` that forces one tool of a hosted MCP server (`ModelSettings(tool_choice=...)`)."""

    server_label: str
    name: str
