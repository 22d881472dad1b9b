"""Dataclasses as a tool's arguments and results: parsed from the client's JSON with one precise
`invalid_params` message per mistake (naming the argument by its path), written back as JSON,
and described by the JSON Schema that `tools/list` shows. Field names are written in camelCase
(`group_by` is `groupBy`), as the spec's JSON is; `field(name=...)` overrides one.

Types understood: `str`, `int`, `bool`, `decimal.Decimal` (exact: a JSON number or a numeric
string), `datetime.date` (`YYYY-MM-DD`), `uuid.UUID`, a string `enum.Enum` (its values), `X |
None` (absent or `null`), `list[X]`, `dict` / `typing.Any` (any JSON, passed through), and
nested dataclasses. `float` is refused: money is never a float.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import typing
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from .errors import InvalidParams


def field(
    *,
    description: str | None = None,
    name: str | None = None,
    omit_if_none: bool = False,
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
    schema: dict | None = None,
) -> Any:
    """A dataclass field with what loanhost needs to know: its `description` (shown to the
    model), its JSON `name` (default: camelCase of the attribute), `omit_if_none` (a result
    field left out when None, rather than written as null), and an explicit JSON `schema` (for
    an argument whose schema the SDK cannot derive, e.g. `loan_filter_schema()`; its `enum`, if
    any, is enforced when the arguments are parsed)."""
    metadata = {
        "description": description,
        "name": name,
        "omit_if_none": omit_if_none,
        "schema": schema,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def camel(name: str) -> str:
    """`metric_field` -> `metricField`."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _json_name(f: dataclasses.Field) -> str:
    return f.metadata.get("name") or camel(f.name)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    # Resolved once per class: a component's calls start from the snapshot taken at build time,
    # when the warm-up call (see `tool.warm_up`) has filled this.
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


_OPTIONAL: dict[Any, tuple[bool, Any]] = {}


def _optional(tp: Any) -> tuple[bool, Any]:
    """(True, X) for `X | None` / `Optional[X]`, else (False, tp); worked out once per type."""
    try:
        return _OPTIONAL[tp]
    except (KeyError, TypeError):  # TypeError: a type that cannot be a key
        pass
    known = _optional_of(tp)
    try:
        _OPTIONAL[tp] = known
    except TypeError:
        pass
    return known


def _optional_of(tp: Any) -> tuple[bool, Any]:
    args = typing.get_args(tp)
    if args and type(None) in args and (
        typing.get_origin(tp) is typing.Union or type(tp).__name__ == "UnionType"
    ):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return True, rest[0]
    return False, tp


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean `{str(v).lower()}`"
    if isinstance(v, (int, Decimal)):
        return f"number {v}"
    if isinstance(v, str):
        return f'string "{v}"'
    if isinstance(v, list):
        return "a sequence"
    if isinstance(v, dict):
        return "a map"
    return type(v).__name__


def _at(path: str, message: str) -> InvalidParams:
    return InvalidParams(f"{path}: {message}" if path else message)


def parse(cls: type, value: Any, path: str = "") -> Any:
    """Builds the dataclass `cls` from the JSON object `value` (`None` counts as `{}`); raises
    `InvalidParams` naming the argument at fault."""
    if value is None and not path:
        value = {}
    if not isinstance(value, dict):
        if not path:
            raise InvalidParams(f"arguments must be a JSON object, got {_kind(value)}")
        raise _at(path, f"invalid type: {_kind(value)}, expected an object")
    plan = _parse_plan(cls)
    for key in value:
        if key not in plan:
            expected = ", ".join(f"`{n}`" for n in plan)
            raise _at(path, f"unknown field `{key}`, expected one of {expected}")
    kwargs = {}
    for name, (attr, optional, inner, required, allowed) in plan.items():
        if name not in value or (value[name] is None and optional):
            if required:
                if optional:
                    kwargs[attr] = None
                    continue
                raise _at(path, f"missing field `{name}`")
            continue
        here = f"{path}.{name}" if path else name
        kwargs[attr] = _convert(inner, value[name], here)
        # A field's explicit schema may enumerate its values: they are enforced too.
        if allowed is not None and value[name] not in allowed:
            expected = ", ".join(f"`{x}`" for x in allowed)
            raise _at(here, f"unknown variant `{value[name]}`, expected one of {expected}")
    return cls(**kwargs)


