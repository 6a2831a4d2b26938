import uPlot from 'uplot';
import { h } from './dom.js';

/**
 * Charts with uPlot (a ~45 KB canvas chart library): time series for figures per day and bars for
 * figures per provider, model or event. Each chart is drawn at its container's width (phone to
 * desktop) and comes with the same numbers as a table for screen readers and for tests
 * (`data-chart`, `data-series` and the table under it).
 */
const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];

/**
 * Each series keeps one colour in every chart of the console: a colour is given to a label the
 * first time any chart shows it (the next one no label has yet, while there are), never by its
 * position in one chart, where `openai` would be blue beside `anthropic` and red after it.
 */
const colours = new Map<string, string>();
export function seriesColour(label: string): string {
  let c = colours.get(label);
  if (!c) {
    const used = new Set(colours.values());
    c = PALETTE.find((p) => !used.has(p)) ?? PALETTE[colours.size % PALETTE.length]!;
    colours.set(label, c);
  }
  return c;
}

export interface Series {
  label: string;
  values: Array<number | null>;
}

/** The plot's own content width (it is in the document by now), within sane bounds. */
function chartWidth(plot: HTMLElement): number {
  return Math.max(240, Math.min(plot.clientWidth || 600, 1100));
}

/** A y range from 0 that shows small values (money in fractions of a cent) at full height. */
const yRange = (_u: uPlot, min: number, max: number): uPlot.Range.MinMax => {
  const top = max > 0 ? max * 1.1 : 1;
  return [Math.min(0, min), top];
};

function dataTable(id: string, categories: string[], series: Series[]): HTMLTableElement {
  return h(
    'table',
    { class: 'sr-only', 'data-chart-table': id },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, ''),
        series.map((s) => h('th', {}, s.label)),
      ),
    ),
    h(
      'tbody',
      {},
      categories.map((c, i) =>
        h(
          'tr',
          {},
          h('th', {}, c),
          series.map((s) => h('td', {}, String(s.values[i] ?? ''))),
        ),
      ),
    ),
  );
}

function frame(id: string, title: string, series: Series[]): { wrap: HTMLElement; plot: HTMLElement } {
  const plot = h('div', { class: 'plot' });
  const totals = Object.fromEntries(series.map((s) => [s.label, s.values.reduce<number>((a, v) => a + (v ?? 0), 0)]));
  const wrap = h('figure', { class: 'chart', 'data-chart': id, 'data-series': JSON.stringify(totals) }, h('figcaption', {}, title), plot);
  return { wrap, plot };
}

/** Keep a chart as wide as its box (the grid reflows as cards are added, phones rotate). */
function fitWidth(chart: uPlot, plot: HTMLElement, height: number): void {
  let last = chart.width;
  new ResizeObserver(() => {
    const w = chartWidth(plot);
    if (Math.abs(w - last) > 2) chart.setSize({ width: (last = w), height });
  }).observe(plot);
}

const empty = (series: Series[]) => series.every((s) => s.values.every((v) => !v));

/** Lines over UTC days (`days` as YYYY-MM-DD). */
export function timeChart(
  host: HTMLElement,
  id: string,
  title: string,
  days: string[],
  series: Series[],
  opts: { money?: boolean } = {},
): HTMLElement {
  const { wrap, plot } = frame(id, title, series);
  host.appendChild(wrap);
  if (days.length === 0) {
    plot.appendChild(h('p', { class: 'muted' }, 'No data in this period yet.'));
    return wrap;
  }
  const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
  const value = (_u: uPlot, v: number | null) =>
    v === null ? '–' : opts.money ? `$${v.toFixed(4)}` : Math.round(v).toLocaleString('en-US');
  const chart = new uPlot(
    {
      width: chartWidth(plot),
      height: 220,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true }, y: { range: yRange } },
      series: [
        { label: 'day' },
        ...series.map((s) => ({ label: s.label, stroke: seriesColour(s.label), width: 2, points: { show: true, size: 6 }, value })),
      ],
      axes: [
        {},
        {
          values: (_u, ticks) => ticks.map((t) => (opts.money ? `$${+t.toPrecision(3)}` : t.toLocaleString('en-US'))),
          size: opts.money ? 80 : 60,
        },
      ],
    },
    [xs, ...series.map((s) => s.values)] as uPlot.AlignedData,
    plot,
  );
  fitWidth(chart, plot, 220);
  if (empty(series)) wrap.appendChild(h('p', { class: 'muted' }, 'All zero in this period.'));
  wrap.appendChild(dataTable(id, days, series));
  return wrap;
}

/** Bars over named categories (providers, models, events); several series are drawn side by side. */
export function barChart(
  host: HTMLElement,
  id: string,
  title: string,
  categories: string[],
  series: Series[],
  opts: { money?: boolean; unit?: string } = {},
): HTMLElement {
  const { wrap, plot } = frame(id, title, series);
  host.appendChild(wrap);
  if (categories.length === 0) {
    plot.appendChild(h('p', { class: 'muted' }, 'Nothing to show yet.'));
    return wrap;
  }
  const n = series.length;
  // Each category is one slot of width 1 on the x scale; series i sits at offset i/(n+1) in it.
  const xs = categories.map((_, i) => i);
  const label = (t: number) => (opts.money ? `$${+t.toPrecision(3)}` : `${t.toLocaleString('en-US')}${opts.unit ?? ''}`);
  const slot = 0.8 / n;
  const barPath =
    (i: number): uPlot.Series.PathBuilder =>
    (u, seriesIdx) => {
      const path = new Path2D();
      const values = u.data[seriesIdx]!;
      const y0 = u.valToPos(0, 'y', true);
      for (let k = 0; k < values.length; k++) {
        const v = values[k];
        if (v === null || v === undefined) continue;
        const left = u.valToPos(k - 0.4 + i * slot, 'x', true);
        const right = u.valToPos(k - 0.4 + (i + 1) * slot, 'x', true);
        const y = u.valToPos(v, 'y', true);
        path.rect(left, Math.min(y, y0), Math.max(1, right - left - 1), Math.abs(y0 - y));
      }
      return { stroke: path, fill: path };
    };
  const chart = new uPlot(
    {
      width: chartWidth(plot),
      height: 220,
      scales: { x: { time: false, range: [-0.5, categories.length - 0.5] }, y: { range: yRange } },
      series: [
        { label: 'name', value: (_u, v) => (v === null ? '' : (categories[v] ?? '')) },
        ...series.map((s, i) => ({
          label: s.label,
          fill: seriesColour(s.label),
          stroke: seriesColour(s.label),
          paths: barPath(i),
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null ? '–' : label(v)),
        })),
      ],
      axes: [
        { values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? (categories[t] ?? '') : '')), splits: () => xs, gap: 4, size: 40 },
        { values: (_u, ticks) => ticks.map(label), size: opts.money ? 80 : 64 },
      ],
      cursor: { points: { show: false } },
    },
    [xs, ...series.map((s) => s.values)] as uPlot.AlignedData,
    plot,
  );
  fitWidth(chart, plot, 220);
  wrap.appendChild(dataTable(id, categories, series));
  return wrap;
}
