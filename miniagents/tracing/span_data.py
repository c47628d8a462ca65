"""What a span is about, and its exported JSON shape (upstream's `agents.tracing.span_data`)."""
from __future__ import annotations

import abc
from typing import Any, Mapping, Optional, Sequence


class SpanData(abc.ABC):
    """What a span is about. `type` names the kind; `export()` is upstream's JSON shape. The fields named
    in `sensitive` are cleared before processors see the span when the run excludes sensitive data."""

    __slots__ = ()
    type = "span"
    sensitive: tuple = ()

    @abc.abstractmethod
    def export(self) -> dict: ...


class AgentSpanData(SpanData):
    __slots__ = ("name", "handoffs", "tools", "output_type", "metadata")
    type = "agent"

    def __init__(self, name: str, handoffs: Optional[list] = None, tools: Optional[list] = None,
                 output_type: Optional[str] = None, metadata: Optional[dict] = None):
        self.name, self.handoffs, self.tools, self.output_type = name, handoffs, tools, output_type
        self.metadata = metadata

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "handoffs": self.handoffs, "tools": self.tools,
                "output_type": self.output_type}


class FunctionSpanData(SpanData):
    __slots__ = ("name", "input", "output", "mcp_data")
    type = "function"
    sensitive = ("input", "output")

    def __init__(self, name: str, input: Optional[str] = None, output: Any = None,
                 mcp_data: Optional[dict] = None):
        self.name, self.input, self.output, self.mcp_data = name, input, output, mcp_data

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "input": self.input,
                "output": str(self.output) if self.output is not None else None, "mcp_data": self.mcp_data}


class GenerationSpanData(SpanData):
    __slots__ = ("input", "output", "model", "model_config", "usage")
    type = "generation"
    sensitive = ("input", "output")

    def __init__(self, input: Optional[Sequence] = None, output: Optional[Sequence] = None,
                 model: Optional[str] = None, model_config: Optional[Mapping] = None,
                 usage: Optional[dict] = None):
        self.input, self.output, self.model, self.model_config, self.usage = input, output, model, model_config, usage

    def export(self) -> dict:
        return {"type": self.type, "input": self.input, "output": self.output, "model": self.model,
                "model_config": self.model_config, "usage": self.usage}


class HandoffSpanData(SpanData):
    __slots__ = ("from_agent", "to_agent")
    type = "handoff"

    def __init__(self, from_agent: Optional[str], to_agent: Optional[str]):
        self.from_agent, self.to_agent = from_agent, to_agent

    def export(self) -> dict:
        return {"type": self.type, "from_agent": self.from_agent, "to_agent": self.to_agent}


class GuardrailSpanData(SpanData):
    __slots__ = ("name", "triggered")
    type = "guardrail"

    def __init__(self, name: str, triggered: bool = False):
        self.name, self.triggered = name, triggered

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "triggered": self.triggered}


class CustomSpanData(SpanData):
    __slots__ = ("name", "data")
    type = "custom"

    def __init__(self, name: str, data: dict):
        self.name, self.data = name, data

    def export(self) -> dict:
        return {"type": self.type, "name": self.name, "data": self.data}


class TaskSpanData(SpanData):
    """One Runner invocation; exported as a custom span, as upstream does."""

    __slots__ = ("name", "usage", "metadata")
    type = "task"

    def __init__(self, name: str, usage: Optional[dict] = None, metadata: Optional[dict] = None):
        self.name, self.usage, self.metadata = name, usage, metadata

    def export(self) -> dict:
        data: dict = {"sdk_span_type": self.type, "name": self.name}
        if self.usage is not None:
            data["usage"] = self.usage
        return {"type": "custom", "name": self.type, "data": data}


class TurnSpanData(SpanData):
    """One turn of the loop (one model call and what it led to); exported as a custom span, as upstream does."""

    __slots__ = ("turn", "agent_name", "usage", "metadata")
    type = "turn"

    def __init__(self, turn: int, agent_name: str, usage: Optional[dict] = None, metadata: Optional[dict] = None):
        self.turn, self.agent_name, self.usage, self.metadata = turn, agent_name, usage, metadata

    def export(self) -> dict:
        data: dict = {"sdk_span_type": self.type, "turn": self.turn, "agent_name": self.agent_name}
        if self.usage is not None:
            data["usage"] = self.usage
        return {"type": "custom", "name": self.type, "data": data}
