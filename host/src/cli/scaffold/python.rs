//! The Python plugin the scaffold writes: `plugin.py` counting the caller's loans by status,
//! `tests/test_plugin.py` (pytest, on the SDK's fake host), fixtures for `plugin run`, and a
//! manifest with the core instances a CPython runtime needs.

use std::path::Path;

use super::{manifest, write_file, write_fixtures};

/// Writes the plugin folder `dir` for tool `name`.
pub(super) fn write(dir: &Path, name: &str) -> Result<(), String> {
    let title = name.replace('_', " ");
    write_file(
        dir.join("plugin.py"),
        PLUGIN.replace("{name}", name).replace("{title}", &title),
    )?;
    write_file(
        dir.join("tests/test_plugin.py"),
        TEST.replace("{name}", name),
    )?;
    write_file(
        dir.join(format!("{name}.toml")),
        // CPython starts with 13 MiB of memory, as 38 core modules.
        manifest(
            name,
            super::WIT_VERSION,
            64,
            "# componentize-py links CPython and its libraries as separate core modules (38).\ncore_instances = 48\n",
        ),
    )?;
    write_fixtures(dir)
}

const PLUGIN: &str = r#""""`{name}`: TODO say what it answers. Counts the caller's loans by current status (only loans
the caller's role may see: the host applies the scope).

Built with `scripts/build-plugin.sh <this folder>`; tested with `scripts/test-plugin.sh`. Inside
the sandbox there is no wall clock (use `lp.today()`), no environment, files or network, and
`random` is deterministic. Import what you need at the top of the module: the component is a
snapshot of the module as imported at build time, and there are no files to import from later.
"""

from __future__ import annotations

import dataclasses

import loanhost_plugin as lp
from loanhost_plugin import data


@lp.arguments
@dataclasses.dataclass
class Arguments:
    statuses: list[str] = lp.field(
        default_factory=list,
        description="Only these current statuses (all when absent or empty).",
        schema={"type": "array", "items": {"type": "string", "enum": list(lp.LOAN_STATUSES)}},
    )


@dataclasses.dataclass
class StatusCount:
    """Loans at one current status."""

    status: str
    count: int


@dataclasses.dataclass
class StatusCounts:
    """The caller's loans by current status."""

    buckets: list[StatusCount] = lp.field(
        description="One entry per current status that has loans."
    )


class Report(lp.Tool):
    name = "{name}"
    title = "{title}"
    description = (
        "Counts the caller's loans by current status. TODO: say when a model should use it."
    )
    Arguments = Arguments
    Result = StatusCounts

    def run(self, args: Arguments) -> StatusCounts:
        rows = (
            data.Query("loans")
            .filter({"statuses": args.statuses} if args.statuses else None)
            .group_by("status")
            .aggregate(data.count())
            .run()
        )
        return StatusCounts(
            buckets=[StatusCount(status=status or "Unknown", count=n) for status, n in rows]
        )


# The export the host calls: the module's `Tool`.
Tool = Report
"#;

const TEST: &str = r#""""Unit tests of `{name}` on the SDK's fake host (no server, no WebAssembly):
`scripts/test-plugin.sh <plugin folder>`. `loanhost plugin run … --data tests/fixtures` calls the
built component on real fixtures, with the server's scope."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import plugin  # noqa: E402
from loanhost_plugin import InvalidParams  # noqa: E402
from loanhost_plugin.data import Rows  # noqa: E402
from loanhost_plugin.testing import FakeHost  # noqa: E402


def test_counts_loans_by_status_in_the_database():
    # Arrange
    host = FakeHost(answer=lambda q: Rows(["key0", "agg0"], [["Loan Funded", 1], ["Loan Open", 2]]))
    # Act
    result = host.call(plugin.Report, {"statuses": ["Loan Open", "Loan Funded"]})
    # Assert
    assert result == {"buckets": [{"status": "Loan Funded", "count": 1}, {"status": "Loan Open", "count": 2}]}
    assert host.queries[0].filter_json == '{"statuses":["Loan Open","Loan Funded"]}'


def test_unknown_arguments_are_refused():
    with pytest.raises(InvalidParams, match="unknown field `colour`"):
        FakeHost().call(plugin.Report, {"colour": "red"})
"#;
