"""Results that add up: one rule for summing what a stage reports over uploads, batches and days.

A stage's result is a dataclass of counts, lists of keys, per-name counters and nested
results; a run over several days (or a load over several batches) adds them up field by
field. `Tally.add(other)` does that for every such dataclass, by the field's value:

- a number adds (bools are not numbers here: a flag needs its own rule);
- a list extends;
- a dict (a Counter too) adds per key: numbers add, nested tallies add, anything else keeps
  the first value seen for that key;
- a nested tally adds;
- an optional field (`X | None`) keeps the first value that is not None;
- any other value (a day, a name) keeps the first.

A field that needs another rule says so where it is declared: `summed_by(rule, ...)`, e.g.
a check passes only when every part passed (`all_passed`), a list of examples stays capped
(`capped(n)`).
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

Rule = Callable[[Any, Any], Any]
T = TypeVar("T", bound="Tally")

_RULE = "chatetl.tally.rule"


def summed_by(rule: Rule, **field_kwargs: Any) -> Any:
    """A dataclass field added up by `rule(mine, theirs) -> new value` instead of the default rule."""
    metadata = {**field_kwargs.pop("metadata", {}), _RULE: rule}
    return dataclasses.field(metadata=metadata, **field_kwargs)


def all_passed(mine: bool, theirs: bool) -> bool:
    return bool(mine and theirs)


def capped(limit: int) -> Rule:
    """Lists extended up to `limit` items (examples shown to a person, not a complete record)."""

    def rule(mine: list[Any], theirs: list[Any]) -> list[Any]:
        mine.extend(theirs[: max(0, limit - len(mine))])
        return mine

    return rule


def _optional(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _combine(mine: Any, theirs: Any, name: str) -> Any:
    if isinstance(mine, Tally):
        mine.add(theirs)
        return mine
    if isinstance(mine, list):
        mine.extend(theirs)
        return mine
    if isinstance(mine, dict):
        for key, value in theirs.items():
            if key not in mine:
                mine[key] = copy.deepcopy(value) if isinstance(value, Tally) else value
            elif _is_number(value) or isinstance(value, Tally):
                mine[key] = _combine(mine[key], value, f"{name}[{key!r}]")
        return mine
    if isinstance(mine, bool) or isinstance(theirs, bool):
        raise TypeError(f"{name}: no rule to add flags; declare it with summed_by(...)")
    if _is_number(mine):
        return mine + theirs
    return mine


class Tally:
    """Mixin for dataclasses whose results add up (see the module doc for the rules)."""

    def add(self, other: typing.Self) -> typing.Self:
        """Fold `other` into this one (in place); returns self."""
        hints = _hints(type(self))
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            rule = f.metadata.get(_RULE)
            if rule is not None:
                value = rule(mine, theirs)
            elif _optional(hints.get(f.name)):
                value = theirs if mine is None else mine
            else:
                value = _combine(mine, theirs, f"{type(self).__name__}.{f.name}")
            setattr(self, f.name, value)
        return self

    @classmethod
    def total(cls, parts: Iterable[typing.Self], *args: Any, **kwargs: Any) -> typing.Self:
        """A fresh tally (`cls(*args, **kwargs)`) with every part added to it."""
        out = cls(*args, **kwargs)
        for part in parts:
            out.add(part)
        return out


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]
