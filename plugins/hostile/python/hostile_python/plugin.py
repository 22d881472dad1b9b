"""A hostile plugin written in Python, for the sandbox and attack tests: it spins, grows its
memory, writes a huge result, raises, and tries the files, environment, sockets, clock and
randomness a Python program would reach for, one action each; and remembers its callers, to
show that none of them is still there for the next call."""

from __future__ import annotations

import dataclasses
import os
import random
import socket
import time

import loanhost_plugin as lp


@lp.arguments
@dataclasses.dataclass
class Arguments:
    action: str
    bytes: int = 0


#: The callers this instance has served, oldest first (`remember`).
_SERVED: list[str] = []


class Hostile(lp.Tool):
    name = "hostile_python"
    title = "Hostile"
    description = "Misbehaves on purpose (tests only)."
    Arguments = Arguments

    def run(self, args: Arguments) -> dict:
        if args.action == "echo":
            return {"today": lp.today().isoformat(), "userId": lp.user_id()}
        if args.action == "remember":
            before = list(_SERVED)
            _SERVED.append(lp.user_id())
            return {"before": before}
        if args.action == "loop":
            n = 0
            while True:
                n += 1
        if args.action == "grow":
            hoard = []
            while True:
                hoard.append(bytearray(1024 * 1024))
        if args.action == "big":
            return {"blob": "x" * args.bytes}
        if args.action == "panic":
            raise RuntimeError("hostile plugin raised")
        # Each probe alone: with WASI stubbed, some of them trap, which fails only this call.
        if args.action == "file":
            with open("/etc/passwd") as f:
                return {"read": f.read(10)}
        if args.action == "listdir":
            return {"entries": os.listdir("/")}
        if args.action == "env":
            return {"env": dict(os.environ)}
        if args.action == "socket":
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.connect(("127.0.0.1", 80))
            return {"connected": True}
        if args.action == "clock":
            return {"time": [repr(time.time()), repr(time.time())]}
        if args.action == "random":
            return {"random": [repr(random.random()) for _ in range(3)]}
        raise lp.InvalidParams(f"unknown action {args.action!r}")


Tool = Hostile
