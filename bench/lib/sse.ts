// Minimal text/event-stream reader for fully buffered bodies: returns each event's joined `data:` payload.
// Comment lines (`:`), `id:`, `event:` and `retry:` are skipped; events with empty data are dropped
// (2025-11-25 priming events carry an id and no data).
export function sseDataPayloads(body: string): string[] {
  const out: string[] = [];
  let data: string[] = [];
  const flush = (): void => {
    if (data.length > 0) {
      const joined = data.join('\n');
      if (joined.length > 0) out.push(joined);
    }
    data = [];
  };
  for (const line of body.split(/\r\n|\r|\n/)) {
    if (line === '') flush();
    else if (line.startsWith('data:')) data.push(line.slice(line.charAt(5) === ' ' ? 6 : 5));
  }
  flush();
  return out;
}

/** Heuristic for bodies whose Content-Type we were not given. */
export function looksLikeSse(body: string): boolean {
  return /^(data|event|id|retry):|^:/.test(body);
}
