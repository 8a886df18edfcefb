// The CPU of the writer's decision of one `set_price` (the entity Decider's `decide` of the method: apply, encode,
// invariants), in this process, for two bench apps (bench/apps/<name>/app.ts) alternated round by round. The side-by-
// side servers (side-by-side.ts) weigh a feature on the whole request, where one noisy window moves the ratio by more
// than the feature costs; this isolates the part a feature like an invariant changes. Needs the writeonce-source
// condition (`npm run bench` has it): the apps import "writeonce".
import { Either } from 'effect';
import { join } from 'node:path';
import type { AppDef } from '../../src/domain/catalog.ts';
import { compileApp } from '../../src/domain/compile.ts';
import { decide } from '../../src/domain/decide/decider.ts';
import { repoRoot } from './wo.ts';

export interface DecisionCost {
  /** ns of CPU per decision, each side, over all rounds */
  aNs: number;
  bNs: number;
  /** each round's b - a, ns per decision */
  roundExtraNs: number[];
  /** the median of `roundExtraNs` */
  medianExtraNs: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

const decider = async (app: string) => {
  const def = (await import(join(repoRoot, 'bench', 'apps', app, 'app.ts'))).default as AppDef;
  const compiled = Either.getOrThrow(compileApp(def));
  const type = compiled.types.get('products')!;
  const method = type.methods.get('set_price')!;
  const rows = Array.from({ length: 1000 }, (_, i) => ({ id: String(i + 1), version: 1 + (i % 7), name: `p${i}`, price: 1 + (i % 500), currency: 'USD' }));
  /** `n` decisions; the process's CPU they took, in µs. */
  return (n: number): number => {
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const row = rows[i % rows.length];
      const d = decide(type, row.id, row, { _tag: 'Invoke', method, params: { price: 1 + (i % 500) } }, undefined);
      if (Either.isLeft(d)) throw new Error(`decision refused: ${d.left._tag}`);
    }
    const used = process.cpuUsage(before);
    return used.user + used.system;
  };
};

/** `rounds` rounds of `perRound` decisions on each app, the order flipped every round, after a warm-up of each. */
export async function decisionCost(apps: readonly [string, string], rounds: number, perRound: number): Promise<DecisionCost> {
  const run = [await decider(apps[0]), await decider(apps[1])];
  for (const r of run) r(perRound * 2);
  const used = [0, 0];
  const roundExtraNs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const us = [0, 0];
    for (const k of round % 2 === 0 ? [0, 1] : [1, 0]) us[k] = run[k](perRound);
    used[0] += us[0];
    used[1] += us[1];
    roundExtraNs.push(((us[1] - us[0]) * 1000) / perRound);
  }
  const total = rounds * perRound;
  return { aNs: (used[0] * 1000) / total, bNs: (used[1] * 1000) / total, roundExtraNs, medianExtraNs: median(roundExtraNs) };
}
