// Baseline peer: the least a node:http server can do for a small JSON POST.
// Reads the body, parses it, echoes it back with an explicit Content-Length.
import { createServer } from 'node:http';
import { listenAndAnnounce } from './listen.ts';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let payload: Buffer;
    let status = 200;
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      payload = Buffer.from(JSON.stringify({ ok: true, echo: parsed }));
    } catch {
      status = 400;
      payload = Buffer.from('{"ok":false}');
    }
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': payload.length });
    res.end(payload);
  });
});

listenAndAnnounce(server);
