// Shared start-up for every peer: bind loopback on $PORT (0 = ephemeral) and announce
// the URL on stdout, which is what spawnPeer (bench/lib/wo.ts) waits for.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export function listenAndAnnounce(server: Server): void {
  // Benchmarks keep connections alive for the whole run; node's 5 s default would cut idle workers.
  server.keepAliveTimeout = 60_000;
  const port = Number(process.env.PORT ?? 0);
  server.listen(port, '127.0.0.1', () => {
    const { port: bound } = server.address() as AddressInfo;
    process.stdout.write(`listening http://127.0.0.1:${bound}\n`);
  });
  const shutdown = (): void => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}
