/**
 * The view's life: connect to the host (the MCP Apps `ui/initialize` handshake), take the
 * tool's arguments and result from the host's notifications, follow the host's theme and
 * size, and draw the result, an error result, an empty result, or a cancellation.
 */
import {
  App,
  applyDocumentTheme,
  applyHostStyleVariables,
  getDocumentTheme,
  type McpUiHostContext,
} from "@modelcontextprotocol/ext-apps";

/** What a report's renderer gets besides the result. */
export interface RenderContext {
  /** The tool's arguments, when the host sent them. */
  args: Record<string, unknown>;
  /** Width available for charts, in CSS pixels. */
  width: number;
  /** Whether the host's theme is dark. */
  dark: boolean;
}

/** A report's view: its title, how to tell an empty result, and how to draw a result. */
export interface ViewSpec<R> {
  /** Shown above the charts. */
  title: string | ((result: R, ctx: RenderContext) => string);
  /** Whether the result has nothing to draw (the view then says so instead). */
  isEmpty: (result: R) => boolean;
  /** Elements to show, top to bottom. */
  render: (result: R, ctx: RenderContext) => Node[];
  /** A flag to show above the charts (`truncated`), when it applies. */
  warning?: (result: R) => string | undefined;
  /** The result's `note`, when it has one. */
  note?: (result: R) => string | undefined;
  /** What the view shows (`report`, `application`), named by its waiting and cancelled
   * texts; defaults to `report`. */
  noun?: string;
  /** The lead of an error result; defaults to `The report could not be made.` */
  failedText?: string;
  /** Shown instead of the charts when [`isEmpty`] holds; defaults to the reports' text. */
  emptyText?: string;
}

const EMPTY_REPORT =
  "No loans match. An empty report usually reflects your access scope or the filters, not an error.";

interface ToolResult {
  isError?: boolean;
  structuredContent?: unknown;
  content?: Array<{ type: string; text?: string }>;
}

function el(tag: string, className?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The result's JSON: `structuredContent`, else the first text block parsed. */
function resultOf(r: ToolResult): unknown {
  if (r.structuredContent !== undefined) return r.structuredContent;
  const text = r.content?.find((c) => c.type === "text")?.text;
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Starts the view: connects to the host and draws what it sends. */
export function startView<R>(spec: ViewSpec<R>): App {
  const root = document.getElementById("app") ?? document.body.appendChild(el("main"));
  root.setAttribute("aria-live", "polite");
  let args: Record<string, unknown> = {};
  let last: ToolResult | undefined;
  const noun = spec.noun ?? "report";
  let status: { kind: "waiting" | "cancelled"; text: string } = {
    kind: "waiting",
    text: `Waiting for the ${noun}…`,
  };

  const applyContext = (ctx: McpUiHostContext | undefined) => {
    if (!ctx) return;
    if (ctx.theme) applyDocumentTheme(ctx.theme);
    if (ctx.styles?.variables) applyHostStyleVariables(ctx.styles.variables);
  };

  const draw = () => {
    const style = getComputedStyle(root);
    const inner = root.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const width = Math.max(240, Math.floor(inner || window.innerWidth));
    const dark = getDocumentTheme() === "dark";
    const ctx: RenderContext = { args, width, dark };
    const children: Node[] = [];
    if (!last) {
      children.push(el("p", `status ${status.kind}`, status.text));
    } else if (last.isError) {
      const text = last.content?.find((c) => c.type === "text")?.text ?? "The tool failed.";
      const box = el("div", "error");
      box.setAttribute("role", "alert");
      box.append(el("strong", undefined, `${spec.failedText ?? "The report could not be made."} `), el("span", undefined, text));
      children.push(box);
    } else {
      const result = resultOf(last) as R | undefined;
      if (result === undefined) {
        children.push(el("div", "error", "The result could not be read."));
      } else {
        const title = typeof spec.title === "function" ? spec.title(result, ctx) : spec.title;
        children.push(el("h1", undefined, title));
        const warning = spec.warning?.(result);
        if (warning) children.push(el("p", "flag truncated", warning));
        const note = spec.note?.(result);
        if (note) children.push(el("p", "note", note));
        if (spec.isEmpty(result)) {
          children.push(el("p", "status empty", spec.emptyText ?? EMPTY_REPORT));
        } else {
          children.push(...spec.render(result, ctx));
        }
      }
    }
    root.replaceChildren(...children);
  };

  const app = new App({ name: "loanhost-view", version: "1.0.0" }, {}, { autoResize: true });
  app.addEventListener("toolinput", (p) => {
    args = (p.arguments ?? {}) as Record<string, unknown>;
  });
  app.addEventListener("toolresult", (r) => {
    last = r as ToolResult;
    draw();
  });
  app.addEventListener("toolcancelled", (p) => {
    last = undefined;
    status = { kind: "cancelled", text: `The ${noun} was cancelled${p.reason ? `: ${p.reason}` : "."}` };
    draw();
  });
  app.addEventListener("hostcontextchanged", (ctx) => {
    applyContext(ctx);
    draw();
  });
  app.onteardown = async () => ({});

  // Redraw at the new width (a narrow panel gets narrower charts, not a scroll bar).
  let lastWidth = 0;
  new ResizeObserver(() => {
    const w = Math.floor(root.clientWidth);
    if (w !== lastWidth) {
      lastWidth = w;
      if (last) draw();
    }
  }).observe(root);

  draw();
  app.connect().then(
    () => {
      applyContext(app.getHostContext());
      draw();
    },
    (e: unknown) => {
      status = { kind: "waiting", text: `Not connected to a host: ${e instanceof Error ? e.message : String(e)}` };
      draw();
    },
  );
  return app;
}
