// A real tedious client against token_server (protocol/tds/ only): checks that
// tedious accepts what the codec's encoders write (PRELOGIN answer, LOGINACK,
// ENVCHANGE, INFO, FEATUREEXTACK, COLMETADATA, ROW/NBCROW, PLP, DONE*, ERROR,
// RETURNSTATUS, RETURNVALUE, the attention acknowledgement, transaction
// ENVCHANGEs) and that the codec decodes what tedious sends (every parameter
// is echoed back with its own TYPE_INFO and compared; ATTENTION assembles).
//
// Usage: NODE_PATH=<dir with tedious 19> node tedious_tokens.js <token_server binary>
'use strict';
const { spawn } = require('child_process');
const assert = require('assert');
const { Connection, Request, TYPES } = require('tedious19');  // tedious 19 runs on Debian's Node 20

const server = spawn(process.argv[2], [], { stdio: ['ignore', 'pipe', 'inherit'] });
const kill = setTimeout(() => { console.error('timeout'); server.kill(); process.exit(2); }, 30000);
let serverExit = null;
server.on('exit', (code) => { serverExit = code; });

function query(conn, sql, params) {
  return new Promise((resolve, reject) => {
    const rows = [];
    let meta = null;
    const r = new Request(sql, (err) => (err ? reject(err) : resolve({ rows, meta })));
    r.on('columnMetadata', (m) => { meta = m; });
    r.on('row', (cols) => rows.push(cols.map((c) => c.value)));
    for (const [name, type, value, opts] of params || []) r.addParameter(name, type, value, opts);
    conn.execSql(r);
  });
}

const t = new Date(Date.UTC(2024, 1, 29, 13, 14, 15, 678));
const echo = [
  ['i', TYPES.Int, -123456],
  ['ti', TYPES.TinyInt, 255],
  ['si', TYPES.SmallInt, -32768],
  ['bi', TYPES.BigInt, '-9007199254740991'],
  ['bit', TYPES.Bit, true],
  ['f', TYPES.Float, 3.5e-7],
  ['r', TYPES.Real, 0.5],
  ['d', TYPES.Decimal, -12345.678, { precision: 12, scale: 3 }],
  ['n', TYPES.Numeric, 99.5, { precision: 5, scale: 1 }],
  ['m', TYPES.Money, -922337203685.4775],
  ['sm', TYPES.SmallMoney, 12.5],
  ['s', TYPES.NVarChar, 'straße 😀'],
  ['smax', TYPES.NVarChar, 'ab€'.repeat(1700)],
  ['vc', TYPES.VarChar, 'café €'],
  ['nc', TYPES.NChar, 'nchar'],
  ['c', TYPES.Char, 'char'],
  ['b', TYPES.VarBinary, Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00])],
  ['bmax', TYPES.VarBinary, Buffer.alloc(9000, 7)],
  ['bin', TYPES.Binary, Buffer.from([1, 2, 3])],
  ['g', TYPES.UniqueIdentifier, '6F9619FF-8B86-D011-B42D-00C04FC964FF'],
  ['date', TYPES.Date, new Date(Date.UTC(2024, 1, 29))],
  ['time', TYPES.Time, new Date(Date.UTC(1970, 0, 1, 13, 14, 15, 678)), { scale: 3 }],
  ['dt2', TYPES.DateTime2, t, { scale: 7 }],
  ['dto', TYPES.DateTimeOffset, t, { scale: 7 }],
  ['dt', TYPES.DateTime, new Date(Date.UTC(2024, 1, 29, 13, 14, 15, 677))],
  ['sdt', TYPES.SmallDateTime, new Date(Date.UTC(2024, 1, 29, 13, 14))],
  ['nul', TYPES.NVarChar, null],
  ['nuli', TYPES.Int, null],
];

function same(got, want, name) {
  if (want instanceof Date) {
    assert.ok(got instanceof Date, `${name}: a Date, got ${got}`);
    assert.strictEqual(got.getTime(), want.getTime(), `${name}: ${got.toISOString()}`);
  } else if (Buffer.isBuffer(want)) {
    assert.strictEqual(Buffer.from(got).toString('hex'), want.toString('hex'), name);
  } else if (typeof want === 'number' && !Number.isInteger(want)) {
    assert.ok(Math.abs(got - want) <= Math.abs(want) * 1e-7, `${name}: ${got} vs ${want}`);
  } else if (name === 'nc' || name === 'c') {
    assert.strictEqual(got.trimEnd(), want, name);
  } else {
    assert.strictEqual(got, want, name);
  }
}

