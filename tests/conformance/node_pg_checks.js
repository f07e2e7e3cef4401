// node-postgres checks for test_node_pg.py: `node node_pg_checks.js CHECK` with
// the target as JSON on stdin ({host, port, user, password, database, table});
// prints what the client observed as one JSON value on stdout.
'use strict';

const pg = require('pg');

process.env.TZ = 'UTC';

function config(t, extra) {
  return Object.assign({
    host: t.host, port: t.port, user: t.user, password: t.password, database: t.database,
    ssl: false, connectionTimeoutMillis: 10000, query_timeout: 20000,
  }, extra || {});
}

async function connect(t, extra) {
  const c = new pg.Client(config(t, extra));
  await c.connect();
  return c;
}

function err(e) {
  return { error: e.code || e.message, severity: e.severity };
}

async function attempt(p) {
  try {
    return await p;
  } catch (e) {
    return err(e);
  }
}

const checks = {
  // What the session reports of itself and the ParameterStatus values pg keeps.
  async connection_parameters(t) {
    const c = await connect(t, { application_name: 'node-check' });
    const r = await c.query(
      "SELECT current_user, current_database(), current_setting('client_encoding') AS enc, " +
      "current_setting('DateStyle') AS ds, current_setting('application_name') AS app, " +
      "current_setting('integer_datetimes') AS idt");
    const out = { row: r.rows[0], hasPid: Number.isInteger(c.processID) && c.processID !== 0 };
    await c.end();
    return out;
  },

  // Queries sent without waiting for the answers: answered in order.
  async pipelined_queries(t) {
    const c = await connect(t);
    const ps = [];
    for (let i = 0; i < 100; i++) {
      if (i % 10 === 5) ps.push(attempt(c.query('SELECT $1::int / 0', [i])));
      else if (i % 2) ps.push(c.query('SELECT $1::int AS n', [i]).then((r) => r.rows[0].n));
      else ps.push(c.query(`SELECT ${i} AS n`).then((r) => r.rows[0].n));
    }
    const out = await Promise.all(ps);
    await c.end();
    return out;
  },

  // Named (prepared) statements: a runtime error, a parse error, reuse after both.
  async prepared_statement_errors(t) {
    const c = await connect(t);
    const out = [];
    const div = { name: 'div', text: 'SELECT 10 / $1::int AS q' };
    out.push(await attempt(c.query(Object.assign({ values: [2] }, div)).then((r) => r.rows)));
    out.push(await attempt(c.query(Object.assign({ values: [0] }, div)).then((r) => r.rows)));
    out.push(await attempt(c.query(Object.assign({ values: [5] }, div)).then((r) => r.rows)));
    const bad = { name: 'bad', text: 'SELEC $1::int' };
    out.push(await attempt(c.query(Object.assign({ values: [1] }, bad)).then((r) => r.rows)));
    out.push(await attempt(c.query(Object.assign({ values: [1] }, bad)).then((r) => r.rows)));
    const ins = { name: 'ins', text: `INSERT INTO ${t.table} VALUES ($1, $2)` };
    out.push(await attempt(c.query(Object.assign({ values: [1, 'a'] }, ins)).then((r) => r.rowCount)));
    out.push(await attempt(c.query(Object.assign({ values: [1, 'b'] }, ins)).then((r) => r.rowCount)));
    out.push(await attempt(c.query(Object.assign({ values: [2, 'c'] }, ins)).then((r) => r.rowCount)));
    // In a transaction: an error aborts it, the named statement works after ROLLBACK.
    await c.query('BEGIN');
    out.push(await attempt(c.query(Object.assign({ values: [3, 'd'] }, ins)).then((r) => r.rowCount)));
    out.push(await attempt(c.query(Object.assign({ values: [0] }, div)).then((r) => r.rows)));
    out.push(await attempt(c.query(Object.assign({ values: [4, 'e'] }, ins)).then((r) => r.rowCount)));
    await c.query('ROLLBACK');
    out.push(await attempt(c.query(Object.assign({ values: [4] }, div)).then((r) => r.rows)));
    await c.end();
    return out;
  },

  // Connecting and ending at once, awaited and not: no error on either side.
  async quick_connect_then_end(t) {
    const out = [];
    for (let i = 0; i < 10; i++) {
      const c = await connect(t);
      await c.end();
      out.push('ok');
    }
    const errors = [];
    const ps = [];
    for (let i = 0; i < 10; i++) {
      // end() while the startup is still under way: the socket closes early.
      const c = new pg.Client(config(t));
      c.on('error', (e) => errors.push(err(e)));
      const connected = c.connect().then(() => 'connected', (e) => err(e).error);
      c.connection.stream.once('connect', () => c.end());
      ps.push(connected.then((v) => (v === 'connected' ? c.end().then(() => 'ended') : 'ended early')));
    }
    out.push(await Promise.all(ps));
    out.push(errors);
    const c = await connect(t);
    out.push((await c.query('SELECT 1 AS one')).rows);
    await c.end();
    return out;
  },

  // Parameters of JavaScript types and results parsed by pg-types.
  async type_coercion(t) {
    const c = await connect(t);
    const r = await c.query(
      'SELECT $1::int2 AS a, $2::int8 AS b, $3::numeric AS c, $4::float8 AS d, $5::bool AS e, ' +
      '$6::text AS f, $7::bytea AS g, $8::timestamptz AS h, $9::date AS i, $10::json AS j, ' +
      '$11::jsonb AS k, $12::int[] AS l, $13::text[] AS m, $14::text AS n, $15::uuid AS o, ' +
      "$16::interval AS p, '1.5'::float4 AS q, 9007199254740993::int8 AS r, " +
      "'{1,2}'::int8[] AS s, '2020-01-02 03:04:05'::timestamp AS u, 'NaN'::numeric AS v, " +
      "'\\x00ff'::bytea AS w, '(1,2)'::point AS x",
      [12, '9223372036854775807', '-1.50', 2.5, true, 'h\u00e9', Buffer.from([0, 1, 255]),
        new Date(Date.UTC(2021, 5, 7, 8, 9, 10, 11)), '2024-02-29', { a: [1] }, JSON.stringify({ b: null }),
        [1, 2, null], ['x', 'y z', null], null, '12345678-1234-5678-1234-567812345678', '3 days 04:05:06']);
    const row = {};
    for (const [k, v] of Object.entries(r.rows[0])) {
      row[k] = Buffer.isBuffer(v) ? ['buffer', v.toString('hex')]
        : v instanceof Date ? ['date', v.toISOString()]
          : v !== null && typeof v === 'object' && !Array.isArray(v) ? ['object', JSON.stringify(v)] : v;
    }
    const types = r.fields.map((f) => [f.name, f.dataTypeID, f.format]);
    await c.end();
    return { row, types };
  },

  // NoticeResponse from RAISE, with its fields, between rows and results.
  async notices(t) {
    const c = await connect(t);
    const seen = [];
    c.on('notice', (n) => seen.push([n.severity, n.code, n.message, n.detail, n.hint]));
    await c.query("DO $$BEGIN RAISE NOTICE 'one' USING DETAIL = 'd1', HINT = 'h1'; " +
      "RAISE WARNING 'two'; END$$");
    await c.query('SELECT $1::int', [1]);
    await c.query(`DROP TABLE IF EXISTS no_such_table_node_check`);
    await c.query("SET client_min_messages = 'warning'");
    await c.query("DO $$BEGIN RAISE NOTICE 'hidden'; RAISE WARNING 'shown'; END$$");
    await c.query('RESET client_min_messages');
    await c.end();
    return seen;
  },

  // application_name from the config, the default and after SET / RESET.
  async application_name(t) {
    const out = [];
    let c = await connect(t, { application_name: 'checker' });
    out.push((await c.query('SHOW application_name')).rows[0]);
    await c.query("SET application_name = 'changed'");
    out.push((await c.query('SHOW application_name')).rows[0]);
    await c.query('RESET application_name');
    out.push((await c.query('SHOW application_name')).rows[0]);
    await c.end();
    c = await connect(t);
    out.push((await c.query('SHOW application_name')).rows[0]);
    await c.end();
    return out;
  },

  // Large simple-protocol traffic: a 1 MiB query text, 20,000 rows, several statements.
  async big_simple_queries(t) {
    const c = await connect(t);
    const out = [];
    const lit = 'x'.repeat(1 << 20);
    let r = await c.query(`SELECT length('${lit}') AS n`);
    out.push(r.rows);
    r = await c.query('SELECT g, repeat(g::text, 20) AS s FROM generate_series(1, 20000) g');
    out.push([r.rowCount, r.rows[19999]]);
    r = await c.query(`INSERT INTO ${t.table} VALUES (1, 'a'); SELECT 1 AS a; ` +
      `INSERT INTO ${t.table} SELECT g, 'b' FROM generate_series(2, 50) g; SELECT count(*) FROM ${t.table}`);
    out.push(r.map((x) => [x.command, x.rowCount, x.rows]));
    out.push(await attempt(c.query(`INSERT INTO ${t.table} VALUES (100, 'c'); SELECT 1/0; ` +
      `INSERT INTO ${t.table} VALUES (101, 'd')`)));
    await c.end();
    return out;
  },

  // BEGIN / COMMIT / ROLLBACK / savepoints, and an error inside a transaction.
  async transactions(t) {
    const c = await connect(t);
    const out = [];
    const ins = (k) => attempt(c.query(`INSERT INTO ${t.table} VALUES ($1, 'v')`, [k]).then((r) => r.rowCount));
    await c.query('BEGIN');
    out.push(await ins(1));
    await c.query('ROLLBACK');
    await c.query('BEGIN');
    out.push(await ins(2));
    await c.query('SAVEPOINT s');
    out.push(await ins(2));
    await c.query('ROLLBACK TO SAVEPOINT s');
    out.push(await ins(3));
    await c.query('COMMIT');
    await c.query('BEGIN');
    out.push(await ins(4));
    out.push(await ins(4));
    out.push(await ins(5));
    out.push(await attempt(c.query('COMMIT').then((r) => r.command)));
    out.push((await c.query(`SELECT array_agg(id ORDER BY id) AS ids FROM ${t.table}`)).rows);
    await c.end();
    return out;
  },

  // 12 clients, each with its own text under the same statement name, at once.
  async colliding_statement_names(t) {
    const clients = await Promise.all(Array.from({ length: 12 }, () => connect(t)));
    const runs = clients.map(async (c, i) => {
      const got = [];
      for (let k = 0; k < 5; k++) {
        const q = { name: 'stmt', text: `SELECT $1::int + ${i} AS n, '${'c'.repeat(i)}' AS s`, values: [k] };
        const r = await attempt(c.query(q).then((x) => [x.rows[0].n, x.rows[0].s.length]));
        got.push(r);
        if (k === 2) {
          await c.query('BEGIN');
          got.push(await attempt(c.query(q).then((x) => x.rows[0].n)));
          await c.query(i % 2 ? 'COMMIT' : 'ROLLBACK');
        }
      }
      return got;
    });
    const out = await Promise.all(runs);
    await Promise.all(clients.map((c) => c.end()));
    return out;
  },

  // pg.Pool of 10 under 60 concurrent queries, some in transactions.
  async pool_size(t) {
    const pool = new pg.Pool(config(t, { max: 10 }));
    const ps = [];
    for (let i = 0; i < 60; i++) {
      if (i % 3 === 0) {
        ps.push((async () => {
          const c = await pool.connect();
          try {
            await c.query('BEGIN');
            await c.query(`INSERT INTO ${t.table} VALUES ($1, 'p')`, [i]);
            const r = await c.query('SELECT pg_sleep(0.01), $1::int AS n', [i]);
            await c.query('COMMIT');
            return r.rows[0].n;
          } finally {
            c.release();
          }
        })());
      } else {
        ps.push(pool.query('SELECT $1::int * 2 AS n', [i]).then((r) => r.rows[0].n));
      }
    }
    const out = await Promise.all(ps);
    await pool.end();
    return out;
  },
};

async function main() {
  const name = process.argv[2];
  const target = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const out = await checks[name](target);
  process.stdout.write(JSON.stringify(out));
}

main().then(() => process.exit(0), (e) => {
  process.stdout.write(JSON.stringify({ failed: e.code || String(e.message).slice(0, 300) }));
  process.exit(0);
});
