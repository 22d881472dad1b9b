"""The component's entry module (scripts/build-plugin.sh builds with it): the plugin module's
`Tool`, run once on a stand-in host at build time so that every call starts warm. Every object
made until then is frozen out of the garbage collector's sight: each call starts from this
snapshot, and a collection during a call then looks only at what the call made, rather than at
the whole interpreter (writing to every object's header, a page fault each page)."""

import gc

from loanhost_plugin.tool import warm_up
from plugin import Tool

warm_up(Tool)
gc.collect()
gc.freeze()

__all__ = ["Tool"]
