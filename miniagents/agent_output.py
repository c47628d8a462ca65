"""An agent's `output_type` as the model sees it and as the run reads it back: `AgentOutputSchema`.

The model is sent a JSON schema named `final_output` (strict unless `AgentOutputSchema(T,
strict_json_schema=False)` says otherwise); as upstream, a type that is not a pydantic model or a dict type
(a dataclass, a list, an int) is wrapped as `{"response": T}` and unwrapped after parsing. The final text
is parsed with the same validator tool arguments use, so a wrong answer names its path. An agent's
`output_type` may also be any `AgentOutputSchemaBase`, used as given. Declared once per type and cached:
building a schema is pure, and a turn must not pay for it again.
"""
from __future__ import annotations

import abc
import json
from typing import Any, Optional

from .errors import ModelBehaviorError, UserError
from .schema import SpecReads, type_schema
from .items import clean_json, preview
from .validate import STRICT_JSON, ArgumentsError, jsonable, type_name, validate_value

FINAL_OUTPUT = "final_output"  # the schema's name on the wire


class InvalidFinalOutput(ModelBehaviorError):
    """The final text does not parse into the agent's output_type; `.raw_text` keeps it."""

    def __init__(self, message: str, raw_text: str):
        super().__init__(message)
        self.raw_text = raw_text


class AgentOutputSchemaBase(SpecReads, abc.ABC):
    """What the run needs of an output type: its JSON schema, whether it is strict or plain text, its name,
    and how to turn the model's final text into the output (raising `ModelBehaviorError` when it does not fit).
    Subclass it to control the schema sent and the parsing done; pass an instance as `Agent(output_type=...)`."""

    _wrapped = False  # the answer is {"response": value} (AgentOutputSchema's rule for non-object types)

    @abc.abstractmethod
    def is_plain_text(self) -> bool: ...

    @abc.abstractmethod
    def name(self) -> str: ...

    @abc.abstractmethod
    def json_schema(self) -> dict: ...

    @abc.abstractmethod
    def is_strict_json_schema(self) -> bool: ...

    @abc.abstractmethod
    def validate_json(self, json_str: str) -> Any: ...

    def validate_data(self, data: Any) -> Any:
        """Already-decoded JSON data (an error handler's dict or list) -> the output (here: via its JSON text)."""
        return self.validate_json(json.dumps(data))

    def spec(self) -> Optional[dict]:
        """What the kernel sends a model: None for plain text, else `{"name", "schema", "strict"}`."""
        if self.is_plain_text():
            return None
        return {"name": FINAL_OUTPUT, "schema": self.json_schema(), "strict": self.is_strict_json_schema()}

    def model_text(self, value: Any) -> str:
        """A final output as the model would have written it (an error handler's, kept in the history): compact
        JSON, wrapped like the schema; text as is."""
        if self.is_plain_text():
            return value if isinstance(value, str) else str(value)
        data = jsonable(value)
        return json.dumps({"response": data} if self._wrapped else data, ensure_ascii=False, separators=(",", ":"))


class AgentOutputSchema(AgentOutputSchemaBase):
    """The JSON schema of `output_type` (None or `str`: plain text, no schema) and how to read an answer."""

    def __init__(self, output_type: Any, strict_json_schema: bool = True):
        self.output_type = output_type
        self._strict = strict_json_schema
        self._schema: Optional[dict] = None
        if not self.is_plain_text():
            try:
                self._schema, self._wrapped = type_schema(output_type, strict=strict_json_schema,
                                                              output_rule=True)
            except UserError as e:
                if not strict_json_schema:
                    raise
                raise UserError(f"Strict JSON schema is enabled, but the output type is not valid: {e.message}. "
                                "Either make the output type strict, or wrap your type with "
                                "AgentOutputSchema(YourType, strict_json_schema=False)") from None

    def is_plain_text(self) -> bool:
        return self.output_type in (None, str)

    def is_strict_json_schema(self) -> bool:
        return self._strict

    def json_schema(self) -> dict:
        if self._schema is None:
            raise UserError("Output type is plain text, so no JSON schema is available")
        return self._schema

    def name(self) -> str:
        return "str" if self.output_type is None else type_name(self.output_type)

    def validate_json(self, text: str) -> Any:
        """The model's final text -> an `output_type` value; `InvalidFinalOutput` says what does not fit."""
        try:  # a "\\ud800" escape's lone surrogate is repaired, as in tool arguments: UTF-8 cannot write it
            if not isinstance(text, str):  # (None, bytes: the decoder's bare TypeError)
                raise ArgumentsError(f"expected a JSON string, got {type(text).__name__}")
            data = clean_json(STRICT_JSON.decode(text))
            if self._wrapped:
                if not isinstance(data, dict) or "response" not in data:
                    raise ArgumentsError("expected an object with a 'response' key")
                data = data["response"]
            return validate_value(self.output_type, data, strict=self._strict)
        except (ValueError, RecursionError, ArgumentsError) as e:
            detail = getattr(e, "message", None) or str(e) or "nested too deeply"
            raise InvalidFinalOutput(f"Invalid JSON when parsing model output: {detail}. Raw text: "
                                     f"{preview(repr(text))}", text) from None

    def validate_data(self, data: Any) -> Any:
        """Already-decoded JSON data (an error handler's dict or list) -> an `output_type` value."""
        return validate_value(self.output_type, data, strict=self._strict)


_cache: dict = {}


def output_schema(output_type: Any) -> AgentOutputSchemaBase:
    """The schema object of an agent's `output_type` (itself when it is one), built once per (hashable) type. The
    key holds the type's repr too: `Union[int, float] == Union[float, int]`, but the first arm that fits wins."""
    if isinstance(output_type, AgentOutputSchemaBase):
        return output_type
    try:
        key = (output_type, repr(output_type))
        return _cache[key]
    except KeyError:
        schema = _cache[key] = AgentOutputSchema(output_type)
        return schema
    except (TypeError, ValueError, RecursionError):  # unhashable, or no repr Python can print: built every time
        return AgentOutputSchema(output_type)
