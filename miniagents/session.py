"""Sessions: the conversation a run loads before its first turn and appends to after each turn.

The contract every session keeps: `Session` (`SessionABC` is its abstract-class form) and `SessionSettings`. A run
reads the history once with `get_items` and writes each finished turn with one `add_items` (one transaction).
`SQLiteSession` (sqlite_session.py) and the dbapi shell's `DBAPISession` are built on sql_session.py's tables.

A session that also keeps the exactly-once ledger (`claim_call`, `settle_call`, `add_items(..., once=key)`, as
both of those do) lets the kernel guarantee that an approved call never runs twice however a paused state is resumed.
The kernel looks these methods up with `getattr`, so a session without them still works, without that guarantee.

Methods do their work when called, as the kernel does; what they return can also be awaited (`SessionItems`, a
`caller.Ready`), so code written for upstream's coroutines runs unchanged, and a session of your own may define
them as coroutines: the kernel awaits what they return. How else sessions differ from upstream: docs/porting.md.
"""
from __future__ import annotations

import abc
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Protocol, runtime_checkable

from .caller import AlreadyDone
from .context import from_fields, overlay


@dataclass
class SessionSettings:
    """How much history a session returns. `limit`: newest N items; `limit_turns`: last N user turns."""

    limit: Optional[int] = None
    limit_turns: Optional[int] = None

    def __post_init__(self):
        for name in ("limit", "limit_turns"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise TypeError(f"SessionSettings.{name} must be an int or None, got {type(value).__name__} "
                                "(settings given as a dict: SessionSettings(**settings) or SessionSettings.coerce)")

    @classmethod
    def coerce(cls, value: Any) -> SessionSettings:
        """Settings given as settings, a dict of their fields (upstream accepts both) or None (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, dict):
            return from_fields(cls, value, "SessionSettings")
        if not isinstance(value, SessionSettings):
            raise TypeError(f"session settings must be SessionSettings, a dict or None, got {type(value).__name__}")
        return value

    def resolve(self, override: Any) -> SessionSettings:
        """These settings with every non-None field of `override` (settings, or a dict of them) put over them."""
        return overlay(self, None if override is None else self.coerce(override))

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


class SessionItems(list, AlreadyDone):
    """The list `get_items` returns: a list, which code written against upstream's async API can also `await`
    or hand to `asyncio.run` (it is its own result)."""


@runtime_checkable
class Session(Protocol):
    """Anything that stores a conversation; synchronous methods (upstream's are coroutines).

    `get_items(limit)`: the newest `limit` items (default `session_settings.limit`, else all), oldest first.
    `add_items(items)`: append, all or none. `pop_item()`: remove and return the newest item, or None.
    `clear_session()`: remove every item of this session.
    """

    session_id: str
    session_settings: Optional[SessionSettings]

    def get_items(self, limit: Optional[int] = None) -> List[dict]: ...
    def add_items(self, items: List[dict]) -> Any: ...
    def pop_item(self) -> Optional[dict]: ...
    def clear_session(self) -> None: ...


class SessionABC(abc.ABC):
    """The abstract-class form of `Session`, for implementations that prefer inheritance."""

    session_id: str
    session_settings: Optional[SessionSettings] = None

    @abc.abstractmethod
    def get_items(self, limit: Optional[int] = None) -> List[dict]: ...
    @abc.abstractmethod
    def add_items(self, items: List[dict]) -> Any: ...
    @abc.abstractmethod
    def pop_item(self) -> Optional[dict]: ...
    @abc.abstractmethod
    def clear_session(self) -> None: ...


def __getattr__(name: str) -> Any:
    """`from miniagents.session import SQLiteSession` (or `DBAPISession`, `SessionStoreError`): the package's
    table of names that load on first use says where each lives, and loads only that module."""
    if name in ("SQLiteSession", "DBAPISession", "SessionStoreError"):
        from . import __getattr__ as load

        return load(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
