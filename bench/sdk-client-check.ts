// Sanity check for the SDK peers: the official v2 client calls `set_price` on each peer, in modern
// (pinned 2026-07-28) and legacy mode, and the tools/call exchange is printed as seen on the wire.
// This is how testkit/mcp.ts was checked against what the real client sends.
//   node --import tsx bench/sdk-client-check.ts
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { spawnPeer } from './lib/wo.ts';

type Mode = 'modern' | 'legacy';
interface Target {
  name: string;
  file: string;
  env?: Record<string, string>;
  modes: Mode[];
}

const targets: Target[] = [
  { name: 'sdk-v2 (legacy sessions)', file: 'bench/peers/sdk-v2-server.ts', modes: ['modern', 'legacy'] },
  { name: 'sdk-v2 (legacy stateless)', file: 'bench/peers/sdk-v2-server.ts', env: { LEGACY: 'stateless' }, modes: ['modern', 'legacy'] },
  { name: 'sdk-v1 (stateful)', file: 'bench/peers/sdk-v1-server.ts', modes: ['legacy'] },
  { name: 'sdk-v1 (stateless, JSON)', file: 'bench/peers/sdk-v1-server.ts', env: { V1_MODE: 'stateless', V1_JSON: '1' }, modes: ['legacy'] },
];

/** A fetch that records the tools/call exchange so we can print it. */
function recordingFetch(log: string[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const body = typeof init?.body === 'string' ? init.body : '';
    if (body.includes('"tools/call"')) {
      const headers = Object.fromEntries(new Headers(init?.headers).entries());
      const text = await res.clone().text();
      log.push(
        `  > ${init?.method} ${JSON.stringify(headers)}\n  > ${body}\n` +
          `  < ${res.status} ${res.headers.get('content-type')} ${text.replace(/\n/g, '\\n').slice(0, 400)}`,
      );
    }
    return res;
  };
}

async function callOnce(url: string, mode: Mode): Promise<string[]> {
  const log: string[] = [];
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { fetch: recordingFetch(log) });
  const client = new Client(
    { name: 'bench-check', version: '1.0.0' },
    mode === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  await client.connect(transport);
  const result = await client.callTool({ name: 'set_price', arguments: { id: 'p1', price: 42 } });
  await client.close();
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result)}`);
  log.unshift(`  structuredContent: ${JSON.stringify(result.structuredContent)}`);
  return log;
}

let failures = 0;
for (const t of targets) {
  const server = await spawnPeer(t.file, { env: t.env });
  try {
    for (const mode of t.modes) {
      try {
        const log = await callOnce(server.url, mode);
        console.log(`OK   ${t.name} ${mode}\n${log.join('\n')}`);
      } catch (err) {
        failures++;
        console.log(`FAIL ${t.name} ${mode}: ${(err as Error).stack ?? String(err)}`);
      }
    }
  } finally {
    await server.stop();
  }
}
process.exitCode = failures > 0 ? 1 : 0;
