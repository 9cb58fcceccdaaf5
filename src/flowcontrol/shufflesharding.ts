/**
 * Shuffle sharding, as kube-apiserver's (k8s.io/apiserver/pkg/util/shufflesharding): a flow's
 * hash deals it a "hand" of `handSize` distinct queues out of a "deck" of `deckSize`, so two flows
 * rarely share all their queues and one flooding flow cannot fill every queue another flow may use.
 */
import { createHash } from 'node:crypto';

/** Most bits of hash a deal may consume (kube's `MaxHashBits`). */
export const MAX_HASH_BITS = 60;

/** Bits of entropy a deal of `handSize` cards out of `deckSize` needs: ceil(log2(deckSize) × handSize) (kube's `RequiredEntropyBits`). */
export function requiredEntropyBits(deckSize: number, handSize: number): number {
  return Math.ceil(Math.log2(deckSize) * handSize);
}

/**
 * Deals hands of `handSize` distinct cards in [0, deckSize) from a 64-bit hash, deterministically
 * (kube's `Dealer.Deal`: the hash is read as mixed-radix digits deckSize, deckSize−1, …, each
 * digit picking among the cards not dealt yet).
 * @throws Error when the sizes are out of kube's bounds (validation refuses such configurations)
 */
export class Dealer {
  constructor(readonly deckSize: number, readonly handSize: number) {
    if (!(deckSize > 0 && handSize > 0 && Number.isInteger(deckSize) && Number.isInteger(handSize))) throw new Error(`deckSize ${deckSize} and handSize ${handSize} must be positive integers`);
    if (handSize > deckSize) throw new Error(`handSize ${handSize} is greater than deckSize ${deckSize}`);
    if (deckSize > 1 << 26) throw new Error(`deckSize ${deckSize} is impractically large`);
    if (requiredEntropyBits(deckSize, handSize) > MAX_HASH_BITS) throw new Error(`required entropy bits of deckSize ${deckSize} and handSize ${handSize} is more than ${MAX_HASH_BITS}`);
  }

  /** The hand of `hash` (an unsigned 64-bit integer), in dealing order. */
  deal(hash: bigint): number[] {
    const remainders: number[] = [];
    let h = hash;
    for (let i = 0; i < this.handSize; i++) {
      const radix = BigInt(this.deckSize - i);
      const next = h / radix;
      remainders.push(Number(h - radix * next));
      h = next;
    }
    const hand: number[] = [];
    for (let i = 0; i < this.handSize; i++) {
      let card = remainders[i]!;
      for (let j = i; j > 0; j--) if (card >= remainders[j - 1]!) card++;
      hand.push(card);
    }
    return hand;
  }
}

/**
 * The 64-bit hash of a flow: SHA-256 of `<flow schema name> NUL <flow distinguisher>`, its first
 * 8 bytes little-endian (kube's `hashFlowID` in apf_controller.go).
 */
export function hashFlow(flowSchema: string, distinguisher: string): bigint {
  const sum = createHash('sha256').update(flowSchema).update('\0').update(distinguisher).digest();
  return sum.readBigUInt64LE(0);
}
