"""An agent's `output_type` as the model sees it and as the run reads it back: `AgentOutputSchema`.

The model is sent a strict JSON schema named `final_output`; a type that is not an object is wrapped as
`{"response": T}` (JSON Schema roots must be objects) and unwrapped after parsing. The final text is parsed
with the same validator tool arguments use, so a wrong answer names its path. Declared once per type and
cached: building a schema is pure, and a turn must not pay for it again.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from .errors import ModelBehaviorError, UserError
from .schema import type_schema
from .validate import ArgumentsError, jsonable, validate_value

FINAL_OUTPUT = "final_output"  # the schema's name on the wire


class InvalidFinalOutput(ModelBehaviorError):
    """The final text does not parse into the agent's output_type; `.raw_text` keeps it."""

    def __init__(self, message: str, raw_text: str):
        super().__init__(message)
        self.raw_text = raw_text


class AgentOutputSchema:
    """The JSON schema of `output_type` (None or `str`: plain text, no schema) and how to read an answer."""

    def __init__(self, output_type: Any, strict_json_schema: bool = True):
        self.output_type = output_type
        self._strict = strict_json_schema
        self._schema: Optional[dict] = None
        self._wrapped = False
        if not self.is_plain_text():
            self._schema, self._wrapped = type_schema(output_type, strict=strict_json_schema)

    def is_plain_text(self) -> bool:
        return self.output_type in (None, str)

    def is_strict_json_schema(self) -> bool:
        return self._strict

    def json_schema(self) -> dict:
        if self._schema is None:
            raise UserError("Output type is plain text, so no JSON schema is available")
        return self._schema

    def name(self) -> str:
        if self.is_plain_text():
            return "str"
        return getattr(self.output_type, "__name__", None) or repr(self.output_type)

    def spec(self) -> Optional[dict]:
        """What the kernel sends a model: None for plain text, else `{"name", "schema", "strict"}`."""
        if self._schema is None:
            return None
        return {"name": FINAL_OUTPUT, "schema": self._schema, "strict": self._strict}

    def validate_json(self, text: str) -> Any:
        """The model's final text -> an `output_type` value; `InvalidFinalOutput` says what does not fit."""
        try:
            data = json.loads(text)
            if self._wrapped:
                if not isinstance(data, dict) or "response" not in data:
                    raise ArgumentsError("expected an object with a 'response' key")
                data = data["response"]
            return validate_value(self.output_type, data)
        except (ValueError, ArgumentsError) as e:
            detail = getattr(e, "message", None) or str(e)
            raise InvalidFinalOutput(f"Invalid JSON when parsing model output: {detail}. Raw text: {text!r}",
                                     text) from None

    def validate_data(self, data: Any) -> Any:
        """Already-decoded JSON data (an error handler's dict or list) -> an `output_type` value."""
        return validate_value(self.output_type, data)

    def model_text(self, value: Any) -> str:
        """A final output as the model would have written it: compact JSON, wrapped like the schema; text as is."""
        if self.is_plain_text():
            return value if isinstance(value, str) else str(value)
        data = jsonable(value)
        return json.dumps({"response": data} if self._wrapped else data, ensure_ascii=False, separators=(",", ":"))


_cache: dict = {}


def output_schema(output_type: Any) -> AgentOutputSchema:
    """The `AgentOutputSchema` of an agent's `output_type`, built once per (hashable) type."""
    try:
        return _cache[output_type]
    except KeyError:
        schema = _cache[output_type] = AgentOutputSchema(output_type)
        return schema
    except TypeError:  # an unhashable type annotation: build it every time
        return AgentOutputSchema(output_type)
