"""The tool: a class with a name, a title, a description, its arguments and result records, and
a `run` method. The plugin module exports it to the host as `Tool`:

    class HelloReport(loanhost_plugin.Tool):
        name = "hello_report"
        title = "Hello"
        description = "Greets the caller by user id."
        Arguments = NoArguments
        Result = Greeting

        def run(self, args):
            return Greeting(user_id=loanhost_plugin.user_id())

    Tool = HelloReport

The SDK does the rest of the `loan:reporting/tool` export: parses the arguments (every mistake
an `invalid_params` naming the argument), writes the result as JSON with exact decimals, turns
the tool errors into their WIT cases, and routes `print` to the host's log."""

from __future__ import annotations

import dataclasses
import sys
import traceback
from decimal import Decimal
from typing import Any, ClassVar

from . import _json, records
from .data import Rows
from .errors import Internal, InvalidParams, ToolError
from .host import current, mark
from .listing import page
from .testing import FakeHost


@records.arguments
@dataclasses.dataclass
class NoArguments:
    """The arguments of a tool that takes none: any property is refused."""


class _LogStream:
    """`sys.stdout` / `sys.stderr` inside a call: each line becomes a host log line."""

    def __init__(self, level: str):
        self.level = level
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        while "\n" in self.pending:
            line, self.pending = self.pending.split("\n", 1)
            current().log(self.level, line)
        return len(text)

    def flush(self) -> None:
        if self.pending:
            current().log(self.level, self.pending)
            self.pending = ""


class Tool:
    """Base class of a report tool. Set `name`, `title`, `description`, `Arguments` (a dataclass
    marked with `records.arguments`) and `Result` (a dataclass), or `input_schema` /
    `output_schema` as JSON Schema dicts; implement `run`."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    Arguments: ClassVar[type | None] = None
    Result: ClassVar[type | None] = None
    input_schema: ClassVar[dict | None] = None
    output_schema: ClassVar[dict | None] = None

    def run(self, args: Any) -> Any:
        """Runs the tool on the parsed arguments; returns the result record (or a dict)."""
        raise NotImplementedError

    # ---- what the host calls (the `loan:reporting/tool` export) -------------------------

    @classmethod
    def description_of(cls) -> dict:
        """Name, title, description and both schemas, as `tools/list` shows them."""
        if cls.input_schema is not None:
            input_schema = cls.input_schema
        elif cls.Arguments is not None:
            input_schema = records.schema(cls.Arguments)
        else:
            input_schema = records.schema(NoArguments)
        if cls.output_schema is not None:
            output_schema = cls.output_schema
        elif cls.Result is not None:
            output_schema = records.schema(cls.Result, closed=False)
        else:
            output_schema = {"type": "object"}
        return {
            "name": cls.name,
            "title": cls.title,
            "description": cls.description,
            "inputSchema": input_schema,
            "outputSchema": output_schema,
        }

    def describe(self):
        """The WIT `describe` (called once at load; calls no host import)."""
        d = self.description_of()
        from ._wasm import ToolDescription

        return ToolDescription(
            name=d["name"],
            title=d["title"],
            description=d["description"],
            input_schema=_json.dumps(d["inputSchema"]),
            output_schema=_json.dumps(d["outputSchema"]),
        )

    def call(self, arguments: str) -> bytes:
        """The WIT `call`: the result as UTF-8 JSON bytes, or `Err(tool-error)`."""
        from ._wasm import Err, types

        mark("entered")
        try:
            result = self.call_json(arguments).encode()
            mark("serialised")
            return result
        except ToolError as e:
            case = {
                "invalid_params": types.ToolError_InvalidParams,
                "bad_request": types.ToolError_BadRequest,
                "forbidden": types.ToolError_Forbidden,
            }.get(e.code, types.ToolError_Internal)
            raise Err(case(e.message)) from None

    def call_json(self, arguments: str) -> str:
        """Parses `arguments` (JSON text), runs the tool, and writes its result as JSON text;
        tool errors are raised as `ToolError`. Anything else is logged with its traceback and
        raised again (the host then answers `internal:` and keeps the details in its log)."""
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _LogStream("info"), _LogStream("warn")
        try:
            try:
                value = _json.loads(arguments) if arguments.strip() else {}
            except ValueError as e:
                raise InvalidParams(f"arguments are not valid JSON: {e}") from None
            if self.Arguments is not None:
                args = records.parse(self.Arguments, value)
            elif self.input_schema is not None:
                args = value  # the tool checks its arguments against its own schema
            else:
                args = records.parse(NoArguments, value)
            mark("arguments")
            result = self.run(args)
            mark("reported")
            record = dataclasses.is_dataclass(result) and not isinstance(result, type)
            if not record and not isinstance(result, dict):
                raise Internal("the tool produced a result that is not a JSON object")
            return _json.dumps(result)
        except ToolError:
            raise
        except Exception:
            current().log("error", traceback.format_exc())
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = out, err



def _one_row_of_each_kind(query):
    """A query's answer during the warm-up: one row, a text per key, a count or a decimal per
    aggregate, so the code that reads rows runs too."""
    row = ["warm-up" for _ in query.keys] + [
        1 if a.kind.startswith("count") else Decimal("1.5") for a in query.aggregates
    ]
    return Rows([f"c{i}" for i in range(len(row))], [row])


def warm_up(tool: type, arguments: dict | None = None) -> None:
    """Runs the tool once on a stand-in host (the testing module's `FakeHost`) while the
    component is being built: the snapshot every call starts from then holds its caches filled
    (type hints, compiled patterns) and its bytecode specialised. What the warm-up answers is
    discarded."""
    stand_in = FakeHost(
        roles=["Admin", "User"],
        can_read_names=True,
        today="2026-01-01",
        answer=_one_row_of_each_kind,
        pages=lambda q: page(q.fields, [["warm-up" for _ in q.fields]]),
    )
    tool.description_of()
    try:
        stand_in.call(tool, arguments)
    except Exception:
        pass  # a tool may refuse the stand-in's answers: its code has still run
