// What principals cost. Two budgets:
//  - an access file of 100 principals against none: server CPU per durable REST `set_price` and per GET, side by
//    side (bench/lib/side-by-side.ts; the caller is the 50th principal, with `products:*`; the other side is the
//    open loopback server, no credential). Budget: <= 1.05x each, on the median of paired rounds.
//  - OAuth: authenticating an access token seen before (answered from the cache of verified tokens) against a
//    static token's lookup (its SHA-256 digest among 100 principals' digests), in this process, the two alternated
//    round by round, each call on a fresh copy of the token as a request's header gives it. Budget: <= 1.1x.
//    The JWTs are a realistic size: RS256 (a 342-character signature) and ES256; the worse of the two is judged.
// Alone: npm run bench -- --only access [--quick]
import { Effect } from 'effect';
import { hash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { makeOAuthVerifier } from '../../src/access/oauth/jwt-verifier.ts';
import { signingKeys } from '../../src/access/oauth/signing-keys.ts';
import { budget, type Budget } from '../report.ts';
import { freshDataDir } from '../lib/wo.ts';
import { renderSideBySide, runSideBySide, type SideBySideResult } from '../lib/side-by-side.ts';
import type { BenchContext, Mode } from './context.ts';

export const PRINCIPALS_BUDGET = 1.05;
export const OAUTH_SEEN_BUDGET = 1.1;

export interface TokenCost {
  alg: 'RS256' | 'ES256';
  jwtLength: number;
  /** Median ns per authentication. */
  seenNs: number;
  staticNs: number;
  /** Median of the rounds' seen / static. */
  ratio: number;
}

export interface AccessCostResult {
  principals: number;
  setPrice: SideBySideResult;
  get: SideBySideResult;
  tokens: TokenCost[];
  /** The worse of the algorithms' ratios: what the OAuth budget judges. */
  oauthRatio: number;
  /** Whether every seen token was verified once only (the cache answered every later call). */
  verifiedOnce: boolean;
}

const PRINCIPALS = 100;
const tokenOf = (i: number) => `bench-principal-${i}-${randomBytes(12).toString('base64url')}`;

/** Rounds and calls per round of the in-process token comparison. */
const TOKEN_ROUNDS: Record<Mode, { rounds: number; calls: number }> = {
  full: { rounds: 15, calls: 20_000 },
  quick: { rounds: 7, calls: 10_000 },
  smoke: { rounds: 1, calls: 1000 },
};

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** `n` fresh strings with `s`'s characters, as node:http hands a header's value to each request. */
const copies = (s: string, n: number) => Array.from({ length: n }, () => Buffer.from(s).toString('latin1'));

/** CPU µs `f` takes over `tokens`; each must authenticate. */
const cpuOf = (f: (t: string) => unknown, tokens: string[]) => {
  const before = process.cpuUsage();
  for (let i = 0; i < tokens.length; i++) if (f(tokens[i]) === undefined) throw new Error('a token was not authenticated');
  const used = process.cpuUsage(before);
  return used.user + used.system;
};

const ISSUER = 'https://issuer.bench';
const AUDIENCE = 'https://writeonce.bench';

async function tokenCost(ctx: BenchContext, alg: 'RS256' | 'ES256', dir: string): Promise<TokenCost & { verifications: number }> {
  const { rounds, calls } = TOKEN_ROUNDS[ctx.mode];
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const file = join(dir, `jwks-${alg}.json`);
  writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg }] }));
  const verifier = makeOAuthVerifier({ issuer: ISSUER, audience: [AUDIENCE], keys: await Effect.runPromise(signingKeys(file)) });
  const jwt = await new SignJWT({ client_id: 'pricing-agent', sub: 'alice@example.com', scope: 'products:read products:set_price' })
    .setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt()
    .setExpirationTime('2h').setJti(randomBytes(16).toString('hex')).sign(privateKey);
  await Effect.runPromise(verifier.authenticate(jwt)); // seen once: cached from here on
  // The static side as the server keeps it: 100 principals by the hex digest of their token.
  const staticTokens = Array.from({ length: PRINCIPALS }, (_, i) => tokenOf(i));
  const byDigest = new Map(staticTokens.map((t, i) => [hash('sha256', t, 'hex'), { name: `p${i}` }]));
  const lookUp = (t: string) => byDigest.get(hash('sha256', t, 'hex'));
  const sides = {
    seen: { token: jwt, run: (ts: string[]) => cpuOf(verifier.cached, ts) },
    static: { token: staticTokens[PRINCIPALS / 2], run: (ts: string[]) => cpuOf(lookUp, ts) },
  };
  for (const s of Object.values(sides)) for (let w = 0; w < 3; w++) s.run(copies(s.token, calls));
  const ns = { seen: [] as number[], static: [] as number[] };
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const us = { seen: 0, static: 0 };
    // Alternate which side goes first, so a drift of the machine weighs on both alike.
    for (const k of round % 2 === 0 ? (['static', 'seen'] as const) : (['seen', 'static'] as const)) us[k] = sides[k].run(copies(sides[k].token, calls));
    ns.seen.push((us.seen * 1000) / calls);
    ns.static.push((us.static * 1000) / calls);
    ratios.push(us.seen / us.static);
  }
  return { alg, jwtLength: jwt.length, seenNs: median(ns.seen), staticNs: median(ns.static), ratio: median(ratios), verifications: verifier.verifications() };
}

