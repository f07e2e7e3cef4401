// A real SQL Server client (tedious) against wirepool's TDS listener.
//
//   node tds.js SCENARIO CONFIG_JSON
//
// CONFIG_JSON: { port, ca (path of the PEM to trust), user, password, database,
//                lib ("tedious" or "tedious19"), encrypt ("strict", true or false),
//                backend ("sqlite" or "postgresql"), clients, seconds, sql (query) }
// Each scenario prints "tds SCENARIO: ok" (and figures for "bench") or throws.
'use strict';

const assert = require('assert');
const fs = require('fs');

const [scenario, configText] = process.argv.slice(2);
const cfg = JSON.parse(configText);
const { Connection, Request, TYPES } = require(cfg.lib || 'tedious');

function connect(overrides = {}) {
  const options = {
    port: cfg.port,
    database: overrides.database ?? cfg.database,
    encrypt: cfg.encrypt ?? 'strict',
    serverName: 'localhost',
    cryptoCredentialsDetails: { ca: fs.readFileSync(cfg.ca) },
    trustServerCertificate: false,
    connectTimeout: 15000,
    requestTimeout: 60000,
    rowCollectionOnRequestCompletion: false,
  };
  const conn = new Connection({
    server: '127.0.0.1',
    authentication: {
      type: 'default',
      options: { userName: overrides.user ?? cfg.user, password: overrides.password ?? cfg.password },
    },
    options,
  });
  return new Promise((resolve, reject) => {
    conn.on('error', () => {});
    conn.connect((err) => (err ? reject(err) : resolve(conn)));
  });
}

// Runs a request; resolves { rows, rowCount, outputs, infos }.
function run(conn, sql, params = [], how = 'execSql') {
  return new Promise((resolve, reject) => {
    const rows = [];
    const outputs = {};
    const req = new Request(sql, (err, rowCount) =>
      err ? reject(err) : resolve({ rows, rowCount, outputs }));
    for (const p of params) {
      if (p.output) req.addOutputParameter(p.name, p.type, p.value, p.options);
      else req.addParameter(p.name, p.type, p.value, p.options);
    }
    req.on('row', (cols) => rows.push(cols.map((c) => c.value)));
    req.on('returnValue', (name, value) => { outputs[name] = value; });
    conn[how](req);
  });
}

function batch(conn, sql) { return run(conn, sql, [], 'execSqlBatch'); }

function close(conn) {
  return new Promise((resolve) => { conn.on('end', resolve); conn.close(); });
}

async function expectError(promise, number, what) {
  try {
    await promise;
  } catch (e) {
    assert.strictEqual(e.number, number, `${what}: expected error ${number}, got ${e.number}: ${e.message}`);
    return e;
  }
  throw new Error(`${what}: expected error ${number}, got success`);
}

const pg = () => cfg.backend === 'postgresql';