_PARSE_PLANS: dict[type, dict[str, tuple[str, bool, Any, bool, list | None]]] = {}


def _parse_plan(cls: type) -> dict[str, tuple[str, bool, Any, bool, list | None]]:
    """An arguments dataclass's fields by JSON name: (attribute, optional, the type inside
    `| None`, required, the values its explicit schema enumerates), worked out once per class
    (filled by the build's warm-up call, so calls find it in the snapshot)."""
    plan = _PARSE_PLANS.get(cls)
    if plan is None:
        hints = _hints(cls)
        plan = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            optional, inner = _optional(hints[f.name])
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            allowed = (f.metadata.get("schema") or {}).get("enum")
            plan[_json_name(f)] = (f.name, optional, inner, required, allowed)
        _PARSE_PLANS[cls] = plan
    return plan


def _convert(tp: Any, v: Any, path: str) -> Any:
    optional, tp = _optional(tp)
    if v is None:
        if optional:
            return None
        raise _at(path, f"invalid type: null, expected {_expected(tp)}")
    origin = typing.get_origin(tp)
    if tp is Any:
        return v
    if tp is dict or origin is dict:
        if not isinstance(v, dict):
            raise _at(path, f"invalid type: {_kind(v)}, expected a map")
        return v
    if origin is list or tp is list:
        (item,) = typing.get_args(tp) or (Any,)
        if not isinstance(v, list):
            raise _at(path, f"invalid type: {_kind(v)}, expected a sequence")
        return [_convert(item, x, f"{path}[{i}]") for i, x in enumerate(v)]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = _members(tp)
        if isinstance(v, str) and v in members:
            return members[v]
        if not isinstance(v, str):
            raise _at(path, f"invalid type: {_kind(v)}, expected a string")
        expected = ", ".join(f"`{x}`" for x in members)
        raise _at(path, f"unknown variant `{v}`, expected one of {expected}")
    if dataclasses.is_dataclass(tp):
        return parse(tp, v, path)
    if tp is bool:
        if isinstance(v, bool):
            return v
    elif tp is int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    elif tp is Decimal:
        if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
            return Decimal(v)
        if isinstance(v, str):
            try:
                d = Decimal(v.strip())
                if d.is_finite():
                    return d
            except InvalidOperation:
                pass
            raise _at(path, f"invalid value: {_kind(v)}, expected a decimal number")
    elif tp is str:
        if isinstance(v, str):
            return v
    elif tp is datetime.date:
        if isinstance(v, str):
            try:
                return datetime.date.fromisoformat(v) if len(v) == 10 else _bad_date(v, path)
            except ValueError:
                _bad_date(v, path)
    elif tp is uuid.UUID:
        if isinstance(v, str):
            try:
                return uuid.UUID(v)
            except ValueError:
                raise _at(path, f"invalid value: {_kind(v)}, expected a UUID") from None
    elif tp is float:
        raise TypeError(f"{path}: float arguments are not supported; use decimal.Decimal")
    raise _at(path, f"invalid type: {_kind(v)}, expected {_expected(tp)}")


_MEMBERS: dict[type, dict[Any, Any]] = {}


def _members(tp: type) -> dict[Any, Any]:
    """A string enum's members by value, in order, worked out once per enum."""
    members = _MEMBERS.get(tp)
    if members is None:
        members = _MEMBERS[tp] = {m.value: m for m in tp}  # type: ignore[attr-defined]
    return members


def _bad_date(v: str, path: str) -> typing.NoReturn:
    raise _at(path, f'invalid value: string "{v}", expected a date as YYYY-MM-DD')