export async function runAccessCost(ctx: BenchContext): Promise<AccessCostResult> {
  const dir = freshDataDir(ctx.dataRoot, 'access');
  ctx.track(dir);
  const caller = tokenOf(50);
  const accessFile = join(dir, 'access.json');
  writeFileSync(accessFile, JSON.stringify({
    principals: Array.from({ length: PRINCIPALS }, (_, i) => ({
      name: `agent-${i}`,
      // Half the tokens in clear, half as their digest: the file's two forms.
      ...(i % 2 === 0 ? { token: i === 50 ? caller : tokenOf(i) } : { tokenSha256: hash('sha256', tokenOf(i), 'hex') }),
      grants: i % 3 === 0 ? ['read'] : ['products:read', 'products:set_price', 'products:*'],
    })),
  }));
  const sides = [
    { app: 'pricing-plain', label: 'no access file' },
    { app: 'pricing-plain', label: `${PRINCIPALS} principals`, env: { WO_ACCESS_FILE: accessFile }, headers: { authorization: `Bearer ${caller}` } },
  ] as const;
  const setPrice = await runSideBySide(ctx, 'access', sides, undefined, {}, 'set_price');
  const get = await runSideBySide(ctx, 'access', sides, undefined, {}, 'get');
  ctx.phase('access: an OAuth token seen before against a static token, in this process');
  const measured = [await tokenCost(ctx, 'RS256', dir), await tokenCost(ctx, 'ES256', dir)];
  const tokens = measured.map(({ verifications: _, ...t }) => t);
  const oauthRatio = Math.max(...tokens.map((t) => t.ratio));
  const verifiedOnce = measured.every((t) => t.verifications === 1);
  if (!verifiedOnce) ctx.warn('access: a seen OAuth token was verified again (the cache missed)');
  for (const [what, r] of [['set_price', setPrice], ['GET', get]] as const) {
    console.log(`access: ${what} server CPU/call with ${PRINCIPALS} principals / none: median ${r.medianRatio.toFixed(3)}x (budget <= ${PRINCIPALS_BUDGET}x)`);
    if (r.medianRatio > PRINCIPALS_BUDGET) ctx.warn(`access: ${what} with ${PRINCIPALS} principals is ${r.medianRatio.toFixed(3)}x none (budget ${PRINCIPALS_BUDGET}x)`);
  }
  console.log(`access: an OAuth token seen before / a static token: ${tokens.map((t) => `${t.alg} ${t.ratio.toFixed(3)}x`).join(', ')} (budget <= ${OAUTH_SEEN_BUDGET}x)`);
  return { principals: PRINCIPALS, setPrice, get, tokens, oauthRatio, verifiedOnce };
}

export const accessBudgets = (r: AccessCostResult): Budget[] => [
  budget('principalsSetPriceCpu', `durable set_price server CPU with ${r.principals} principals / no access file (median of paired rounds)`, '<=', PRINCIPALS_BUDGET, r.setPrice.medianRatio, 'x',
    `${r.setPrice.b.srvCpuUsPerCall.toFixed(0)} against ${r.setPrice.a.srvCpuUsPerCall.toFixed(0)} µs/call; see "Access cost"`),
  budget('principalsGetCpu', `GET server CPU with ${r.principals} principals / no access file (median of paired rounds)`, '<=', PRINCIPALS_BUDGET, r.get.medianRatio, 'x',
    `${r.get.b.srvCpuUsPerCall.toFixed(1)} against ${r.get.a.srvCpuUsPerCall.toFixed(1)} µs/call; see "Access cost"`),
  budget('oauthSeenToken', 'authenticating an OAuth token seen before / a static token (worse of RS256 and ES256)', '<=', OAUTH_SEEN_BUDGET, r.oauthRatio, 'x',
    r.tokens.map((t) => `${t.alg} ${t.seenNs.toFixed(0)} against ${t.staticNs.toFixed(0)} ns`).join('; ')),
];

/** The scenario's section of the report. */
export const renderAccessCost = (r: AccessCostResult): string =>
  [
    '## Access cost',
    '',
    `The same app with an access file of ${r.principals} principals (each request carries the 50th's token, \`products:*\`) and with none (the open loopback server).`,
    '',
    '### Durable REST `set_price`',
    '',
    ...renderSideBySide(r.setPrice, `${r.principals} principals / none`, PRINCIPALS_BUDGET),
    '',
    '### REST GET of a product',
    '',
    ...renderSideBySide(r.get, `${r.principals} principals / none`, PRINCIPALS_BUDGET),
    '',
    '### An OAuth token seen before against a static token',
    '',
    'CPU per authentication in the bench process, each call on a fresh copy of the token (as a request header arrives); the static token is looked up by its SHA-256 among 100 digests.',
    '',
    '| token | length | seen before | static | ratio |',
    '|---|---:|---:|---:|---:|',
    ...r.tokens.map((t) => `| ${t.alg} JWT | ${t.jwtLength} | ${t.seenNs.toFixed(0)} ns | ${t.staticNs.toFixed(0)} ns | ${t.ratio.toFixed(3)}x |`),
    '',
    `Worse ratio **${r.oauthRatio.toFixed(3)}x** (budget <= ${OAUTH_SEEN_BUDGET}x: ${r.oauthRatio <= OAUTH_SEEN_BUDGET ? 'PASS' : 'MISS'}); each token verified ${r.verifiedOnce ? 'once' : 'MORE than once'}.`,
    '',
  ].join('\n');