const scenarios = {
  async roundtrip() {
    const c = await connect();
    // SQLite's integers are 64-bit: INTN(8), which tedious hands out as strings.
    let r = await batch(c, "SELECT 1 AS one, 'x' AS s, NULL AS n");
    assert.deepStrictEqual(r.rows, [[pg() ? 1 : '1', 'x', null]]);

    // Every parameter type tedious sends, with NULLs, through sp_executesql.
    await batch(c, 'DROP TABLE IF EXISTS t_types');
    const table = pg()
      ? `CREATE TABLE t_types (id int PRIMARY KEY, i int, b bigint, s text, d numeric(12,4),
           f double precision, bit boolean, ts timestamp, bin bytea, g uuid)`
      : `CREATE TABLE t_types (id INTEGER PRIMARY KEY, i INTEGER, b INTEGER, s TEXT,
           d DECIMAL(12,4), f REAL, bit BOOLEAN, ts TIMESTAMP, bin BLOB, g TEXT)`;
    await batch(c, table);
    const guid = '6F9619FF-8B86-D011-B42D-00C04FC964FF';
    const when = new Date(Date.UTC(2024, 1, 29, 13, 45, 30, 123));
    const ins = 'INSERT INTO t_types VALUES (@id, @i, @b, @s, @d, @f, @bit, @ts, @bin, @g)';
    const values = [
      { name: 'id', type: TYPES.Int, value: 1 },
      { name: 'i', type: TYPES.Int, value: -42 },
      { name: 'b', type: TYPES.BigInt, value: '9007199254740993' },
      { name: 's', type: TYPES.NVarChar, value: 'héllo wörld ✓ 😀' },
      { name: 'd', type: TYPES.Decimal, value: 12345.6789, options: { precision: 12, scale: 4 } },
      { name: 'f', type: TYPES.Float, value: 2.5 },
      { name: 'bit', type: TYPES.Bit, value: true },
      { name: 'ts', type: TYPES.DateTime2, value: when, options: { scale: 3 } },
      { name: 'bin', type: TYPES.VarBinary, value: Buffer.from([0, 1, 2, 255]) },
      { name: 'g', type: pg() ? TYPES.UniqueIdentifier : TYPES.NVarChar, value: guid },
    ];
    r = await run(c, ins, values);
    assert.strictEqual(r.rowCount, 1);
    const nulls = values.map((v) => (v.name === 'id' ? { ...v, value: 2 } : { ...v, value: null }));
    r = await run(c, ins, nulls);
    assert.strictEqual(r.rowCount, 1);
    r = await run(c, 'SELECT i, b, s, d, f, bit, ts, bin, g FROM t_types WHERE id = @id ORDER BY id',
                  [{ name: 'id', type: TYPES.Int, value: 1 }]);
    assert.strictEqual(r.rows.length, 1);
    const [i, b, s, d, f, bit, ts, bin, g] = r.rows[0];
    assert.strictEqual(Number(i), -42);
    assert.strictEqual(String(b), '9007199254740993');
    assert.strictEqual(s, 'héllo wörld ✓ 😀');
    assert.strictEqual(Number(d), 12345.6789);
    assert.strictEqual(f, 2.5);
    assert.strictEqual(bit, true);
    assert.strictEqual(new Date(ts).getTime(), when.getTime(), `timestamp ${ts}`);
    assert.deepStrictEqual(Buffer.from(bin), Buffer.from([0, 1, 2, 255]));
    assert.strictEqual(String(g).toUpperCase(), guid);
    r = await run(c, 'SELECT i, b, s, d, f, bit, ts, bin, g FROM t_types WHERE id = 2');
    assert.deepStrictEqual(r.rows, [[null, null, null, null, null, null, null, null, null]]);

    // 100 KB NVARCHAR(MAX) and VARBINARY(MAX) both ways (PLP).
    await batch(c, 'DROP TABLE IF EXISTS t_big');
    await batch(c, pg() ? 'CREATE TABLE t_big (id int, s text, b bytea)'
                        : 'CREATE TABLE t_big (id INTEGER, s TEXT, b BLOB)');
    const bigText = 'ü'.repeat(50 * 1024) + 'x'.repeat(50 * 1024);
    const bigBin = Buffer.alloc(100 * 1024, 7);
    await run(c, 'INSERT INTO t_big VALUES (1, @s, @b)', [
      { name: 's', type: TYPES.NVarChar, value: bigText, options: { length: Infinity } },
      { name: 'b', type: TYPES.VarBinary, value: bigBin, options: { length: Infinity } },
    ]);
    r = await run(c, 'SELECT s, b FROM t_big WHERE id = 1');
    assert.strictEqual(r.rows[0][0], bigText);
    assert.ok(Buffer.from(r.rows[0][1]).equals(bigBin), 'VARBINARY(MAX) round trip');

    // A multi-statement batch: one result per statement.
    const results = [];
    await new Promise((resolve, reject) => {
      const req = new Request('SELECT 1 AS a; SELECT 2 AS b, 3 AS c; SELECT 4 AS d',
                              (err) => (err ? reject(err) : resolve()));
      req.on('row', (cols) => results.push(cols.map((x) => x.value)));
      c.execSqlBatch(req);
    });
    assert.deepStrictEqual(results.map((row) => row.map(Number)), [[1], [2, 3], [4]]);

    // Errors carry SQL Server numbers mapped from the SQLSTATE.
    await expectError(batch(c, 'INSERT INTO t_types (id) VALUES (1)'), 2627, 'duplicate key');
    await expectError(batch(c, 'SELEC 1'), 102, 'syntax error');
    await expectError(batch(c, 'SELECT * FROM no_such_table'), 208, 'undefined table');
    await expectError(batch(c, 'SELECT no_such_column FROM t_types'), 207, 'undefined column');
    // The connection stays usable after errors.
    r = await batch(c, 'SELECT count(*) FROM t_types');
    assert.strictEqual(Number(r.rows[0][0]), 2);
    await close(c);
    console.log('tds roundtrip: ok');
  },

  async transactions() {
    const c = await connect();
    await batch(c, 'DROP TABLE IF EXISTS t_tx');
    await batch(c, pg() ? 'CREATE TABLE t_tx (id int)' : 'CREATE TABLE t_tx (id INTEGER)');
    // Transaction-manager requests (tedious's beginTransaction & co).
    await new Promise((res, rej) => c.beginTransaction((e) => (e ? rej(e) : res())));
    await batch(c, 'INSERT INTO t_tx VALUES (1)');
    await new Promise((res, rej) => c.commitTransaction((e) => (e ? rej(e) : res())));
    await new Promise((res, rej) => c.beginTransaction((e) => (e ? rej(e) : res())));
    await batch(c, 'INSERT INTO t_tx VALUES (2)');
    await new Promise((res, rej) => c.rollbackTransaction((e) => (e ? rej(e) : res())));
    // BEGIN TRAN / COMMIT / ROLLBACK as text.
    await batch(c, 'BEGIN TRAN');
    await batch(c, 'INSERT INTO t_tx VALUES (3)');
    await batch(c, 'COMMIT TRAN');
    await batch(c, 'BEGIN TRANSACTION; INSERT INTO t_tx VALUES (4); ROLLBACK TRANSACTION');
    // RESETCONNECTION (tedious's reset()): an open transaction is rolled back.
    await new Promise((res, rej) => c.beginTransaction((e) => (e ? rej(e) : res())));
    await batch(c, 'INSERT INTO t_tx VALUES (5)');
    let resetSeen = false;
    c.once('resetConnection', () => { resetSeen = true; });
    await new Promise((res, rej) => c.reset((e) => (e ? rej(e) : res())));
    assert.ok(resetSeen, 'the server acknowledged RESETCONNECTION');
    const r = await batch(c, 'SELECT id FROM t_tx ORDER BY id');
    assert.deepStrictEqual(r.rows.map((row) => row.map(Number)), [[1], [3]]);
    await expectError(batch(c, 'COMMIT'), 3902, 'COMMIT without BEGIN');
    await close(c);
    console.log('tds transactions: ok');
  },

  async prepared() {
    const c = await connect();
    await batch(c, 'DROP TABLE IF EXISTS t_prep');
    await batch(c, pg() ? 'CREATE TABLE t_prep (id int, v text)' : 'CREATE TABLE t_prep (id INTEGER, v TEXT)');
    // tedious calls the request's callback after each execute and unprepare.
    let pending = null;
    const req = new Request('INSERT INTO t_prep VALUES (@id, @v)', (err) => {
      const p = pending;
      pending = null;
      if (p) (err ? p.rej(err) : p.res());
    });
    const completion = () => new Promise((res, rej) => { pending = { res, rej }; });
    req.addParameter('id', TYPES.Int);
    req.addParameter('v', TYPES.NVarChar);
    await new Promise((res, rej) => {
      req.once('prepared', res);
      req.once('error', rej);
      c.prepare(req);
    });
    assert.ok(req.handle, 'sp_prepare returned a handle');
    for (let i = 1; i <= 5; i++) {
      const w = completion();
      c.execute(req, { id: i, v: `v${i}` });
      await w;
    }
    const w = completion();
    c.unprepare(req);
    await w;
    const r = await batch(c, 'SELECT count(*), max(v) FROM t_prep');
    assert.deepStrictEqual(r.rows.map((x) => x.map(String)), [['5', 'v5']]);
    await close(c);
    console.log('tds prepared: ok');
  },

  async cancel() {
    const c = await connect();
    const long = pg()
      ? 'SELECT pg_sleep(30)'
      : 'WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000000) SELECT count(*) FROM n';
    const started = Date.now();
    const p = batch(c, long);
    setTimeout(() => c.cancel(), 500);
    let err = null;
    try { await p; } catch (e) { err = e; }
    assert.ok(err, 'the long query was cancelled');
    assert.strictEqual(err.code, 'ECANCEL', `cancel error: ${err.code} ${err.message}`);
    assert.ok(Date.now() - started < 10000, 'cancelled promptly');
    const r = await batch(c, 'SELECT 42');
    assert.deepStrictEqual(r.rows.map((row) => row.map(Number)), [[42]]);
    await close(c);
    console.log('tds cancel: ok');
  },

  async pooling() {
    // More clients than backend connections, each in its own transactions.
    const n = cfg.clients || 12;
    const conns = await Promise.all(Array.from({ length: n }, () => connect()));
    await batch(conns[0], 'DROP TABLE IF EXISTS t_pool');
    await batch(conns[0], pg() ? 'CREATE TABLE t_pool (c int, i int)' : 'CREATE TABLE t_pool (c INTEGER, i INTEGER)');
    await Promise.all(conns.map(async (c, k) => {
      for (let i = 0; i < 20; i++) {
        await run(c, 'INSERT INTO t_pool VALUES (@c, @i)', [
          { name: 'c', type: TYPES.Int, value: k }, { name: 'i', type: TYPES.Int, value: i }]);
        const r = await run(c, 'SELECT count(*) FROM t_pool WHERE c = @c', [{ name: 'c', type: TYPES.Int, value: k }]);
        assert.strictEqual(Number(r.rows[0][0]), i + 1);
      }
    }));
    const r = await batch(conns[0], 'SELECT count(*) FROM t_pool');
    assert.strictEqual(Number(r.rows[0][0]), n * 20);
    await Promise.all(conns.map(close));
    console.log('tds pooling: ok');
  },

  async login_errors() {
    // tedious reports a refused login as a ConnectionError (ELOGIN) with the
    // server's message; the number is not kept on it.
    const refused = async (promise, text, what) => {
      try {
        await promise;
      } catch (e) {
        assert.strictEqual(e.code, 'ELOGIN', `${what}: ${e.code} ${e.message}`);
        assert.ok(e.message.includes(text), `${what}: ${e.message}`);
        return;
      }
      throw new Error(`${what}: expected a refused login`);
    };
    await refused(connect({ password: 'wrong' }), "Login failed for user 'alice'", 'wrong password');
    await refused(connect({ user: 'nobody' }), "Login failed for user 'nobody'", 'unknown user');
    await refused(connect({ database: 'nope' }), 'Cannot open database "nope"', 'unknown database');
    console.log('tds login_errors: ok');
  },

  async vanish() {
    // Leaves in the middle of a large result: the process exits at the first row.
    const c = await connect();
    const sql = pg()
      ? 'SELECT g, repeat(\'x\', 100) FROM generate_series(1, 500000) g'
      : "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 500000) SELECT x, printf('%100d', x) FROM n";
    const req = new Request(sql, () => {});
    req.on('row', () => { console.log('tds vanish: ok'); process.exit(0); });
    c.execSql(req);
  },

  async connect_only() {
    const c = await connect();
    const r = await batch(c, 'SELECT 7');
    assert.deepStrictEqual(r.rows.map((row) => row.map(Number)), [[7]]);
    await close(c);
    console.log('tds connect_only: ok');
  },

  async query() {
    // Runs cfg.sql as the configured user: prints its rows as JSON, or the
    // login's or the statement's error (number, code, message) as JSON.
    let c;
    try {
      c = await connect();
      const r = await batch(c, cfg.sql);
      console.log(`tds query: rows ${JSON.stringify(r.rows)}`);
    } catch (e) {
      // A refused login is a ConnectionError (code ELOGIN) without a number.
      console.log(`tds query: error ${JSON.stringify({ number: e.number, code: e.code, message: e.message })}`);
    }
    if (c) await close(c);
    console.log('tds query: ok');
  },

  async idle() {
    // Opens `clients` connections, reports, then waits for stdin to close.
    const conns = [];
    for (let i = 0; i < (cfg.clients || 100); i++) conns.push(await connect());
    console.log(`tds idle: ${conns.length} connected`);
    await new Promise((res) => { process.stdin.on('end', res); process.stdin.resume(); });
    await Promise.all(conns.map(close));
  },

  async bench() {
    // A primary-key SELECT loop for `seconds`: queries per second.
    const c = await connect();
    await batch(c, 'DROP TABLE IF EXISTS t_bench');
    await batch(c, 'CREATE TABLE t_bench (id INTEGER PRIMARY KEY, v TEXT)');
    await batch(c, "INSERT INTO t_bench VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    const end = Date.now() + (cfg.seconds || 5) * 1000;
    let n = 0;
    while (Date.now() < end) {
      await run(c, 'SELECT v FROM t_bench WHERE id = @id', [{ name: 'id', type: TYPES.Int, value: 1 + (n % 3) }]);
      n++;
    }
    console.log(`tds bench: ${(n / (cfg.seconds || 5)).toFixed(0)} qps`);
    await close(c);
  },
};

scenarios[scenario]().catch((e) => {
  console.error(`tds ${scenario}: FAILED:`, e && e.stack ? e.stack : e);
  process.exit(1);
});