let buf = '';
server.stdout.on('data', (d) => {
  buf += d;
  if (!buf.includes('\n')) return;
  const port = parseInt(buf, 10);
  const conn = new Connection({
    server: '127.0.0.1',
    authentication: { type: 'default', options: { userName: 'demo', password: 'Pässwörd!1' } },
    options: { port, encrypt: false, database: 'demo', connectTimeout: 10000, requestTimeout: 10000 },
  });
  let infos = 0;
  conn.on('infoMessage', () => { infos += 1; });
  conn.on('connect', async (err) => {
    try {
      assert.ifError(err);
      assert.strictEqual(infos, 1, 'the INFO after login');
      assert.strictEqual(conn.databaseCollation.codepage, 'CP1252');

      const e = await query(conn, 'echo', echo);
      assert.strictEqual(e.rows.length, 1);
      echo.forEach(([name, , want], i) => same(e.rows[0][i], want, name));
      console.log(`echo: ${echo.length} parameters decoded, re-encoded and read back`);

      const m = await query(conn, 'mapped');
      const types = m.meta.map((c) => c.type.name);
      assert.deepStrictEqual(types, ['BitN', 'IntN', 'IntN', 'DecimalN', 'FloatN', 'NVarChar',
        'NVarChar', 'VarBinary', 'DateTimeOffset', 'DateTime2', 'Date', 'DecimalN',
        'UniqueIdentifier', 'NVarChar', 'DecimalN']);
      const [v, nulls] = m.rows;
      assert.strictEqual(v[0], true);
      assert.strictEqual(v[1], '-9007199254740991');
      assert.strictEqual(v[2], -2147483648);
      assert.strictEqual(v[3], 18446744073709552000);  // tedious reads DECIMAL as a number
      assert.strictEqual(v[4], 3.5e-7);
      assert.strictEqual(v[5], 'héllo 😀');
      assert.strictEqual(v[6], 'x'.repeat(9000));
      assert.strictEqual(v[7].toString('hex'), 'deadbeef00');
      assert.strictEqual(v[8].toISOString(), '2024-02-29T13:14:15.678Z');
      assert.strictEqual(v[9].toISOString(), '2024-02-29T13:14:15.678Z');
      assert.strictEqual(v[10].toISOString(), '2024-02-29T00:00:00.000Z');
      assert.strictEqual(v[11], -12345.678);
      assert.strictEqual(v[12], '6F9619FF-8B86-D011-B42D-00C04FC964FF');
      assert.strictEqual(v[13], '42');
      assert.strictEqual(v[14], 1e-18);
      assert.ok(nulls.every((x) => x === null), 'the NBCROW of NULLs');
      console.log('mapped: 15 column types and a row of NULLs read back');

      const outputs = {};
      await new Promise((resolve, reject) => {
        const r = new Request('output', (err) => (err ? reject(err) : resolve()));
        r.addOutputParameter('o', TYPES.Int, 41);
        r.addOutputParameter('s', TYPES.NVarChar, 'sortie 😀');
        r.addOutputParameter('d', TYPES.Decimal, 1.5, { precision: 5, scale: 2 });
        r.addOutputParameter('n', TYPES.NVarChar, null);
        r.on('returnValue', (name, value) => { outputs[name] = value; });
        conn.callProcedure(r);
      });
      assert.deepStrictEqual(outputs, { o: 41, s: 'sortie 😀', d: 1.5, n: null });
      console.log('output: 4 RETURNVALUE tokens read back');

      // Cancel: tedious sends ATTENTION, the codec assembles it, DONE_ATTN ends the request.
      await assert.rejects(new Promise((resolve, reject) => {
        const r = new Request('slow', (err) => (err ? reject(err) : resolve()));
        conn.execSql(r);
        setTimeout(() => conn.cancel(), 100);
      }), (err) => err.code === 'ECANCEL');
      console.log('cancel: ATTENTION assembled and DONE_ATTN read back');

      await assert.rejects(query(conn, 'error'), (err) => err.number === 2627);
      await new Promise((res, rej) => conn.beginTransaction((er) => (er ? rej(er) : res()), 'tx1'));
      await new Promise((res, rej) => conn.commitTransaction((er) => (er ? rej(er) : res())));
      console.log('error 2627 and a transaction begin/commit read back');
      conn.close();
      conn.on('end', () => {
        const check = () => {
          if (serverExit === null) return setTimeout(check, 50);
          clearTimeout(kill);
          if (serverExit !== 0) { console.error(`token_server exited ${serverExit}`); process.exit(1); }
          console.log('ok');
          return undefined;
        };
        check();
      });
    } catch (ex) {
      console.error(ex);
      server.kill();
      process.exit(1);
    }
  });
  conn.connect();
});