def _expected(tp: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        str: "a string",
        Decimal: "a number",
        datetime.date: "a date as YYYY-MM-DD",
        uuid.UUID: "a UUID",
    }.get(tp, "a value of another type")


def schema(cls: type, *, closed: bool = True) -> dict:
    """The JSON Schema of the dataclass `cls` (an arguments or a result record)."""
    hints = _hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    doc = (cls.__doc__ or "").strip()
    for f in dataclasses.fields(cls):
        name = _json_name(f)
        optional, inner = _optional(hints[f.name])
        s = dict(f.metadata.get("schema") or _schema_of(inner))
        if optional and not f.metadata.get("omit_if_none") and "type" in s and not _is_input(cls):
            s["type"] = [s["type"], "null"] if isinstance(s["type"], str) else s["type"]
        if f.metadata.get("description"):
            s["description"] = f.metadata["description"]
        if f.default is not dataclasses.MISSING and f.default is not None:
            s["default"] = f.default.value if isinstance(f.default, enum.Enum) else f.default
        props[name] = s
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        if _is_input(cls):
            if not has_default and not optional:
                required.append(name)
        elif not f.metadata.get("omit_if_none"):
            required.append(name)
    out: dict[str, Any] = {"type": "object"}
    if doc and not doc.startswith(cls.__name__ + "("):
        out["description"] = doc
    out["properties"] = props
    if required:
        out["required"] = required
    if closed:
        out["additionalProperties"] = False
    return out


def _is_input(cls: type) -> bool:
    return getattr(cls, "__loanhost_input__", False)


def _schema_of(tp: Any) -> dict:
    origin = typing.get_origin(tp)
    if tp is Any or tp is dict or origin is dict:
        return {"type": "object"}
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        _, item = _optional(item)
        return {"type": "array", "items": _schema_of(item)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"type": "string", "enum": [m.value for m in tp]}
    if dataclasses.is_dataclass(tp):
        return schema(tp)
    return {
        bool: {"type": "boolean"},
        int: {"type": "integer"},
        str: {"type": "string"},
        Decimal: {"type": "number"},
        datetime.date: {"type": "string", "format": "date"},
        uuid.UUID: {"type": "string", "format": "uuid"},
    }.get(tp, {})


_PLANS: dict[type, list[tuple[str, str, bool]]] = {}


def json_fields(cls: type) -> list[tuple[str, str, bool]]:
    """A result dataclass's fields as written: (attribute, JSON name, omitted when None), worked
    out once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = [(f.name, _json_name(f), bool(f.metadata.get("omit_if_none"))) for f in dataclasses.fields(cls)]
        _PLANS[cls] = plan
    return plan


def json_fields_of(cls: type) -> list[tuple[str, str, bool]] | None:
    """[`json_fields`] of `cls` if it is a dataclass, else None (one dictionary lookup for a
    class seen before)."""
    plan = _PLANS.get(cls)
    if plan is None and dataclasses.is_dataclass(cls):
        plan = json_fields(cls)
    return plan


def to_json_value(record: Any) -> Any:
    """A result dataclass as JSON-ready values (camelCase names; `omit_if_none` fields left
    out when None; enums as their values; dates and UUIDs as text)."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        out = {}
        for f in dataclasses.fields(record):
            v = getattr(record, f.name)
            if v is None and f.metadata.get("omit_if_none"):
                continue
            out[_json_name(f)] = to_json_value(v)
        return out
    if isinstance(record, list):
        return [to_json_value(x) for x in record]
    if isinstance(record, dict):
        return {k: to_json_value(v) for k, v in record.items()}
    if isinstance(record, enum.Enum):
        return record.value
    if isinstance(record, (datetime.date, uuid.UUID)):
        return str(record)
    return record


def arguments(cls: type) -> type:
    """Marks a dataclass as a tool's arguments: its schema lists as `required` only the fields
    without a default, and refuses properties it does not name."""
    cls.__loanhost_input__ = True
    return cls
