/**
 * Deterministic assignment: the same visitor always lands in the same arm of a
 * test, with no stored state. GrowthBook's version-2 hash, so that numbers can
 * be checked against a public reference:
 *
 *   n = (fnv1a32(String(fnv1a32(seed + value))) % 10000) / 10000   in [0, 1)
 *
 * A test's seed is fixed when the test is created (its id unless given), so
 * renaming a test never reshuffles visitors. Arms own consecutive ranges of
 * [0, 1) in their stored order, each as wide as its share of the total weight.
 * Changing weights moves the boundaries, so visitors near a boundary can move;
 * visitors are kept in their first arm by the exposure they already have (the
 * decision reads a visitor's earlier exposure to a test before hashing).
 */

/** FNV-1a, 32 bits, over the UTF-16 code units of a string (as GrowthBook's SDK). */
export function fnv1a32(text: string): number {
  return fnv1a32After(0x811c9dc5, text);
}

/** FNV-1a continued over `text` from the hash `h` of what came before: fnv1a32(a + b) === fnv1a32After(fnv1a32(a), b). */
export function fnv1a32After(start: number, text: string): number {
  let h = start;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The visitor's position in [0, 1) for a seed (GrowthBook hash version 2; ("seed", "a") = 0.0505). */
export function bucket(seed: string, value: string): number {
  return (fnv1a32(String(fnv1a32(seed + value))) % 10000) / 10000;
}

/** bucket(seed, value) with the seed's hash computed once: bucketAfter(fnv1a32(seed), value) === bucket(seed, value). */
export function bucketAfter(seedHash: number, value: string): number {
  return (fnv1a32(String(fnv1a32After(seedHash, value))) % 10000) / 10000;
}

export interface WeightedArm {
  id: string;
  weight: number;
}

/** The arm whose range holds the visitor's position; arms with weight 0 never receive anyone. */
export function assignArm<A extends WeightedArm>(seed: string, visitorId: string, arms: readonly A[]): A | undefined {
  return new ArmRanges(seed, arms).assign(visitorId);
}

/**
 * The ranges of one list of arms, computed once (a decision snapshot's running test keeps them): each arm with a
 * positive weight owns the next share of [0, 1) in list order; `assign` gives the arm whose range holds the
 * visitor's bucket (assignArm makes one for a single call).
 */
export class ArmRanges<A extends WeightedArm> {
  private readonly seedHash: number;
  private readonly none: boolean;
  private readonly edges: number[] = [];
  private readonly ranged: A[] = [];
  private readonly last: A | undefined;

  constructor(seed: string, arms: readonly A[]) {
    this.seedHash = fnv1a32(seed);
    const total = arms.reduce((s, a) => s + Math.max(0, a.weight), 0);
    this.none = total <= 0;
    let edge = 0;
    for (const arm of arms) {
      const w = Math.max(0, arm.weight);
      if (w === 0) continue;
      edge += w / total;
      this.edges.push(edge);
      this.ranged.push(arm);
    }
    this.last = [...arms].reverse().find((a) => a.weight > 0);
  }

  assign(visitorId: string): A | undefined {
    if (this.none) return undefined;
    const n = bucketAfter(this.seedHash, visitorId);
    for (let i = 0; i < this.edges.length; i++) if (n < this.edges[i]!) return this.ranged[i];
    return this.last;
  }
}

/** Whether a visitor is in the site's holdout (always sees zone defaults): a separate hash space per site. */
export function inHoldout(siteId: string, visitorId: string, share: number): boolean {
  if (!(share > 0)) return false;
  return bucket(`holdout:${siteId}`, visitorId) < share;
}
