"""JSON in and out with exact decimals: numbers with a fraction are read as `Decimal`, and a
`Decimal` is written as the plain number it is (no float on the way, no exponent)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from decimal import Decimal
from typing import Any

from . import records


def loads(text: str) -> Any:
    """Parses JSON; fractional numbers become `Decimal` (integers stay `int`)."""
    return _DECIMALS.decode(text)


def decimal_text(d: Decimal) -> str:
    """The plain decimal text of `d`, without exponent or trailing zeros (`350000.25`)."""
    if not d.is_finite():
        raise ValueError(f"{d} is not a finite number")
    text = format(d, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def dumps(value: Any) -> str:
    """Serializes dicts, lists, strings, ints, bools, None, `Decimal`, enums (their value),
    dates and UUIDs (as text) and dataclasses (see `loanhost_plugin.records`); a float is refused: money is
    never a float.

    Written by the standard library's C encoder: each `Decimal` is handed to it as a marked
    string (`"\\u0000D350000.25\\u0000E"`), whose quotes and marks are then taken off, and the
    text is read back by the C parser, whose `parse_float` hook refuses any float. Only when a
    string of the result itself holds one of those marks is the slower writer below used."""
    outer = _ENCODING.decimals
    _ENCODING.decimals = 0
    try:
        text = _ENCODING.encoder.encode(value)
        decimals = _ENCODING.decimals
    finally:
        _ENCODING.decimals = outer
    if text.count(_OPEN) != decimals or text.count(_CLOSE) != decimals:
        out: list[str] = []
        _write(value, out)
        return "".join(out)
    _FLOATS_REFUSED.decode(text)
    return text.replace(_OPEN, "").replace(_CLOSE, "") if decimals else text


#: How a decimal starts and ends as the C encoder writes it (NUL escaped, then `D` or `E`).
_OPEN, _CLOSE = '"\\u0000D', '\\u0000E"'


def _refuse_float(text: str) -> Any:
    raise TypeError(f"a float ({text}) in a result: use decimal.Decimal for exact numbers")


class _Encoding:
    """The C encoder with a `default` that writes the SDK's own types, counting the decimals it
    marked in the `dumps` under way (one instance, made at import: a component's calls find it
    in the build's snapshot)."""

    def __init__(self) -> None:
        self.decimals = 0
        self.encoder = json.JSONEncoder(
            ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=self.default
        )

    def default(self, v: Any) -> Any:
        fields = records.json_fields_of(type(v))
        if fields is not None:
            # A result record, one level: the encoder comes back here for what the fields
            # hold, except decimals, marked here (a record's money is most of its values).
            out = {}
            for attr, name, omit_if_none in fields:
                item = getattr(v, attr)
                if item is None:
                    if omit_if_none:
                        continue
                elif type(item) is Decimal:
                    self.decimals += 1
                    item = "\0D" + decimal_text(item) + "\0E"
                out[name] = item
            return out
        if isinstance(v, Decimal):
            self.decimals += 1
            return "\0D" + decimal_text(v) + "\0E"
        if isinstance(v, enum.Enum):
            return v.value
        if isinstance(v, (datetime.date, uuid.UUID)):
            return str(v)
        raise TypeError(f"cannot write a {type(v).__name__} as JSON")


_ENCODING = _Encoding()
#: The C parser with decimals for fractions, and with any float refused (made once, at import).
_DECIMALS = json.JSONDecoder(parse_float=Decimal)
_FLOATS_REFUSED = json.JSONDecoder(parse_float=_refuse_float)


def _write(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, enum.Enum):
        _write(v.value, out)
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, Decimal):
        out.append(decimal_text(v))
    elif isinstance(v, float):
        raise TypeError("a float in a result: use decimal.Decimal for exact numbers")
    elif isinstance(v, str):
        out.append(json.dumps(v, ensure_ascii=False))
    elif isinstance(v, dict):
        out.append("{")
        first = True
        for k, item in v.items():
            if not isinstance(k, str):
                raise TypeError(f"a result key must be a string, got {type(k).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        _write(records.to_json_value(v), out)
    else:
        raise TypeError(f"cannot write a {type(v).__name__} as JSON")
