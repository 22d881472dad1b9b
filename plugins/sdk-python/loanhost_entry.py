"""The component's entry module (scripts/build-plugin.sh builds with it): the plugin module's
`Tool`, run once on a stand-in host at build time so that every call starts warm."""

from loanhost_plugin.tool import warm_up
from plugin import Tool

warm_up(Tool)

__all__ = ["Tool"]
