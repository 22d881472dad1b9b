/**
 * The charts the report views draw, on Observable Plot: bars by key, bars on a time axis,
 * a trend line, a period × category heatmap, and a plain table. Every chart labels its
 * values in text (readable without hovering, and by screen readers) and takes its colours
 * from the document's theme.
 */
import * as Plot from "@observablehq/plot";

import type { RenderContext } from "./view.ts";

/** One drawable value. */
export interface Datum {
  key: string;
  value: number;
}

const number = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

/** A number as the views print it (`1,234,567.5`); `–` for none. */
export function formatNumber(v: number | null | undefined): string {
  return v === null || v === undefined || Number.isNaN(v) ? "–" : number.format(v);
}

/** The colour a CSS custom property resolves to on the document (`light-dark()` and the
 * host's variables included), as `rgb(…)`, or `fallback`. Plot takes a string it cannot read
 * as a colour for a field name, so only resolved colours are handed to it. */
function cssVar(name: string, fallback: string): string {
  const probe = document.createElement("span");
  probe.style.color = `var(${name}, ${fallback})`;
  probe.style.display = "none";
  document.body.append(probe);
  const color = getComputedStyle(probe).color;
  probe.remove();
  return color || fallback;
}

function colors(ctx: RenderContext) {
  return {
    accent: cssVar("--loanhost-accent", ctx.dark ? "#60a5fa" : "#2563eb"),
    muted: cssVar("--loanhost-muted", ctx.dark ? "#64748b" : "#94a3b8"),
  };
}

function figure(title: string, chart: Element, className: string): HTMLElement {
  // The plot itself (a colour legend, when there is one, comes before it).
  const svgs = chart.tagName.toLowerCase() === "svg" ? [chart] : [...chart.querySelectorAll("svg")];
  svgs[svgs.length - 1]?.classList.add("chart-plot");
  const f = document.createElement("figure");
  f.className = `chart ${className}`;
  const caption = document.createElement("figcaption");
  caption.textContent = title;
  f.append(caption, chart);
  return f;
}

/**
 * The left margin that holds the longest of `labels` (about 7 px a character, 60 px at least),
 * but never more than `share` of the chart's `width`: longer labels are truncated to it.
 */
function labelMargin(labels: string[], width: number, share: number): number {
  const longest = Math.max(...labels.map((l) => l.length), 4);
  return Math.min(Math.max(60, longest * 7), Math.floor(width * share));
}

/** Horizontal bars, one per key in the given order, each labelled with its value. */
export function bars(
  ctx: RenderContext,
  title: string,
  data: Array<Datum & { muted?: boolean }>,
  unit: string,
): HTMLElement {
  const c = colors(ctx);
  const marginLeft = labelMargin(data.map((d) => d.key), ctx.width, 0.45);
  const chart = Plot.plot({
    width: ctx.width,
    height: Math.max(80, data.length * 26 + 40),
    marginLeft,
    marginRight: 70,
    style: { background: "transparent", color: "currentColor" },
    x: { label: unit, grid: true, nice: true, tickFormat: "~s" },
    y: { label: null, domain: data.map((d) => d.key), tickFormat: (k: string) => truncate(k, marginLeft / 7) },
    marks: [
      Plot.barX(data, {
        x: "value",
        y: "key",
        fill: (d: { muted?: boolean }) => (d.muted ? c.muted : c.accent),
        title: (d: Datum) => `${d.key}: ${formatNumber(d.value)}`,
      }),
      Plot.text(data, {
        x: "value",
        y: "key",
        text: (d: Datum) => formatNumber(d.value),
        textAnchor: "start",
        dx: 4,
        fill: "currentColor",
        className: "value-label",
      }),
      Plot.ruleX([0]),
    ],
  });
  return figure(title, chart, "bars");
}

/** The first instant of a period key: `YYYY`, `YYYY-MM`, `YYYY-Qn`, ISO week `YYYY-Wnn`. */
export function periodStart(key: string): Date | undefined {
  let m = /^(\d{4})$/.exec(key);
  if (m) return new Date(Date.UTC(+m[1], 0, 1));
  m = /^(\d{4})-(\d{2})$/.exec(key);
  if (m) return new Date(Date.UTC(+m[1], +m[2] - 1, 1));
  m = /^(\d{4})-Q([1-4])$/.exec(key);
  if (m) return new Date(Date.UTC(+m[1], (+m[2] - 1) * 3, 1));
  m = /^(\d{4})-W(\d{2})$/.exec(key);
  if (m) {
    // ISO week 1 holds January 4th; weeks start on Monday.
    const jan4 = Date.UTC(+m[1], 0, 4);
    const monday = jan4 - (((new Date(jan4).getUTCDay() + 6) % 7) * 86400000);
    return new Date(monday + (+m[2] - 1) * 7 * 86400000);
  }
  return undefined;
}

