/**
 * A hostile plugin written in TypeScript, for the sandbox and attack tests: it spins, grows its
 * memory, writes a huge result, throws, and tries the clock, randomness and globals a program
 * would reach for (fetch, process, require), one action each; and remembers its callers, to
 * show that none of them is still there for the next call.
 */
import { defineTool, invalidParams, s, today, userId } from "@loanhost/plugin";

/** The callers this instance has served, oldest first (`remember`). */
const served: string[] = [];

export default defineTool({
  name: "hostile_typescript",
  title: "Hostile",
  description: "Misbehaves on purpose (tests only).",
  arguments: s.object({ action: s.string(), bytes: s.integer().default(0) }),
  result: s.any(),
  run(args) {
    const g = globalThis as Record<string, unknown>;
    switch (args.action) {
      case "echo":
        return { today: today(), userId: userId() };
      case "remember": {
        const before = [...served];
        served.push(userId());
        return { before };
      }
      case "loop": {
        let n = 0;
        for (;;) n++;
      }
      case "grow": {
        const hoard: Uint8Array[] = [];
        for (;;) hoard.push(new Uint8Array(1024 * 1024).fill(1));
      }
      case "big":
        return { blob: "x".repeat(args.bytes) };
      case "panic":
        throw new Error("hostile plugin threw");
      // Each probe alone: a missing global throws, which fails only this call.
      case "fetch":
        return { fetched: String((g.fetch as (u: string) => unknown)("http://127.0.0.1/")) };
      case "env":
        return { env: (g.process as { env?: unknown } | undefined)?.env ?? null };
      case "require":
        return { fs: String((g.require as (m: string) => unknown)("fs")) };
      case "clock":
        return { time: [String(Date.now()), String(Date.now())] };
      case "random":
        return { random: [String(Math.random()), String(Math.random()), String(Math.random())] };
      default:
        throw invalidParams(`unknown action ${args.action}`);
    }
  },
});
