/**
 * Concurrency borrowing between priority levels, as kube-apiserver's API Priority and Fairness
 * does since 1.26 (KEP-1040 "Dispatching" / "Borrowing"; k8s.io/apiserver/pkg/util/flowcontrol,
 * apf_controller.go `updateBorrowingLocked` and conc_alloc.go): a level lends up to
 * `lendablePercent` of its nominal seats and may borrow up to `borrowingLimitPercent` of them
 * (unset: without limit, up to the whole server). Every {@link BORROWING_ADJUSTMENT_PERIOD_MS}
 * the server's seats are divided anew among the levels by their recent seat demand (seats in use
 * plus seats wanted by queued requests, integrated over time): each level gets at least the
 * lesser of its nominal limit and its demand's high watermark (never below nominal − lendable),
 * at most nominal + borrowing limit, and the rest in proportion to its smoothed demand.
 *
 * So a tenant's LIST flood in a busy level takes the seats idle levels are not using, instead of
 * queueing behind its own wide requests while most of the server's seats sit idle.
 */

/** How often the levels' current limits are recomputed (kube's `borrowingAdjustmentPeriod`, 10 s). */
export const BORROWING_ADJUSTMENT_PERIOD_MS = 10_000;

/** Weight of the previous smoothed demand (kube's `seatDemandSmoothingCoefficient`). */
export const SEAT_DEMAND_SMOOTHING = 0.977;

/** Share of a level's nominal limit one request may hold at most (kube's `priorityLevelMaxSeatsPercent`). */
export const MAX_SEATS_PERCENT_OF_LEVEL = 0.15;

/** Time-integrated seat demand of a level over one adjustment period. */
export interface SeatDemandObservation {
  /** Time-weighted mean (seats). */
  average: number;
  /** Time-weighted standard deviation (seats). */
  deviation: number;
  /** Highest value seen (seats). */
  max: number;
  /** Length of the period (ms). */
  durationMs: number;
}

/**
 * Integrates a piecewise-constant value over time (kube's fairqueuing `Integrator`): `set` at
 * every change, `reset` at the end of a period returns the period's mean, deviation and maximum
 * and starts the next period at the current value.
 */
export class SeatDemandIntegrator {
  private value = 0;
  private since: number;
  private start: number;
  private area = 0;
  private squares = 0;
  private max = 0;

  /** @param now monotonic clock, ms */
  constructor(private readonly now: () => number) {
    this.since = now();
    this.start = this.since;
  }

  /** The value changed to `x` (seats), at `at` ms (default: now). */
  set(x: number, at = this.now()): void {
    const dt = at - this.since;
    if (dt > 0) { this.area += this.value * dt; this.squares += this.value * this.value * dt; }
    this.since = at;
    this.value = x;
    if (x > this.max) this.max = x;
  }

  /** Ends the period: its statistics; the next starts now at the current value. */
  reset(at = this.now()): SeatDemandObservation {
    this.set(this.value, at);
    const durationMs = at - this.start;
    const average = durationMs > 0 ? this.area / durationMs : this.value;
    const variance = durationMs > 0 ? this.squares / durationMs - average * average : 0;
    const obs = { average, deviation: Math.sqrt(Math.max(0, variance)), max: Math.max(this.max, this.value), durationMs };
    this.start = at;
    this.area = 0;
    this.squares = 0;
    this.max = this.value;
    return obs;
  }
}

/** A level's demand statistics across periods (kube's `seatDemandStats`). */
export class SeatDemandStats {
  highWatermark = 0;
  average = 0;
  deviation = 0;
  /** Exponentially smoothed envelope (mean + deviation), never below the latest envelope. */
  smoothed = 0;

  /** Takes in one period's observation. */
  update(obs: SeatDemandObservation): void {
    this.highWatermark = Math.round(obs.max);
    if (obs.durationMs <= 0) return;
    this.average = obs.average;
    this.deviation = obs.deviation;
    const envelope = obs.average + obs.deviation;
    this.smoothed = Math.max(envelope, SEAT_DEMAND_SMOOTHING * this.smoothed + (1 - SEAT_DEMAND_SMOOTHING) * envelope);
  }
}