/** The end of the period that starts at `start`, for a key of the same form. */
function periodEnd(key: string, start: Date): Date {
  const d = new Date(start);
  if (/^\d{4}$/.test(key)) d.setUTCFullYear(d.getUTCFullYear() + 1);
  else if (/-Q/.test(key)) d.setUTCMonth(d.getUTCMonth() + 3);
  else if (/-W/.test(key)) d.setUTCDate(d.getUTCDate() + 7);
  else d.setUTCMonth(d.getUTCMonth() + 1);
  return d;
}

/** Vertical bars on a time axis, one per period key, each labelled with its value. */
/** The data whose keys are periods, with each period's start and end. */
function periods(data: Datum[]) {
  return data.flatMap((d) => {
    const start = periodStart(d.key);
    return start ? [{ ...d, start, end: periodEnd(d.key, start) }] : [];
  });
}

/** A plot over a time axis: `height` high, `unit` on the value axis. */
function timePlot(ctx: RenderContext, height: number, unit: string, marks: Plot.Markish[]) {
  return Plot.plot({
    width: ctx.width,
    height,
    marginLeft: 56,
    marginTop: 24,
    style: { background: "transparent", color: "currentColor" },
    x: { type: "utc", label: null },
    y: { label: unit, grid: true, nice: true, zero: true, tickFormat: "~s" },
    marks,
  });
}

export function timeBars(ctx: RenderContext, title: string, data: Datum[], unit: string): HTMLElement {
  const c = colors(ctx);
  const rows = periods(data);
  const few = rows.length <= Math.floor(ctx.width / 48);
  const chart = timePlot(ctx, 260, unit, [
      Plot.rectY(rows, {
        x1: "start",
        x2: "end",
        y: "value",
        inset: 1,
        fill: c.accent,
        title: (d: Datum) => `${d.key}: ${formatNumber(d.value)}`,
      }),
      // Every bar's value when they fit side by side; at narrow widths, the table below has them.
      ...(few
        ? [
            Plot.text(rows, {
              x: (d: { start: Date; end: Date }) => new Date((+d.start + +d.end) / 2),
              y: "value",
              text: (d: Datum) => formatNumber(d.value),
              dy: -8,
              fill: "currentColor",
              className: "value-label",
            }),
          ]
        : []),
      Plot.ruleY([0]),
  ]);
  return figure(title, chart, "time-bars");
}

/** A line with dots over period keys (oldest first), each dot labelled with its value. */
export function trendLine(ctx: RenderContext, title: string, data: Datum[], unit: string): HTMLElement {
  const c = colors(ctx);
  const rows = periods(data);
  const few = rows.length <= Math.floor(ctx.width / 56);
  const chart = timePlot(ctx, 220, unit, [
      Plot.lineY(rows, { x: "start", y: "value", stroke: c.accent, strokeWidth: 2 }),
      Plot.dot(rows, {
        x: "start",
        y: "value",
        fill: c.accent,
        r: 3,
        title: (d: Datum) => `${d.key}: ${formatNumber(d.value)}`,
      }),
      ...(few
        ? [
            Plot.text(rows, {
              x: "start",
              y: "value",
              text: (d: Datum) => formatNumber(d.value),
              dy: -10,
              fill: "currentColor",
              className: "value-label",
            }),
          ]
        : []),
  ]);
  return figure(title, chart, "trend");
}

/** The key of the period starting at `d`, in the form of `like` (`YYYY`, `YYYY-MM`,
 * `YYYY-Qn` or ISO week `YYYY-Wnn`). */
function periodKey(d: Date, like: string): string {
  const y = d.getUTCFullYear();
  if (/^\d{4}$/.test(like)) return String(y);
  if (/-Q/.test(like)) return `${y}-Q${Math.floor(d.getUTCMonth() / 3) + 1}`;
  if (/-W/.test(like)) {
    // The ISO week-year is the year of the week's Thursday.
    const thursday = new Date(d.getTime() + 3 * 86400000);
    const year = thursday.getUTCFullYear();
    const week = Math.round((thursday.getTime() - (periodStart(`${year}-W01`)!.getTime() + 3 * 86400000)) / (7 * 86400000)) + 1;
    return `${year}-W${String(week).padStart(2, "0")}`;
  }
  return `${y}-${String(d.getUTCMonth() + 1).padStart(2, "0")}`;
}

