// The cost of authenticating an OAuth access token seen before (src/access/oauth/verifier.ts: answered from the
// cache of verified tokens) against a static token's lookup (the SHA-256 digest of the presented token, looked up
// among 100 principals' digests), in this process: CPU ns per authentication, the two alternated round by round
// (R rounds, default 15, of N authentications each, default 20000), each call on a fresh copy of the token as a
// request's header would give it. The budget: an already-seen token costs at most 1.1x a static one.
// Two ways each: direct (the edge's path without a fiber: `cached`), and inside a fiber (`authenticate`, against
// the static lookup in `Effect.sync`). The JWTs are a realistic size: RS256 (a 342-character signature) and ES256.
// Last, what trying the OAuth cache before the static digests costs a static token.
//   node --import tsx bench/oauth-token-ab.ts
import { Effect } from 'effect';
import { createHash, hash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { signingKeys } from '../src/access/oauth/signing-keys.ts';
import { makeOAuthVerifier } from '../src/access/oauth/jwt-verifier.ts';
import type { OAuthVerifierService } from '../src/access/oauth/verifier.ts';

const R = Number(process.env.R ?? 15);
const N = Number(process.env.N ?? 20_000);
const ISSUER = 'https://issuer.bench';
const AUDIENCE = 'https://writeonce.bench';

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** A fresh string with `s`'s characters, as node:http hands a header's value to each request. */
const copies = (s: string) => Array.from({ length: N }, () => Buffer.from(s).toString('latin1'));

// The static side: 100 principals' tokens by their digest (hex), as an access file's `token`/`tokenSha256` give them.
const staticTokens = Array.from({ length: 100 }, () => randomBytes(32).toString('base64url'));
const byDigestCreateHash = new Map(staticTokens.map((t, i) => [createHash('sha256').update(t).digest('hex'), { name: `p${i}` }]));
const byDigestOneShot = new Map(staticTokens.map((t, i) => [hash('sha256', t, 'hex'), { name: `p${i}` }]));
const staticCreateHash = (t: string) => byDigestCreateHash.get(createHash('sha256').update(t).digest('hex'));
const staticOneShot = (t: string) => byDigestOneShot.get(hash('sha256', t, 'hex'));

const issuer = async (alg: 'RS256' | 'ES256') => {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const file = join(tmpdir(), `wo-bench-jwks-${alg}-${process.pid}.json`);
  writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg }] }));
  const keys = await Effect.runPromise(signingKeys(file));
  const verifier = makeOAuthVerifier({ issuer: ISSUER, audience: [AUDIENCE], keys });
  const token = await new SignJWT({ client_id: 'pricing-agent', sub: 'alice@example.com', scope: 'products:read products:set_price command:restock view:stock' })
    .setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt()
    .setExpirationTime('2h').setJti(randomBytes(16).toString('hex')).sign(privateKey);
  await Effect.runPromise(verifier.authenticate(token)); // seen once: cached from here on
  return { verifier, token };
};

/** CPU µs that `f` takes over the N copies. */
const cpuOf = (f: (t: string) => unknown, tokens: string[]) => {
  const before = process.cpuUsage();
  for (let i = 0; i < tokens.length; i++) if (f(tokens[i]) === undefined) throw new Error('not authenticated');
  const used = process.cpuUsage(before);
  return used.user + used.system;
};

/** The same, each call an Effect run inside one fiber. */
const cpuInFiber = (f: (t: string) => Effect.Effect<unknown, unknown>, tokens: string[]) => {
  const before = process.cpuUsage();
  Effect.runSync(Effect.orDie(Effect.gen(function* () {
    for (let i = 0; i < tokens.length; i++) yield* f(tokens[i]);
  })));
  const used = process.cpuUsage(before);
  return used.user + used.system;
};

interface Side {
  readonly name: string;
  readonly token: string;
  readonly run: (tokens: string[]) => number;
}

/** R rounds of the two sides, the order flipped every round, after a warm-up of each: median ns of each, and of b/a. */
const compare = (a: Side, b: Side) => {
  for (const s of [a, b]) for (let w = 0; w < 3; w++) s.run(copies(s.token));
  const ns: Record<'a' | 'b', number[]> = { a: [], b: [] };
  const ratios: number[] = [];
  for (let round = 0; round < R; round++) {
    const inputs = { a: copies(a.token), b: copies(b.token) };
    const us = { a: 0, b: 0 };
    for (const k of round % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) us[k] = (k === 'a' ? a : b).run(inputs[k]);
    ns.a.push((us.a * 1000) / N);
    ns.b.push((us.b * 1000) / N);
    ratios.push(us.b / us.a);
  }
  const ratio = median(ratios);
  console.log(`${b.name.padEnd(34)} ${median(ns.b).toFixed(0).padStart(5)} ns   ${a.name.padEnd(34)} ${median(ns.a).toFixed(0).padStart(5)} ns   ratio ${ratio.toFixed(3)}x`);
  return ratio;
};

const jwts = { RS256: await issuer('RS256'), ES256: await issuer('ES256') };
const staticToken = staticTokens[42];
console.log(`oauth-token-ab: ${R} rounds of ${N}; JWT lengths RS256 ${jwts.RS256.token.length}, ES256 ${jwts.ES256.token.length}; static ${staticToken.length}`);

const direct = (v: OAuthVerifierService) => (tokens: string[]) => cpuOf(v.cached, tokens);
const worst: number[] = [];
for (const [alg, { verifier, token }] of Object.entries(jwts)) {
  worst.push(compare({ name: 'static, createHash', token: staticToken, run: (ts) => cpuOf(staticCreateHash, ts) }, { name: `${alg} seen, direct`, token, run: direct(verifier) }));
  worst.push(compare({ name: 'static, crypto.hash', token: staticToken, run: (ts) => cpuOf(staticOneShot, ts) }, { name: `${alg} seen, direct`, token, run: direct(verifier) }));
  worst.push(compare(
    { name: 'static, crypto.hash in a fiber', token: staticToken, run: (ts) => cpuInFiber((t) => Effect.sync(() => staticOneShot(t)), ts) },
    { name: `${alg} seen, authenticate in a fiber`, token, run: (ts) => cpuInFiber(verifier.authenticate, ts) }
  ));
  if (verifier.verifications() !== 1) throw new Error(`${alg}: verified ${verifier.verifications()} times, expected once`);
}
// The order the edge tries them in: the OAuth cache first (a bearer without a dot is passed over at once), then the
// static digests. What that order costs a static token:
const { verifier } = jwts.RS256;
compare({ name: 'static, crypto.hash', token: staticToken, run: (ts) => cpuOf(staticOneShot, ts) },
  { name: 'static after the OAuth cache', token: staticToken, run: (ts) => cpuOf((t) => verifier.cached(t) ?? staticOneShot(t), ts) });
const max = Math.max(...worst);
console.log(`worst ratio ${max.toFixed(3)}x (budget <= 1.1x): ${max <= 1.1 ? 'within' : 'OVER'}`);
