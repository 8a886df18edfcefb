// The cost of an invariant: durable REST `set_price` side by side (bench/lib/side-by-side.ts), the same
// app without (bench/apps/pricing-plain) and with one invariant declared on products (bench/apps/pricing-invariant).
// The ratio is the server CPU per call with the invariant over without (budget: <= 1.05x), judged on the median of
// paired rounds; the report gives the rounds' spread (interquartile range) beside it.
//
// Two servers differ by more than the invariant (heap layout, JIT timing, which core they share with a neighbour),
// and on shared cores the rounds spread by about +-10% while an invariant costs well under 1%. So this section runs
// more and longer rounds than the other side-by-side ones, and also weighs the part the invariant changes directly:
// the writer's decision of one set_price (bench/lib/decision-cost.ts, in this process, alternated), whose extra CPU
// over a set_price's server CPU is the invariant's expected share.
import { decisionCost, type DecisionCost } from '../lib/decision-cost.ts';
import { renderSideBySide, runSideBySide, type MeasureOptions, type SideBySideResult } from '../lib/side-by-side.ts';
import type { BenchContext, Mode } from './context.ts';

export const INVARIANT_BUDGET = 1.05;

export interface InvariantResult extends SideBySideResult {
  /** The round ratios' interquartile range (first and third quartile). */
  spread: [number, number];
  /** The decision of one set_price without and with the invariant, in this process. */
  decision: DecisionCost;
  /** 1 + the decision's extra CPU over the server CPU of a set_price without the invariant. */
  expectedRatio: number;
}

/** More and longer rounds than the other side-by-side sections: the figure sought is below their noise. */
const ROUNDS: Record<Mode, Partial<MeasureOptions>> = {
  full: { rounds: 15, windowMs: 2000 },
  quick: { rounds: 9 },
  smoke: {},
};
const DECISIONS: Record<Mode, { rounds: number; perRound: number }> = {
  full: { rounds: 21, perRound: 50_000 },
  quick: { rounds: 11, perRound: 20_000 },
  smoke: { rounds: 3, perRound: 1000 },
};

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((x, y) => x - y);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (at - lo);
};

export async function runInvariant(ctx: BenchContext): Promise<InvariantResult> {
  const result = await runSideBySide(ctx, 'invariant', [
    { app: 'pricing-plain', label: 'without' },
    { app: 'pricing-invariant', label: 'one invariant' },
  ], undefined, ROUNDS[ctx.mode]);
  ctx.phase('invariant: the decision of one set_price, without and with the invariant, in process');
  const d = DECISIONS[ctx.mode];
  const decision = await decisionCost(['pricing-plain', 'pricing-invariant'], d.rounds, d.perRound);
  const expectedRatio = 1 + decision.medianExtraNs / 1000 / result.a.srvCpuUsPerCall;
  if (result.medianRatio > INVARIANT_BUDGET) ctx.warn(`invariant: set_price server CPU with one invariant is ${result.medianRatio.toFixed(3)}x without (budget ${INVARIANT_BUDGET}x)`);
  return { ...result, spread: [quantile(result.roundRatios, 0.25), quantile(result.roundRatios, 0.75)], decision, expectedRatio };
}

/** The scenario's section of the report. */
export const renderInvariant = (r: InvariantResult): string =>
  [
    '## Invariant cost',
    '',
    'Durable REST `set_price`, side by side: the same app without and with one invariant declared.',
    '',
    ...renderSideBySide(r, 'with / without', INVARIANT_BUDGET),
    '',
    `Spread of the paired rounds (interquartile): ${r.spread[0].toFixed(3)}x to ${r.spread[1].toFixed(3)}x. ` +
      `The decision of one set_price in process (apply, encode, invariants; alternated rounds): ${r.decision.aNs.toFixed(0)} ns without, ` +
      `${r.decision.bNs.toFixed(0)} ns with the invariant, median extra ${r.decision.medianExtraNs.toFixed(0)} ns per call ` +
      `(rounds ${Math.min(...r.decision.roundExtraNs).toFixed(0)} to ${Math.max(...r.decision.roundExtraNs).toFixed(0)} ns): ` +
      `the ratio it predicts on the server is ${r.expectedRatio.toFixed(4)}x.`,
    '',
  ].join('\n');