/** The fixed limits of a Limited level, from its nominal limit and configuration (kube's apf_controller.go digestion). */
export interface LevelLimits {
  /** Nominal limit less what it lends (seats). */
  minCL: number;
  /** Nominal limit plus what it may borrow (seats). */
  maxCL: number;
  /** Its limit before the first adjustment: nominal less half of the lendable seats. */
  initialCL: number;
  /** Most seats one request of the level may hold: max(1, min(ceil(15 % of nominal), nominal / handSize)). */
  maxSeats: number;
}

/**
 * A Limited level's limits. `lendablePercent` defaults to 0; an unset `borrowingLimitPercent`
 * lets it borrow up to `serverCL`. Go's `math.Round` (half away from zero) and integer division as kube.
 */
export function levelLimits(nominalCL: number, lendablePercent: number | undefined, borrowingLimitPercent: number | undefined, serverCL: number, handSize: number | undefined): LevelLimits {
  const lendableCL = Math.round(nominalCL * (lendablePercent ?? 0) / 100);
  const borrowingCL = borrowingLimitPercent === undefined ? serverCL : Math.round(nominalCL * borrowingLimitPercent / 100);
  const maxSeats = handSize && handSize > 0 ? Math.max(1, Math.min(Math.ceil(nominalCL * MAX_SEATS_PERCENT_OF_LEVEL), Math.trunc(nominalCL / handSize))) : 0;
  return { minCL: nominalCL - lendableCL, maxCL: nominalCL + borrowingCL, initialCL: nominalCL - Math.trunc(lendableCL / 2), maxSeats };
}

/** One Limited level in the allocation problem (seats). */
export interface AllocationItem { lowerBound: number; upperBound: number; target: number }

/** kube's `MinTarget`: a zero target is taken as this, so every level has a direction to grow in. */
const MIN_TARGET = 0.001;

/**
 * Divides `requiredSum` seats among `items`: item i gets clamp(p × targetᵢ, lowerᵢ, upperᵢ) for the
 * one proportion p that makes them sum to `requiredSum` (kube's `computeConcurrencyAllocation`; the
 * sum is monotone in p, found here by bisection). When the lower bounds already reach the sum each
 * gets its lower bound; when the upper bounds do not reach it, its upper bound.
 * @throws RangeError when a target is below its lower bound or an upper bound below its lower bound
 */
export function allocateConcurrency(requiredSum: number, items: readonly AllocationItem[]): number[] {
  let lowSum = 0;
  let highSum = 0;
  const targets = items.map((it, i) => {
    if (it.upperBound < it.lowerBound) throw new RangeError(`upper bound ${i} (${it.upperBound}) is below its lower bound (${it.lowerBound})`);
    if (it.target < it.lowerBound) throw new RangeError(`target ${i} (${it.target}) is below its lower bound (${it.lowerBound})`);
    lowSum += it.lowerBound;
    highSum += it.upperBound;
    return Math.max(it.target, MIN_TARGET);
  });
  if (lowSum >= requiredSum) return items.map((it) => it.lowerBound);
  if (highSum <= requiredSum) return items.map((it) => it.upperBound);
  const sumAt = (p: number) => items.reduce((s, it, i) => s + Math.max(it.lowerBound, Math.min(it.upperBound, p * targets[i]!)), 0);
  let lo = 0;
  let hi = 1;
  while (sumAt(hi) < requiredSum) hi *= 2;
  for (let k = 0; k < 100 && hi - lo > 1e-12 * hi; k++) {
    const mid = (lo + hi) / 2;
    if (sumAt(mid) < requiredSum) lo = mid; else hi = mid;
  }
  return items.map((it, i) => Math.max(it.lowerBound, Math.min(it.upperBound, hi * targets[i]!)));
}
