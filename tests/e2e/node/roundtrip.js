// node-postgres (npm `pg`) through wirepool: the extended protocol with bound
// parameters, as a Node application would use it.
//
// Covers: CREATE TABLE, then parameterised INSERT and SELECT round-trip int8,
// float8, text with non-ASCII characters, bytea (sent as a Buffer, in binary),
// bool, NULL and timestamps; a unique violation answers 23505 with SQLite's
// message, a syntax error 42601, and the client stays usable after each; a
// pool of node clients in parallel; named prepared statements reused.
// Usage: node roundtrip.js <connection string>
'use strict';
const assert = require('node:assert/strict');
const { Client, Pool } = require('pg');

async function main() {
  const url = process.argv[2];
  const c = new Client({ connectionString: url });
  await c.connect();

  await c.query(`CREATE TABLE rt (id INTEGER PRIMARY KEY, i8 BIGINT, f8 DOUBLE PRECISION,
                 t TEXT, b BYTEA, ok BOOLEAN, n TEXT, ts TIMESTAMPTZ)`);
  const when = new Date(Date.UTC(2024, 1, 29, 12, 34, 56, 789));
  const blob = Buffer.from([0, 1, 2, 250, 255, 10, 13]);
  const ins = await c.query(
    'INSERT INTO rt (id, i8, f8, t, b, ok, n, ts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [1, '9007199254740993', 1.5e-7, 'Grüße 世界 🚀', blob, true, null, when]);
  assert.equal(ins.command, 'INSERT');
  assert.equal(ins.rowCount, 1);
  await c.query(
    'INSERT INTO rt (id, i8, f8, t, b, ok, n, ts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [2, -5, -0.25, '', Buffer.alloc(0), false, null, new Date(0)]);

  const r = await c.query('SELECT i8, f8, t, b, ok, n, ts FROM rt WHERE id = $1', [1]);
  assert.equal(r.rows.length, 1);
  const row = r.rows[0];
  assert.equal(row.i8, '9007199254740993');  // int8 arrives as a string in node-postgres
  assert.equal(row.f8, 1.5e-7);
  assert.equal(row.t, 'Grüße 世界 🚀');
  assert.ok(Buffer.isBuffer(row.b));
  assert.deepEqual(row.b, blob);
  assert.equal(row.ok, true);
  assert.equal(row.n, null);
  assert.ok(row.ts instanceof Date);
  assert.equal(row.ts.getTime(), when.getTime());
  const types = Object.fromEntries(r.fields.map((f) => [f.name, f.dataTypeID]));
  assert.deepEqual(types, { i8: 20, f8: 701, t: 25, b: 17, ok: 16, n: 25, ts: 1184 });

  const r2 = await c.query('SELECT i8, ok, ts FROM rt WHERE id = $1', [2]);
  assert.equal(r2.rows[0].i8, '-5');
  assert.equal(r2.rows[0].ok, false);
  assert.equal(r2.rows[0].ts.getTime(), 0);

  // $2 before $1: SQLite numbers $N by first appearance; wirepool binds by name.
  const swapped = await c.query('SELECT $2 AS a, $1 AS b', ['one', 'two']);
  assert.deepEqual(swapped.rows[0], { a: 'two', b: 'one' });

  // Errors with SQLSTATEs; the connection goes on.
  await assert.rejects(c.query('INSERT INTO rt (id) VALUES ($1)', [1]), (e) => {
    assert.equal(e.code, '23505');
    assert.match(e.message, /UNIQUE constraint failed: rt\.id/);
    return true;
  });
  await assert.rejects(c.query('SELEC $1', [1]), (e) => e.code === '42601');
  const again = await c.query('SELECT count(*) AS n FROM rt');
  assert.equal(again.rows[0].n, '2');

  // A named prepared statement reused.
  for (let i = 0; i < 5; i++) {
    const p = await c.query({ name: 'by-id', text: 'SELECT t FROM rt WHERE id = $1', values: [2] });
    assert.equal(p.rows[0].t, '');
  }

  // Transactions.
  await c.query('BEGIN');
  await c.query('INSERT INTO rt (id) VALUES ($1)', [3]);
  await c.query('ROLLBACK');
  const rb = await c.query('SELECT count(*) AS n FROM rt WHERE id = 3');
  assert.equal(rb.rows[0].n, '0');
  await c.end();

  // Many clients at once over the small pool.
  const pool = new Pool({ connectionString: url, max: 12 });
  const jobs = [];
  for (let i = 0; i < 60; i++) {
    jobs.push(pool.query('SELECT $1 + 1 AS v', [i]).then((res) => {
      assert.equal(Number(res.rows[0].v), i + 1);
    }));
  }
  await Promise.all(jobs);
  await pool.end();
  console.log('node-postgres: ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
