// The floors' `subscriptions/listen` streams (bench/peers/sse-fanout.ts, notify-floor.ts): the acknowledgement, then
// the stream registered under every URI it follows until it closes.
import type { ServerResponse } from 'node:http';

export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** uri -> the listen streams following it, with their id's JSON */
export type ListenStreams = Map<string, Map<ServerResponse, string>>;

export interface ListenRequest {
  id?: unknown;
  params?: { notifications?: { resourceSubscriptions?: string[] } };
}

/** Answers a listen request with its SSE stream and registers it in `listens` for as long as it is open. */
export function openListenStream(listens: ListenStreams, msg: ListenRequest, res: ServerResponse): void {
  const idJson = JSON.stringify(msg.id);
  const uris = msg.params?.notifications?.resourceSubscriptions ?? [];
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const ack = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: msg.params?.notifications ?? {}, _meta: { [SUBSCRIPTION_ID]: msg.id } } };
  res.write(`event: message\ndata: ${JSON.stringify(ack)}\n\n`);
  for (const uri of uris) {
    let m = listens.get(uri);
    if (!m) listens.set(uri, (m = new Map()));
    m.set(res, idJson);
  }
  res.on('close', () => {
    for (const uri of uris) listens.get(uri)?.delete(res);
  });
}