/** Every period from the first to the last of `keys` (gaps filled), oldest first; keys that
 * are not periods are kept as they are, after them. */
export function periodRange(keys: string[]): string[] {
  const dated = keys.filter((k) => periodStart(k)).sort();
  const other = [...new Set(keys.filter((k) => !periodStart(k)))];
  if (dated.length === 0) return other;
  const out: string[] = [];
  const last = periodStart(dated[dated.length - 1])!.getTime();
  // Bounded: at most 1,000 periods (20 years of weeks).
  for (let d = periodStart(dated[0])!; d.getTime() <= last && out.length < 1000; d = periodEnd(out[out.length - 1], d)) {
    out.push(periodKey(d, dated[0]));
  }
  return [...out, ...other];
}

/** A period × category grid coloured by value, each cell labelled with its value. */
export function heatmap(
  ctx: RenderContext,
  title: string,
  cells: Array<{ period: string; category: string; value: number }>,
  categories: string[],
  unit: string,
): HTMLElement {
  const periods = periodRange([...new Set(cells.map((d) => d.period))]);
  const max = Math.max(1, ...cells.map((d) => d.value));
  // Text that reads on its cell: light on the scheme's dark end (high values in light mode's
  // blues, low ones in dark mode's viridis), dark on its light end.
  const lightText = (d: { value: number }) => (d.value / max > 0.5) !== ctx.dark;
  const marginLeft = labelMargin(categories, ctx.width, 0.4);
  const cellWidth = (ctx.width - marginLeft - 10) / Math.max(1, periods.length);
  // Values are written in the cells when the widest fits (10 px digits are about 6.5 px wide).
  const widest = Math.max(...cells.map((d) => formatNumber(d.value).length), 1);
  const labelled = cellWidth >= widest * 6.5 + 6;
  const chart = Plot.plot({
    width: ctx.width,
    height: Math.max(100, categories.length * 28 + 60),
    marginLeft,
    marginBottom: 44,
    style: { background: "transparent", color: "currentColor" },
    x: {
      domain: periods,
      label: null,
      tickRotate: cellWidth < 56 ? -45 : 0,
      // At narrow widths, every other period is named.
      ticks: periods.filter((_, i) => i % Math.max(1, Math.ceil(34 / Math.max(1, cellWidth))) === 0),
    },
    y: { domain: categories, label: null, tickFormat: (k: string) => truncate(k, marginLeft / 7) },
    color: { type: "linear", scheme: ctx.dark ? "viridis" : "blues", label: unit, legend: true, zero: true },
    marks: [
      Plot.cell(cells, {
        x: "period",
        y: "category",
        fill: "value",
        inset: 0.5,
        title: (d: { period: string; category: string; value: number }) =>
          `${d.category}, ${d.period}: ${formatNumber(d.value)}`,
      }),
      ...(labelled
        ? [
            ...[true, false].map((light) =>
              Plot.text(
                cells.filter((d) => lightText(d) === light),
                {
                  x: "period",
                  y: "category",
                  text: (d: { value: number }) => formatNumber(d.value),
                  fill: light ? "#ffffff" : "#0f172a",
                  className: "value-label",
                },
              ),
            ),
          ]
        : []),
    ],
  });
  return figure(title, chart, "heatmap");
}

/** The distinct categories of `rows` in their order (the first order seen for each; ties by
 * name): stages and milestones as their reports number them. */
export function inOrder<T>(rows: T[], name: (r: T) => string, order: (r: T) => number): string[] {
  const seen = new Map<string, number>();
  for (const r of rows) if (!seen.has(name(r))) seen.set(name(r), order(r));
  return [...seen.keys()].sort((a, b) => seen.get(a)! - seen.get(b)! || a.localeCompare(b));
}

/** A plain table (inside a disclosure): every figure of the chart above, exactly. */
export function table(caption: string, header: string[], rows: Array<Array<string | number>>): HTMLElement {
  const details = document.createElement("details");
  details.className = "table";
  const summary = document.createElement("summary");
  summary.textContent = caption;
  const t = document.createElement("table");
  const head = t.createTHead().insertRow();
  for (const h of header) {
    const th = document.createElement("th");
    th.textContent = h;
    head.append(th);
  }
  const body = t.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    for (const v of r) {
      const td = tr.insertCell();
      td.textContent = typeof v === "number" ? formatNumber(v) : v;
      if (typeof v === "number") td.className = "num";
    }
  }
  details.append(summary, t);
  return details;
}

function truncate(s: string, max: number): string {
  const n = Math.max(4, Math.floor(max));
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}
