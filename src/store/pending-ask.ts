/**
 * PostgreSQL: a read that the operations of one group commit ask alike (the same two keys) while its
 * answer is still outstanding. They are asked in one statement wave, so the first ask is sent and the
 * others made before its answer share it (the same value: read-only for every caller). Once the answer
 * has come, or after `forget` (a change in this transaction that the read would see), the next ask is
 * sent anew; a sequential rerun (one operation after another) so asks per operation. One per
 * transaction's repository, never shared across transactions.
 */
export class PendingAsk<T> {
  private last: { a: string; b: string; answer: Promise<T> } | null = null;

  ask(a: string, b: string, send: () => Promise<T>): Promise<T> {
    const last = this.last;
    if (last !== null && last.a === a && last.b === b) return last.answer;
    const answer = send();
    const pending = { a, b, answer };
    this.last = pending;
    const done = (): void => {
      if (this.last === pending) this.last = null;
    };
    answer.then(done, done);
    return answer;
  }

  /** Sends the next ask anew (a change this transaction made that the read would see). */
  forget(): void {
    this.last = null;
  }
}
