"""What a model's answer must look like before the kernel sees it: checked where it enters, field by field.

Where it sits: both adapters read every answer (a body, a stream chunk, a stream event) through these
helpers, so an answer that is valid JSON but the wrong shape (a usage count that is an object, a tool call
that is a string, a text part without text) becomes a `ModelBehaviorError` naming the field, never a
KeyError or TypeError from deep inside the kernel. Output items are checked for exactly what the kernel
reads from them; anything else in them passes through untouched. Streamed text is cleaned as it
arrives (`Deltas`), so a lone surrogate cannot break a later request or database write.
Never: quote the offending value (it could hold anything, a key the server echoed included).
"""
from __future__ import annotations

import sys
from typing import Any, Optional

from ..errors import ModelBehaviorError
from ..items import clean_text

_KINDS = ((dict, "an object"), (list, "an array"), (str, "a string"), (bool, "a boolean"), (int, "a number"),
          (float, "a number"), (type(None), "null"))


def kind_of(value: Any) -> str:
    """The JSON kind of a decoded value, in words ("an object", "a string", ...)."""
    return next((name for cls, name in _KINDS if isinstance(value, cls)), type(value).__name__)


def malformed(where: str, value: Any, expected: str) -> ModelBehaviorError:
    return ModelBehaviorError(f"The model's answer is malformed: {where} is {kind_of(value)}, expected {expected}.")


def _checker(types: Any, expected: str):
    def check(value: Any, where: str) -> Any:
        if not isinstance(value, types):
            raise malformed(where, value, expected)
        return value
    return check


obj = _checker(dict, "an object")
text = _checker(str, "a string")  # a string that must be there (an empty string is fine)
opt_str = _checker((str, type(None)), "a string")


def arr(value: Any, where: str) -> list:
    """An array; a missing one (null) reads as empty."""
    return [] if value is None else _checker(list, "an array")(value, where)


def count(value: Any, where: str) -> int:
    """A token count: a non-negative number a float holds (null means 0): no count is larger, and a larger int
    summed into a run's usage could outgrow what its state's JSON may write."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value:
        raise malformed(where, value, "a non-negative number")
    if value > sys.float_info.max:  # 10**400, or inf
        raise malformed(where, value, f"a non-negative number at most {sys.float_info.max:.1e} (a float's largest)")
    return int(value)


RESPONSES_USAGE = ("input_tokens", "output_tokens", "total_tokens", "input_tokens_details", "cached_tokens",
                   "output_tokens_details", "reasoning_tokens")
CHAT_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "cached_tokens",
              "completion_tokens_details", "reasoning_tokens")


def usage(data: Any, where: str = "usage", names: tuple = RESPONSES_USAGE) -> Optional[dict]:
    """A usage object (field `names` in the order of `RESPONSES_USAGE`), checked, in the Responses shape with
    missing parts counted 0; None stays None."""
    if data is None:
        return None
    inp, out, total, in_details, cached, out_details, reasoning = names
    data = obj(data, where)
    ins = obj({} if data.get(in_details) is None else data[in_details], f"{where}.{in_details}")
    outs = obj({} if data.get(out_details) is None else data[out_details], f"{where}.{out_details}")
    n_in, n_out = count(data.get(inp), f"{where}.{inp}"), count(data.get(out), f"{where}.{out}")
    return {"input_tokens": n_in, "output_tokens": n_out,
            "total_tokens": count(data.get(total), f"{where}.{total}") or n_in + n_out,
            "input_tokens_details": {"cached_tokens": count(ins.get(cached), f"{where}.{in_details}.{cached}")},
            "output_tokens_details": {"reasoning_tokens": count(outs.get(reasoning),
                                                                f"{where}.{out_details}.{reasoning}")}}


def output_items(items: Any, where: str = "output") -> list:
    """Responses-shaped output items, each checked for what the kernel reads from it."""
    items = arr(items, where)
    for i, item in enumerate(items):
        output_item(item, f"{where}[{i}]")
    return items


def output_item(item: Any, where: str) -> dict:
    item = obj(item, where)
    kind = text(item.get("type"), f"{where}.type")
    if kind == "message":
        for j, part in enumerate(arr(item.get("content"), f"{where}.content")):
            part = obj(part, f"{where}.content[{j}]")
            part_kind = opt_str(part.get("type"), f"{where}.content[{j}].type")
            if part_kind in ("output_text", "refusal"):
                field = "text" if part_kind == "output_text" else "refusal"
                text(part.get(field), f"{where}.content[{j}].{field}")
    elif kind == "function_call":
        if not text(item.get("name"), f"{where}.name"):
            raise ModelBehaviorError(f"The model's answer is malformed: {where}.name is empty.")
        text(item.get("arguments"), f"{where}.arguments")
        opt_str(item.get("call_id"), f"{where}.call_id")
    elif kind == "reasoning":
        for field in ("summary", "content"):
            for j, part in enumerate(arr(item.get(field), f"{where}.{field}")):
                opt_str(obj(part, f"{where}.{field}[{j}]").get("text"), f"{where}.{field}[{j}].text")
    return item


class Deltas:
    """One streamed text (message text, arguments, reasoning) as its pieces arrive, cleaned on the way.

    A surrogate pair split across two pieces comes out joined; a lone surrogate becomes U+FFFD
    (`items.clean_text`). A piece ending in a high surrogate is held back until the next one.
    """

    def __init__(self):
        self.parts: list = []
        self._held = ""

    def add(self, piece: str) -> str:
        """Take one raw piece; return the cleaned text that can be emitted now."""
        piece, self._held = self._held + piece, ""
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        piece = clean_text(piece)
        self.parts.append(piece)
        return piece

    def flush(self) -> str:
        """The held-back piece, cleaned (a lone surrogate at the very end), or "" when none."""
        held, self._held = clean_text(self._held), ""
        if held:
            self.parts.append(held)
        return held

    @property
    def emitted(self) -> str:
        """What `add` has returned so far (without a piece still held back)."""
        return "".join(self.parts)

    @property
    def value(self) -> str:
        return self.emitted + clean_text(self._held)
