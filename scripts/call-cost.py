#!/usr/bin/env python3
"""What a tool call costs as a user measures it: each plugin folder served alone by a plain
`loanhost serve` (its defaults but the calls per minute, which a run of hundreds of calls by one
caller would spend), on a seeded SQLite database, called over HTTP by this outside client with
one keep-alive connection; the folders taken in turn, round after round, so that each round
measures them all at about the same time of the machine.

    .venv/bin/python scripts/call-cost.py [options] NAME=PLUGIN_DIR[@LOANHOST_BINARY] ...

e.g. `.venv/bin/python scripts/call-cost.py python=plugins/build/examples/python
typescript=plugins/build/examples/typescript` (after `make build`). Prints, per run, the
client's mean, p50 and p99 and the server's own mean (the audit line's `durationMs`), then a
summary line per folder. Servers listen on loopback ports of their own and are stopped at the
end of each run; each folder's database and logs are kept under --work.
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

import httpx2 as httpx

PROTOCOL = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {}}


def options() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("builds", nargs="+", metavar="NAME=PLUGIN_DIR[@LOANHOST_BINARY]")
    p.add_argument("--tool", default="report_loans")
    p.add_argument("--arguments", default='{"groupBy": "Status", "metric": "Sum"}', help="the call's arguments (JSON)")
    p.add_argument("--email", default="agent@demo.loanhost.local", help="the caller (a demo user)")
    p.add_argument("--loans", type=int, default=20000, help="loans seeded (default 20000)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=40)
    p.add_argument("--calls", type=int, default=300, help="timed calls per run")
    p.add_argument("--work", default=os.path.expanduser("~/.cache/loanhost/call-cost"))
    o = p.parse_args()
    o.arguments = json.loads(o.arguments)
    default_binary = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/loanhost/target")), "release", "loanhost")
    o.runs = []
    for b in o.builds:
        name, sep, rest = b.partition("=")
        folder, _, binary = rest.partition("@")
        if not sep or not name or not folder:
            p.error(f"{b!r}: expected NAME=PLUGIN_DIR[@LOANHOST_BINARY]")
        binary = os.path.abspath(binary or default_binary)
        if not os.path.isdir(folder) or not os.access(binary, os.X_OK):
            p.error(f"{b!r}: {folder} is not a folder or {binary} is not an executable (run `make build`)")
        o.runs.append((name, os.path.abspath(folder), binary))
    return o


def environment(work: str, folder: str, port: int) -> dict:
    # The server's defaults, not the shell's settings (a `RUST_LOG` or `LOANHOST_*` left over
    # would change what is measured).
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOANHOST_") and k != "RUST_LOG"}
    env.update(
        LOANHOST_DEV_IDP="true",
        LOANHOST_PLUGIN_DIR=folder,
        LOANHOST_LISTEN=f"127.0.0.1:{port}",
        LOANHOST_BASE_URL=f"http://127.0.0.1:{port}",
        LOANHOST_DATABASE_URL=f"sqlite://{work}/loanhost.db",
        LOANHOST_CALLER_CALLS_PER_MINUTE="1000000",
    )
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(xs: list, q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def one_run(o: argparse.Namespace, name: str, folder: str, binary: str) -> tuple:
    work = os.path.join(o.work, f"{name}-{o.loans}")
    os.makedirs(work, exist_ok=True)
    port = free_port()
    env = environment(work, folder, port)
    if not os.path.exists(os.path.join(work, "loanhost.db")):
        seeded = subprocess.run([binary, "seed", "--loans", str(o.loans), "--import"], cwd=work, env=env, capture_output=True, text=True)
        if seeded.returncode != 0:
            sys.exit(f"call-cost: seeding {work} failed: {seeded.stderr.strip()}")
    with open(os.path.join(work, "stdout.log"), "w") as out, open(os.path.join(work, "stderr.log"), "w") as err:
        server = subprocess.Popen([binary, "serve"], cwd=work, env=env, stdout=out, stderr=err)
        try:
            times = calls(o, binary, work, env, port, server)
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
    own = []
    with open(os.path.join(work, "stdout.log")) as lines:
        for line in lines:
            try:
                audit = json.loads(line)
            except ValueError:
                continue
            if isinstance(audit, dict) and audit.get("tool") == o.tool and "durationMs" in audit:
                own.append(audit["durationMs"])
    own = own[o.warmup:]
    return statistics.mean(times), percentile(times, 0.5), percentile(times, 0.99), statistics.mean(own) if own else float("nan")


def calls(o, binary, work, env, port, server) -> list:
    base = f"http://127.0.0.1:{port}"
    for _ in range(1200):  # the server's listening line is the signal; bounded at a minute
        if server.poll() is not None:
            sys.exit(f"call-cost: the server stopped (see {work}/stderr.log)")
        with open(os.path.join(work, "stderr.log")) as log:
            if "loanhost listening" in log.read():
                break
        time.sleep(0.05)
    else:
        sys.exit(f"call-cost: the server did not say it was listening within a minute (see {work}/stderr.log)")
    token = subprocess.run([binary, "token", "--email", o.email], cwd=work, env=env, check=True, capture_output=True, text=True).stdout.strip()
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": o.tool, "arguments": o.arguments, "_meta": META}}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": META}}, headers={"Mcp-Method": "tools/list"}).json()
        if o.tool not in [t["name"] for t in listed.get("result", {}).get("tools", [])]:
            sys.exit(f"call-cost: {o.tool} is not served from this folder: {json.dumps(listed)[:300]}")
        times = []
        for i in range(o.warmup + o.calls):
            started = time.perf_counter()
            r = client.post("/mcp", json=body, headers={"Mcp-Method": "tools/call", "Mcp-Name": o.tool})
            elapsed = time.perf_counter() - started
            answer = r.json()
            if r.status_code != 200 or "error" in answer or answer["result"].get("isError"):
                sys.exit(f"call-cost: {o.tool} answered {r.status_code}: {json.dumps(answer)[:300]}")
            if i >= o.warmup:
                times.append(elapsed * 1000)
    return times


def main() -> None:
    o = options()
    results = {name: [] for name, _, _ in o.runs}
    for round_ in range(1, o.rounds + 1):
        for name, folder, binary in o.runs:
            m = one_run(o, name, folder, binary)
            results[name].append(m)
            print(f"round {round_} {name}: mean {m[0]:.2f} ms, p50 {m[1]:.2f}, p99 {m[2]:.2f}, the server's own {m[3]:.2f}", flush=True)
    for name, ms in results.items():
        means, p50s, p99s, own = (", ".join(f"{m[k]:.2f}" for m in ms) for k in range(4))
        print(f"{name}: means {means} | p50s {p50s} | p99s {p99s} | the server's own {own} (ms)")


if __name__ == "__main__":
    main()
