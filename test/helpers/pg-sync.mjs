// Runs one SQL statement against PostgreSQL and prints the rows as JSON: the synchronous test helpers
// (query, cleanup) call it with spawnSync. argv: url, sql, params (JSON array).
import pg from 'pg';

const [raw, sql, params] = process.argv.slice(2);
// `schema` is svc's own URL parameter (src/store/pg/store.ts): the search_path of the connection.
const u = new URL(raw);
const schema = u.searchParams.get('schema');
u.searchParams.delete('schema');
const client = new pg.Client({
  connectionString: u.toString(),
  ...(schema ? { options: `-c search_path=${schema}` } : {}),
  types: { getTypeParser: (oid, format) => (oid === 20 || oid === 1700 ? Number : pg.types.getTypeParser(oid, format)) },
});
try {
  await client.connect();
  const r = await client.query(sql, JSON.parse(params ?? '[]'));
  process.stdout.write(JSON.stringify(r.rows ?? []));
} catch (err) {
  process.stderr.write(String(err.message ?? err));
  process.exitCode = 1;
} finally {
  await client.end().catch(() => undefined);
}
