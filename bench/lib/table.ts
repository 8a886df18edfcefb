// Fixed-width text table for benchmark output: numbers right-aligned, text left-aligned.
export type Cell = string | number;

export function formatNumber(n: number, digits = 2): string {
  if (!Number.isFinite(n)) return '-';
  if (Number.isInteger(n)) return String(n);
  return n >= 1000 ? Math.round(n).toString() : n.toFixed(digits);
}

export function renderTable(header: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map((c) => (typeof c === 'number' ? formatNumber(c) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[], numeric: boolean[]): string =>
    cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  const isNum = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  return [line(header, isNum), widths.map((w) => '-'.repeat(w)).join('  '), ...text.map((r) => line(r, isNum))].join('\n');
}
