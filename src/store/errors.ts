/**
 * A write operation lost a race with a concurrent transaction (PostgreSQL only:
 * SQLite runs write operations one at a time). It carries SQLSTATE 40001, so the
 * PostgreSQL write runner runs the operation again from the start, where it sees
 * the other transaction's rows.
 */
export class WriteConflict extends Error {
  readonly code = '40001';

  constructor(message: string) {
    super(message);
    this.name = 'WriteConflict';
  }
}
