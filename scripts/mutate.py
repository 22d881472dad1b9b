#!/usr/bin/env python3
"""Mutation check: applies each deliberate one-line bug of tests/mutations.json to the code,
runs the tests named for it, and reports whether they caught it (failed), then restores the
file with `git checkout`. Refuses to run on a tree with uncommitted changes, so no work is lost.

    scripts/mutate.py [ID-PREFIX ...]      # needs TEST_POSTGRES_URL (make mutations sets it)
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    os.chdir(ROOT)
    if subprocess.run(["git", "diff", "--quiet"]).returncode != 0:
        print("mutate.py: the working tree has uncommitted changes; commit or stash them first", file=sys.stderr)
        return 2
    mutations = json.load(open("tests/mutations.json"))
    wanted = sys.argv[1:]
    missed = 0
    for m in mutations:
        if wanted and not any(m["id"].startswith(w) for w in wanted):
            continue
        path = m["file"]
        text = open(path).read()
        if text.count(m["old"]) != 1:
            print(f"{m['id']}: STALE (the line to mutate is not in {path} exactly once)", flush=True)
            missed += 1
            continue
        open(path, "w").write(text.replace(m["old"], m["new"], 1))
        started = time.time()
        try:
            cmd = m.get("cmd") or ["cargo", "test", "-p", "loanhost-tests", "--test", "api", "--"] + m["tests"]
            out = ""
            if not m.get("cmd") and path.startswith("host/"):
                # Some API tests run the built `loanhost` binary (restarts, the CLI, fleets):
                # it is rebuilt with the mutation, as `make test` builds it before them.
                build = subprocess.run(["cargo", "build", "-p", "loanhost", "--locked"], capture_output=True, text=True, timeout=900)
                out = build.stdout + build.stderr
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            out += run.stdout + run.stderr
        finally:
            subprocess.run(["git", "checkout", "--", path], check=True)
        failed = [l.split()[1] for l in out.splitlines() if l.startswith("test ") and l.endswith("FAILED")]
        if "could not compile" in out:
            verdict = "DOES NOT COMPILE (fix the mutation)"
            missed += 1
        elif run.returncode != 0:
            verdict = "caught by " + ", ".join(failed)
        else:
            verdict = "MISSED"
            missed += 1
        print(f"{m['id']}: {verdict} ({time.time() - started:.0f} s)", flush=True)
    # The binary is left built from the restored code, not from the last mutation.
    subprocess.run(["cargo", "build", "-p", "loanhost", "--locked"], capture_output=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
