// A small hand-written SVG generator (no dependencies) for benchmark charts:
//  - bar panels: one row per scenario, one panel per metric (each panel its own linear scale);
//  - ratio rows: a measured ratio against its budget line, green when it passes, red when it misses.
// Output is a standalone, well-formed SVG 1.1 document.

export interface BarRow {
  label: string;
  color: string;
  /** one value per panel; undefined or NaN leaves the cell empty */
  values: (number | undefined)[];
}

export interface Panel {
  title: string;
  format: (v: number) => string;
}

export interface RatioRow {
  label: string;
  value: number;
  /** the budget: at least (`>=`) or at most (`<=`) this */
  want: '>=' | '<=';
  threshold: number;
  unit: string;
  pass: boolean | undefined;
}

export interface BarSection {
  title?: string;
  panels: Panel[];
  rows: BarRow[];
}

export interface ChartSpec {
  title: string;
  subtitle: string;
  sections: BarSection[];
  legend: { label: string; color: string }[];
  ratios: RatioRow[];
  ratioTitle: string;
  footer: string;
}

const FONT = 'font-family="Helvetica, Arial, sans-serif"';
const LABEL_W = 420;
const PANEL_W = 210;
const PANEL_GAP = 24;
const ROW_H = 20;
const BAR_H = 13;

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

const n = (v: number) => (Number.isFinite(v) ? Number(v.toFixed(1)) : 0);

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${n(x)}" y="${n(y)}" ${FONT} ${attrs}>${escapeXml(s)}</text>`;
}

function rect(x: number, y: number, w: number, h: number, fill: string, attrs = ''): string {
  return `<rect x="${n(x)}" y="${n(y)}" width="${n(Math.max(0, w))}" height="${n(h)}" fill="${fill}" ${attrs}/>`;
}

export function renderChart(spec: ChartSpec): string {
  const maxPanels = Math.max(1, ...spec.sections.map((sec) => sec.panels.length));
  const width = LABEL_W + maxPanels * (PANEL_W + PANEL_GAP) + 20;
  const parts: string[] = [];
  let y = 28;
  parts.push(text(16, y, spec.title, 'font-size="17" font-weight="bold" fill="#202124"'));
  y += 20;
  parts.push(text(16, y, spec.subtitle, 'font-size="12" fill="#5f6368"'));
  y += 18;
  let lx = 16;
  for (const item of spec.legend) {
    parts.push(rect(lx, y - 10, 12, 12, item.color));
    parts.push(text(lx + 16, y, item.label, 'font-size="12" fill="#3c4043"'));
    lx += 24 + item.label.length * 6.6;
  }
  y += 22;

  for (const sec of spec.sections) {
    if (sec.title) {
      parts.push(text(16, y, sec.title, 'font-size="14" font-weight="bold" fill="#202124"'));
      y += 20;
    }
    // Bar panels, each with its own linear scale.
    const top = y;
    sec.panels.forEach((p, pi) => {
      const x0 = LABEL_W + pi * (PANEL_W + PANEL_GAP);
      parts.push(text(x0, top, p.title, 'font-size="13" font-weight="bold" fill="#202124"'));
    });
    y += 10;
    const maxes = sec.panels.map((_, pi) =>
      Math.max(0, ...sec.rows.map((r) => r.values[pi]).filter((v): v is number => v !== undefined && Number.isFinite(v))));
    sec.rows.forEach((row, ri) => {
      const ry = y + ri * ROW_H;
      if (ri % 2 === 0) parts.push(rect(8, ry, width - 16, ROW_H, '#f8f9fa'));
      parts.push(text(LABEL_W - 8, ry + 14, row.label, 'font-size="12" fill="#3c4043" text-anchor="end"'));
      sec.panels.forEach((p, pi) => {
        const v = row.values[pi];
        if (v === undefined || !Number.isFinite(v)) return;
        const x0 = LABEL_W + pi * (PANEL_W + PANEL_GAP);
        const w = maxes[pi] > 0 ? (Math.max(0, v) / maxes[pi]) * (PANEL_W - 56) : 0;
        parts.push(rect(x0, ry + (ROW_H - BAR_H) / 2, w, BAR_H, row.color));
        parts.push(text(x0 + w + 4, ry + 14, p.format(v), 'font-size="11" fill="#3c4043"'));
      });
    });
    y += sec.rows.length * ROW_H;
    sec.panels.forEach((_, pi) => {
      const x0 = LABEL_W + pi * (PANEL_W + PANEL_GAP);
      parts.push(`<line x1="${x0}" y1="${n(top + 6)}" x2="${x0}" y2="${n(y)}" stroke="#bdc1c6" stroke-width="1"/>`);
    });
    y += 34;
  }

  // Ratios against budgets: each row on its own scale, the budget as a dark line.
  if (spec.ratios.length) {
    parts.push(text(16, y, spec.ratioTitle, 'font-size="14" font-weight="bold" fill="#202124"'));
    y += 12;
    const barW = maxPanels * (PANEL_W + PANEL_GAP) - 250;
    spec.ratios.forEach((r, ri) => {
      const ry = y + ri * (ROW_H + 4);
      if (ri % 2 === 0) parts.push(rect(8, ry, width - 16, ROW_H + 4, '#f8f9fa'));
      parts.push(text(LABEL_W - 8, ry + 16, r.label, 'font-size="12" fill="#3c4043" text-anchor="end"'));
      const value = Number.isFinite(r.value) ? r.value : 0;
      const scale = Math.max(value, r.threshold) * 1.15 || 1;
      const color = r.pass === undefined ? '#9aa0a6' : r.pass ? '#1e8e3e' : '#d93025';
      parts.push(rect(LABEL_W, ry + 5, (value / scale) * barW, BAR_H, color));
      const tx = LABEL_W + (r.threshold / scale) * barW;
      parts.push(`<line x1="${n(tx)}" y1="${n(ry + 1)}" x2="${n(tx)}" y2="${n(ry + ROW_H + 3)}" stroke="#202124" stroke-width="2"/>`);
      const verdict = r.pass === undefined ? 'n/a' : r.pass ? 'PASS' : 'MISS';
      const label = Number.isFinite(r.value) ? `${fmt(r.value)}${r.unit}` : 'n/a';
      parts.push(text(LABEL_W + barW + 8, ry + 16, `${label} (budget ${r.want} ${fmt(r.threshold)}${r.unit}) ${verdict}`, `font-size="11" fill="${color}"`));
    });
    y += spec.ratios.length * (ROW_H + 4) + 10;
  }
  y += 8;
  parts.push(text(16, y, spec.footer, 'font-size="11" fill="#5f6368"'));
  const height = y + 14;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="${width}" height="${n(height)}" viewBox="0 0 ${width} ${n(height)}">`,
    rect(0, 0, width, height, '#ffffff'),
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return '-';
  if (Math.abs(v) >= 100) return Math.round(v).toString();
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
