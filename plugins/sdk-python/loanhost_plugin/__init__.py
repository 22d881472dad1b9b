"""The Python SDK for loanhost report plugins (`loan:reporting@1.2.0`).

A plugin is one module that defines a `loanhost_plugin.Tool` subclass and exports it as `Tool`;
`scripts/build-plugin.sh` turns it into a WebAssembly component with componentize-py
(`--stub-wasi`: the component imports nothing but the host's interfaces). Inside the sandbox
there is no wall clock (`today()` is the host's date), no environment, no files and no network,
and `random` is deterministic. `print` goes to the host's log. See docs/plugins.md.
"""

from . import data, licensing, listing, people, pricing, records
from .data import Query, Rows, Timestamp
from .errors import (
    BadCursor,
    BadRequest,
    DataDenied,
    DataUnavailable,
    Forbidden,
    Internal,
    InvalidParams,
    InvalidQuery,
    NotLicensed,
    StaleCursor,
    ToolError,
)
from .host import can_read_names, has_any_role, log, roles, today, user_id
from .records import arguments, field
from .tool import NoArguments, Tool
from .vocabulary import LOAN_FILTER_SCHEMA, LOAN_STATUSES, LOAN_TYPES, PURPOSES

from .host import _bind_component

_bind_component()

#: The WIT version this SDK targets; manifests name it in `wit_version`.
WIT_VERSION = "1.2.0"

__all__ = [
    "BadCursor",
    "BadRequest",
    "DataDenied",
    "DataUnavailable",
    "Forbidden",
    "Internal",
    "InvalidParams",
    "InvalidQuery",
    "LOAN_FILTER_SCHEMA",
    "LOAN_STATUSES",
    "LOAN_TYPES",
    "NoArguments",
    "NotLicensed",
    "PURPOSES",
    "Query",
    "Rows",
    "StaleCursor",
    "Timestamp",
    "Tool",
    "ToolError",
    "WIT_VERSION",
    "arguments",
    "can_read_names",
    "data",
    "field",
    "has_any_role",
    "licensing",
    "listing",
    "log",
    "people",
    "pricing",
    "records",
    "roles",
    "today",
    "user_id",
]
