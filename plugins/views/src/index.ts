/**
 * The loanhost views library: what every report's MCP Apps view shares. A view is one
 * self-contained HTML file (`scripts/build-view.sh` bundles it) that an MCP Apps client
 * renders with the tool's result: it connects to the host with the extension's own SDK
 * (`@modelcontextprotocol/ext-apps`), follows the host's theme, and draws with Observable Plot.
 *
 * ```ts
 * import { startView, barsByKey } from "@loanhost/views";
 * startView<MyResult>({ title: "My report", render: (r, ctx) => [barsByKey(ctx, r.rows, …)] });
 * ```
 */
import "./jitless.ts";

export { startView, type ViewSpec, type RenderContext } from "./view.ts";
export {
  bars,
  heatmap,
  inOrder,
  periodRange,
  timeBars,
  trendLine,
  table,
  periodStart,
  formatNumber,
  type Datum,
} from "./charts.ts";
