// A connected `pg` client to the primary of $STORE_URL, for the floors on PostgreSQL (pg-floor.ts,
// pg-cluster-floor.ts): postgres://user@host:port,host:port,.../db, whose first host is the primary
// (scripts/pg-cluster.sh). The WHATWG URL refuses several hosts, hence the pattern.
import pg from 'pg';

export async function primaryClient(peer: string): Promise<pg.Client> {
  const m = /^postgres(?:ql)?:\/\/(?:([^@/]+)@)?([^:,/]+):(\d+)[^/]*\/([^?]+)/.exec(process.env.STORE_URL ?? '');
  if (!m) throw new Error(`${peer}: STORE_URL must be postgres://user@host:port[,...]/db, not ${process.env.STORE_URL}`);
  const client = new pg.Client({ user: m[1] ?? 'postgres', host: m[2], port: Number(m[3]), database: m[4] });
  await client.connect();
  return client;
}
