/**
 * The tool errors of `loan:reporting/types`. Throw one from `run` and the client sees a tool
 * result with `isError: true` whose text starts with its code (`invalid_params: …`). The `data`
 * capability's refusals are thrown as the tool error a client should see (a dataset or field
 * not granted as `forbidden`, a malformed query as `invalid_params`, an unavailable store as
 * `internal`), so a plugin that does not catch them still answers precisely.
 */
export type ToolErrorCode = "invalid_params" | "bad_request" | "forbidden" | "internal";

/** The WIT case of each code. */
const CASES: Record<ToolErrorCode, string> = {
  invalid_params: "invalid-params",
  bad_request: "bad-request",
  forbidden: "forbidden",
  internal: "internal",
};

/** A tool-level failure the model should see. */
export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ToolError";
  }

  /** The WIT `tool-error` value (what the component returns as its `err`). */
  get payload(): { tag: string; val: string } {
    return { tag: CASES[this.code], val: this.message };
  }

  toString(): string {
    return `${this.code}: ${this.message}`;
  }
}

/** The arguments are wrong: a wrong type, an unknown enum value, an unknown property. */
export const invalidParams = (message: string) => new ToolError("invalid_params", message);
/** The arguments are well-formed but contradictory. */
export const badRequest = (message: string) => new ToolError("bad_request", message);
/** The caller lacks a role, or the plugin a dataset or field. */
export const forbidden = (message: string) => new ToolError("forbidden", message);
/** Anything else; the text must not leak internals. */
export const internal = (message: string) => new ToolError("internal", message);
