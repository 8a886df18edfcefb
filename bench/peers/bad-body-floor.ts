// The floor for bad bodies answered while other requests are served (bench/scenarios/amplify.ts): what a plain
// node:http server does with a JSON body of unknown keys, and nothing else. It speaks just enough of our wire for
// the scenario to drive it unchanged:
//   POST /api/products      -> reads the body (chunks, then one Buffer), JSON.parses it whole, and answers 400
//                              naming the first key a product has not (at most 20, and a count of the others),
//                              as our ValidationFailed does;
//   GET /api/products/:id   -> a row's JSON, built per request.
// The usual way (express.json() and most frameworks do the same): the whole parse in one step of the event loop.
import { createServer } from 'node:http';
import { listenAndAnnounce } from './listen.ts';

const ACCEPTS = new Set(['name', 'price', 'currency']);
const MAX_ISSUES = 20;

const answer = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const row = /^\/api\/products\/(\d+)$/.exec(url.pathname);
  if (req.method === 'GET' && row) {
    return answer(res, 200, { id: row[1], version: 1, name: `product ${row[1]}`, price: 100, currency: 'EUR' });
  }
  if (req.method !== 'POST' || url.pathname !== '/api/products') return answer(res, 404, { error: 'NotFound' });
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (process.env.DISCARD === '1') return answer(res, 400, { error: 'ValidationFailed' });
    let input: unknown;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      return answer(res, 400, { error: 'InvalidJson', message: `the body is not valid JSON: ${(e as Error).message}` });
    }
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      return answer(res, 400, { error: 'ValidationFailed', message: 'the body must be a JSON object' });
    }
    const issues: Array<{ path: string[]; message: string }> = [];
    let omitted = 0;
    for (const key in input) {
      if (ACCEPTS.has(key)) continue;
      if (issues.length < MAX_ISSUES) issues.push({ path: [key], message: 'is unexpected' });
      else omitted++;
    }
    if (issues.length > 0) return answer(res, 400, { error: 'ValidationFailed', message: `unknown key ${issues[0].path[0]}`, issues, omitted });
    answer(res, 201, { id: '1', version: 1, ...(input as object) });
  });
});
listenAndAnnounce(server);
