// The reach matrix's workload (tests/e2e/test_reach.py) for node-postgres and tedious.
//
//   node reach.js CONFIG_JSON
//
// CONFIG_JSON: { client ("pg" or "tedious19"), port, user, password, backends
//                (database names), ca (tedious: the PEM to trust) }
// Prints one JSON line per backend: {backend, ok: true} or {backend, step, error}.
// The steps: create, insert (bound int, text, decimal, float, date and NULLs),
// select (values and types; count(*) an integer), update, delete (row counts),
// rollback, commit, error (duplicate key: 23505, or 2627 from the TDS front
// end, the connection usable after it), introspect (information_schema.columns).
'use strict';

const assert = require('node:assert/strict');
const fs = require('fs');

const cfg = JSON.parse(process.argv[2]);
const COLUMNS = ['id', 'name', 'amount', 'ratio', 'created'];
const DDL = 'CREATE TABLE reach_js (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), ' +
  'ratio DOUBLE PRECISION, created DATE)';

function checkDate(d) {
  assert.ok(d instanceof Date, `created ${JSON.stringify(d)} is not a Date`);
  // node-postgres reads a date as local midnight; tedious as UTC midnight.
  const ymd = cfg.client === 'pg' ? [d.getFullYear(), d.getMonth(), d.getDate()]
    : [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
  assert.deepEqual(ymd, [2024, 0, 2]);
}

async function nodePostgres(db, state) {
  const { Client } = require('pg');
  const c = new Client({ host: '127.0.0.1', port: cfg.port, user: cfg.user,
    password: cfg.password, database: db });
  await c.connect();
  try {
    state.step = 'create';
    await c.query('DROP TABLE IF EXISTS reach_js');
    await c.query(DDL);
    state.step = 'insert';
    const ins = 'INSERT INTO reach_js (id, name, amount, ratio, created) VALUES ($1, $2, $3, $4, $5)';
    await c.query(ins, [1, 'Zoë ✓', '12.50', 2.5, '2024-01-02']);
    await c.query(ins, [2, null, null, null, null]);
    state.step = 'select';
    const sel = 'SELECT id, name, amount, ratio, created FROM reach_js WHERE id = $1';
    let r = await c.query(sel, [1]);
    const row = r.rows[0];
    assert.strictEqual(row.id, 1, `id ${JSON.stringify(row.id)} (type OID ${r.fields[0].dataTypeID})`);
    assert.strictEqual(row.name, 'Zoë ✓');
    if (db !== 'tds') {  // VARCHAR(40) as PostgreSQL describes it: varchar, typmod 44
      assert.deepEqual([r.fields[1].dataTypeID, r.fields[1].dataTypeModifier], [1043, 44],
        `name type ${r.fields[1].dataTypeID}(${r.fields[1].dataTypeModifier})`);
    }
    assert.strictEqual(Number(row.amount), 12.5);
    assert.strictEqual(r.fields[2].dataTypeID, 1700, `amount type OID ${r.fields[2].dataTypeID}`);
    assert.strictEqual(row.ratio, 2.5);
    checkDate(row.created);
    r = await c.query(sel, [2]);
    assert.deepEqual(Object.values(r.rows[0]), [2, null, null, null, null]);
    r = await c.query('SELECT count(*) AS n FROM reach_js WHERE id > $1', [0]);
    assert.ok([20, 23].includes(r.fields[0].dataTypeID), `count(*) type OID ${r.fields[0].dataTypeID}`);
    assert.strictEqual(Number(r.rows[0].n), 2);
    state.step = 'update';
    r = await c.query('UPDATE reach_js SET name = $1 WHERE id = $2', ['Ann', 1]);
    assert.strictEqual(r.rowCount, 1);
    state.step = 'delete';
    r = await c.query('DELETE FROM reach_js WHERE id = $1', [2]);
    assert.strictEqual(r.rowCount, 1);
    state.step = 'rollback';
    await c.query('BEGIN');
    await c.query('INSERT INTO reach_js (id, name) VALUES ($1, $2)', [10, 'gone']);
    await c.query('ROLLBACK');
    state.step = 'commit';
    await c.query('BEGIN');
    await c.query('INSERT INTO reach_js (id, name) VALUES ($1, $2)', [11, 'kept']);
    await c.query('COMMIT');
    r = await c.query('SELECT id FROM reach_js ORDER BY id');
    assert.deepEqual(r.rows.map((x) => Number(x.id)), [1, 11]);
    state.step = 'error';
    let err = null;
    try {
      await c.query('INSERT INTO reach_js (id, name) VALUES ($1, $2)', [1, 'dup']);
    } catch (e) {
      err = e;
    }
    assert.ok(err, 'no error for a duplicate key');
    assert.strictEqual(err.code, '23505', `SQLSTATE ${err.code}: ${err.message}`);
    r = await c.query('SELECT 1 AS one');
    assert.strictEqual(Number(r.rows[0].one), 1);
    state.step = 'introspect';
    r = await c.query('SELECT column_name FROM information_schema.columns WHERE table_name = $1 ' +
      'ORDER BY ordinal_position', ['reach_js']);
    assert.deepEqual(r.rows.map((x) => Object.values(x)[0]), COLUMNS);
  } finally {
    await c.end();
  }
}

function tediousConnect(db) {
  const { Connection } = require(cfg.client);
  const conn = new Connection({
    server: '127.0.0.1',
    authentication: { type: 'default', options: { userName: cfg.user, password: cfg.password } },
    options: { port: cfg.port, database: db, encrypt: 'strict', serverName: 'localhost',
      cryptoCredentialsDetails: { ca: fs.readFileSync(cfg.ca) }, trustServerCertificate: false,
      connectTimeout: 15000, requestTimeout: 60000 },
  });
  return new Promise((resolve, reject) => {
    conn.on('error', () => {});
    conn.connect((err) => (err ? reject(err) : resolve(conn)));
  });
}

function tediousRun(conn, sql, params = []) {
  const { Request } = require(cfg.client);
  return new Promise((resolve, reject) => {
    const rows = [];
    const req = new Request(sql, (err, rowCount) => (err ? reject(err) : resolve({ rows, rowCount })));
    for (const [name, type, value, options] of params) req.addParameter(name, type, value, options);
    req.on('row', (cols) => rows.push(cols.map((x) => x.value)));
    if (params.length) conn.execSql(req); else conn.execSqlBatch(req);
  });
}

function tx(conn, what) {
  return new Promise((resolve, reject) => conn[what]((err) => (err ? reject(err) : resolve())));
}

async function tedious(db, state) {
  const { TYPES } = require(cfg.client);
  const c = await tediousConnect(db);
  try {
    state.step = 'create';
    await tediousRun(c, 'DROP TABLE IF EXISTS reach_js');
    await tediousRun(c, DDL);
    state.step = 'insert';
    const ins = 'INSERT INTO reach_js (id, name, amount, ratio, created) VALUES (@id, @name, @amount, @ratio, @created)';
    const dec = { precision: 10, scale: 2 };
    await tediousRun(c, ins, [['id', TYPES.Int, 1], ['name', TYPES.NVarChar, 'Zoë ✓'],
      ['amount', TYPES.Decimal, 12.5, dec], ['ratio', TYPES.Float, 2.5],
      ['created', TYPES.Date, new Date(Date.UTC(2024, 0, 2))]]);
    await tediousRun(c, ins, [['id', TYPES.Int, 2], ['name', TYPES.NVarChar, null],
      ['amount', TYPES.Decimal, null, dec], ['ratio', TYPES.Float, null], ['created', TYPES.Date, null]]);
    state.step = 'select';
    const sel = 'SELECT id, name, amount, ratio, created FROM reach_js WHERE id = @id';
    let r = await tediousRun(c, sel, [['id', TYPES.Int, 1]]);
    const [id, name, amount, ratio, created] = r.rows[0];
    assert.strictEqual(id, 1, `id ${JSON.stringify(id)}`);
    assert.strictEqual(name, 'Zoë ✓');
    assert.strictEqual(amount, 12.5, `amount ${JSON.stringify(amount)}`);
    assert.strictEqual(ratio, 2.5);
    checkDate(created);
    r = await tediousRun(c, sel, [['id', TYPES.Int, 2]]);
    assert.deepEqual(r.rows[0], [2, null, null, null, null]);
    r = await tediousRun(c, 'SELECT count(*) FROM reach_js WHERE id > @id', [['id', TYPES.Int, 0]]);
    assert.ok(['number', 'string'].includes(typeof r.rows[0][0]) && Number(r.rows[0][0]) === 2,
      `count(*) ${JSON.stringify(r.rows[0][0])}`);
    state.step = 'update';
    r = await tediousRun(c, 'UPDATE reach_js SET name = @n WHERE id = @id',
      [['n', TYPES.NVarChar, 'Ann'], ['id', TYPES.Int, 1]]);
    assert.strictEqual(r.rowCount, 1);
    state.step = 'delete';
    r = await tediousRun(c, 'DELETE FROM reach_js WHERE id = @id', [['id', TYPES.Int, 2]]);
    assert.strictEqual(r.rowCount, 1);
    state.step = 'rollback';
    await tx(c, 'beginTransaction');
    await tediousRun(c, "INSERT INTO reach_js (id, name) VALUES (10, 'gone')");
    await tx(c, 'rollbackTransaction');
    state.step = 'commit';
    await tx(c, 'beginTransaction');
    await tediousRun(c, "INSERT INTO reach_js (id, name) VALUES (11, 'kept')");
    await tx(c, 'commitTransaction');
    r = await tediousRun(c, 'SELECT id FROM reach_js ORDER BY id');
    assert.deepEqual(r.rows.map((x) => Number(x[0])), [1, 11]);
    state.step = 'error';
    let err = null;
    try {
      await tediousRun(c, "INSERT INTO reach_js (id, name) VALUES (1, 'dup')");
    } catch (e) {
      err = e;
    }
    assert.ok(err, 'no error for a duplicate key');
    assert.strictEqual(err.number, 2627, `error ${err.number}: ${err.message}`);
    r = await tediousRun(c, 'SELECT 1');
    assert.strictEqual(Number(r.rows[0][0]), 1);
    state.step = 'introspect';
    r = await tediousRun(c, 'SELECT column_name FROM information_schema.columns ' +
      'WHERE table_name = @t ORDER BY ordinal_position', [['t', TYPES.NVarChar, 'reach_js']]);
    assert.deepEqual(r.rows.map((x) => x[0]), COLUMNS);
  } finally {
    await new Promise((resolve) => { c.on('end', resolve); c.close(); });
  }
}

async function main() {
  for (const db of cfg.backends) {
    const state = { step: 'connect' };
    try {
      await (cfg.client === 'pg' ? nodePostgres(db, state) : tedious(db, state));
      console.log(JSON.stringify({ backend: db, ok: true }));
    } catch (e) {
      const error = String(e && e.message ? e.message : e).split('\n')[0].slice(0, 300);
      console.log(JSON.stringify({ backend: db, step: state.step, error }));
    }
  }
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
