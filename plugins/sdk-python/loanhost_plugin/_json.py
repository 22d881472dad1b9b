"""JSON in and out with exact decimals: numbers with a fraction are read as `Decimal`, and a
`Decimal` is written as the plain number it is (no float on the way, no exponent)."""

from __future__ import annotations

import dataclasses
import enum
import json
from decimal import Decimal
from typing import Any

from . import records


def loads(text: str) -> Any:
    """Parses JSON; fractional numbers become `Decimal` (integers stay `int`)."""
    return json.loads(text, parse_float=Decimal)


def decimal_text(d: Decimal) -> str:
    """The plain decimal text of `d`, without exponent or trailing zeros (`350000.25`)."""
    if not d.is_finite():
        raise ValueError(f"{d} is not a finite number")
    if d == d.to_integral_value():
        return str(d.quantize(Decimal(1)))
    text = format(d, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def dumps(value: Any) -> str:
    """Serializes dicts, lists, strings, ints, bools, None, `Decimal`, enums (their value) and
    dataclasses (see `loanhost_plugin.result`); a float is refused: money is never a float."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


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
