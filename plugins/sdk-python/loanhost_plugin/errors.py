"""The tool errors of `loan:reporting/types`, as exceptions. Raise one from `run` and the client
sees a tool result with `isError: true` whose text starts with its code (`invalid_params: …`).
The `data` capability's refusals are raised as the tool error a client should see: a dataset or
field not granted as `Forbidden`, a malformed query as `InvalidParams`, an unavailable store as
`Internal`, so a plugin that does not catch them still answers precisely."""


class ToolError(Exception):
    """A tool-level failure the model should see. Use one of the four subclasses."""

    code = "internal"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidParams(ToolError):
    """The arguments are wrong: a wrong type, an unknown enum value, an unknown property."""

    code = "invalid_params"


class BadRequest(ToolError):
    """The arguments are well-formed but contradictory, e.g. `toDate` before `fromDate`."""

    code = "bad_request"


class Forbidden(ToolError):
    """The caller lacks a role the report needs, or the plugin a dataset or field."""

    code = "forbidden"


class Internal(ToolError):
    """Anything else; the text must not leak internals."""

    code = "internal"


class DataDenied(Forbidden):
    """`data-error.denied`: the dataset or a field is not granted, or the caller may not read it."""


class InvalidQuery(InvalidParams):
    """`data-error.invalid-query`: unknown field, a value of the wrong type, a bad filter."""


class DataUnavailable(Internal):
    """`data-error.unavailable`: the data store is unavailable or the statement timed out."""


class BadCursor(InvalidParams):
    """`list-error.bad-cursor`: the cursor was not issued for this caller and this list (changed,
    another caller's, or another list's). The message starts with `cursor: `."""


class StaleCursor(BadRequest):
    """`list-error.stale-cursor`: an import landed since the cursor's page; list again from the
    first page. The message starts with `cursor: `."""


class NotLicensed(Forbidden):
    """`pricing-error.not-licensed`: the caller holds no licence in the scenario's property state
    that has not expired."""
