// The floor for durable writes with listen streams open (bench/scenarios/readers.ts, its unread-streams phase): the
// durable-write floor (bench/peers/floor-core.ts with level-floor-write.ts: group commit on classic-level) plus
// what a careful hand-written server does to announce each durable change: after a group is durable and answered,
// one frame per change to every listen stream subscribed to its row, spliced with the stream's subscriptionId from
// a prefix built once per change (as bench/peers/sse-fanout.ts does), all of a group's frames for a stream in one
// write, written at once. It speaks just enough of our
// wire for the scenario to drive it unchanged:
//   POST /api/products, /api/products/:id/set_price -> the durable-write floor's answers;
//   POST /mcp subscriptions/listen                  -> an SSE stream: an acknowledgement, then one
//                                                      notifications/resources/updated per change of a row it follows.
// Data dir: $DATA_DIR (the harness makes a fresh one).
import type { ServerResponse } from 'node:http';
import { floorServer } from './floor-core.ts';
import { openLevelFloorWrite } from './level-floor-write.ts';
import { listenAndAnnounce } from './listen.ts';
import { openListenStream, SUBSCRIPTION_ID, type ListenRequest, type ListenStreams } from './listen-streams.ts';

const listens: ListenStreams = new Map();

listenAndAnnounce(
  floorServer(await openLevelFloorWrite(process.env.DATA_DIR!), {
    route: (method, path, body, res) => {
      if (method !== 'POST' || path !== '/mcp') return false;
      const msg = body as { method?: string };
      if (msg.method === 'subscriptions/listen') openListenStream(listens, body as ListenRequest, res);
      else res.writeHead(404).end();
      return true;
    },
    committed: (group) => {
      // One write per stream per group, of every frame the group has for it (fewer, fuller writes: a socket write
      // costs about the same whatever it carries).
      const out = new Map<ServerResponse, string>();
      for (const { row } of group) {
        const uri = `wo://products/${row.id}`;
        const streams = listens.get(uri);
        if (!streams?.size) continue;
        const prefix = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":${JSON.stringify(uri)},"_meta":{"${SUBSCRIPTION_ID}":`;
        for (const [stream, idJson] of streams) out.set(stream, `${out.get(stream) ?? ''}${prefix}${idJson}}}}\n\n`);
      }
      for (const [stream, frames] of out) if (!stream.writableNeedDrain) stream.write(frames);
    },
  }),
);
