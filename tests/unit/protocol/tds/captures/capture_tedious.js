// Captures what a real tedious client sends, for the TDS codec's unit tests.
//
// A plaintext TDS "server" on a loopback port: it answers PRELOGIN with
// ENCRYPTION = ENCRYPT_NOT_SUP (so tedious with `encrypt: false` sends LOGIN7
// in the clear), LOGIN7 with LOGINACK + DONE, and every later request with
// DONE. Each message tedious sends is written as hex (one line per packet, the
// 8-byte header included) to OUTDIR/<n>_<what>.hex. Then the client runs:
//   - a plain SQL batch,
//   - sp_executesql with int, nvarchar, decimal, datetime2, varbinary, bit,
//     uniqueidentifier and float parameters, then the same with NULLs,
//   - sp_executesql with one 5,100-character NVARCHAR(MAX) parameter (PLP),
//   - a transaction manager BEGIN (named tx1) and COMMIT.
//
// Run (from a scratch dir with `npm install tedious@19`):
//   NODE_PATH=node_modules node capture_tedious.js OUTDIR
'use strict';
const net = require('net');
const fs = require('fs');
const path = require('path');
const { Connection, Request, TYPES } = require('tedious');

const outdir = process.argv[2];
fs.mkdirSync(outdir, { recursive: true });

function packet(type, payload) {
  const h = Buffer.alloc(8);
  h[0] = type; h[1] = 0x01; h.writeUInt16BE(payload.length + 8, 2); h[6] = 1;
  return Buffer.concat([h, payload]);
}
function bvarchar(s) {
  const u = Buffer.from(s, 'utf16le');
  return Buffer.concat([Buffer.from([s.length]), u]);
}
function done(status, count) {
  const b = Buffer.alloc(13);
  b[0] = 0xFD; b.writeUInt16LE(status, 1); b.writeUInt16LE(0, 3);
  b.writeBigUInt64LE(BigInt(count), 5);
  return b;
}
function prelogin() {
  // VERSION 15.0.2000.0, ENCRYPTION NOT_SUP, INSTOPT 0, THREADID empty, MARS 0
  const opts = [[0, Buffer.from([15, 0, 0x07, 0xd0, 0, 0])], [1, Buffer.from([2])],
                [2, Buffer.from([0])], [3, Buffer.alloc(0)], [4, Buffer.from([0])]];
  let off = opts.length * 5 + 1;
  const table = [], data = [];
  for (const [t, d] of opts) {
    const e = Buffer.alloc(5); e[0] = t; e.writeUInt16BE(off, 1); e.writeUInt16BE(d.length, 3);
    table.push(e); data.push(d); off += d.length;
  }
  return Buffer.concat([...table, Buffer.from([0xff]), ...data]);
}
function loginack() {
  const body = Buffer.concat([Buffer.from([1]), Buffer.from([0x74, 0, 0, 4]), bvarchar('wirepool'),
                              Buffer.from([0, 1, 0, 0])]);
  const h = Buffer.alloc(3); h[0] = 0xAD; h.writeUInt16LE(body.length, 1);
  return Buffer.concat([h, body]);
}

let n = 0;
const server = net.createServer((sock) => {
  let buf = Buffer.alloc(0);
  let packets = [];
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 8) {
      const len = buf.readUInt16BE(2);
      if (buf.length < len) break;
      const p = buf.subarray(0, len);
      buf = buf.subarray(len);
      packets.push(p);
      if ((p[1] & 1) === 0) continue;
      const type = packets[0][0];
      const names = { 1: 'sqlbatch', 3: 'rpc', 14: 'txmgr', 16: 'login7', 18: 'prelogin', 6: 'attention' };
      const file = path.join(outdir, `${String(n++).padStart(2, '0')}_${names[type] || type}.hex`);
      fs.writeFileSync(file, packets.map((x) => x.toString('hex')).join('\n') + '\n');
      const message = packets;
      packets = [];
      if (type === 18) sock.write(packet(4, prelogin()));
      else if (type === 16) sock.write(packet(4, Buffer.concat([loginack(), done(0, 0)])));
      else if (type === 14) {
        // Transaction manager: ENVCHANGE begin (8) or commit (9) with descriptor 1.
        const all = Buffer.concat(message.map((x) => x.subarray(8)));
        const req = all.readUInt16LE(all.readUInt32LE(0));
        const desc = Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]);
        const ev = req === 5 ? Buffer.concat([Buffer.from([8, 8]), desc, Buffer.from([0])])
                             : Buffer.concat([Buffer.from([req === 7 ? 9 : 10, 0, 8]), desc]);
        const h = Buffer.alloc(3); h[0] = 0xE3; h.writeUInt16LE(ev.length, 1);
        sock.write(packet(4, Buffer.concat([h, ev, done(0, 0)])));
      } else sock.write(packet(4, done(0x10, 1)));
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  const conn = new Connection({
    server: '127.0.0.1',
    authentication: { type: 'default', options: { userName: 'demo', password: 'Pässwörd!1' } },
    options: { port, encrypt: false, database: 'demo', appName: 'capture', connectTimeout: 5000,
               requestTimeout: 5000 },
  });
  const run = (req) => new Promise((res, rej) => {
    req.callback = undefined;
    req.on('requestCompleted', res);
    req.on('error', rej);
    conn.execSql(req);
  });
  conn.on('connect', async (err) => {
    if (err) { console.error('connect failed', err); process.exit(1); }
    try {
      await new Promise((res, rej) => {
        const r = new Request("SELECT N'héllo 😀' AS greeting", (e) => (e ? rej(e) : res()));
        conn.execSql(r);
      });
      const params = (nulls) => new Promise((res, rej) => {
        const r = new Request('SELECT @i, @s, @d, @t, @b, @bit, @g, @f', (e) => (e ? rej(e) : res()));
        r.addParameter('i', TYPES.Int, nulls ? null : -123456);
        r.addParameter('s', TYPES.NVarChar, nulls ? null : 'straße 😀');
        r.addParameter('d', TYPES.Decimal, nulls ? null : -12345.678, { precision: 12, scale: 3 });
        r.addParameter('t', TYPES.DateTime2, nulls ? null : new Date(Date.UTC(2024, 1, 29, 13, 14, 15, 678)),
                       { scale: 7 });
        r.addParameter('b', TYPES.VarBinary, nulls ? null : Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00]));
        r.addParameter('bit', TYPES.Bit, nulls ? null : true);
        r.addParameter('g', TYPES.UniqueIdentifier, nulls ? null : '6F9619FF-8B86-D011-B42D-00C04FC964FF');
        r.addParameter('f', TYPES.Float, nulls ? null : 3.5e-7);
        conn.execSql(r);
      });
      await params(false);
      await params(true);
      // NVARCHAR(MAX) (tedious sends it as PLP above 4000 characters): the
      // message spans several 4096-byte packets.
      await new Promise((res, rej) => {
        const r = new Request('SELECT @big', (e) => (e ? rej(e) : res()));
        r.addParameter('big', TYPES.NVarChar, 'ab€'.repeat(1700));
        conn.execSql(r);
      });
      await new Promise((res, rej) => conn.beginTransaction((e) => (e ? rej(e) : res()), 'tx1'));
      await new Promise((res, rej) => conn.commitTransaction((e) => (e ? rej(e) : res())));
      conn.close();
      server.close();
    } catch (e) {
      console.error('request failed', e);
      process.exit(1);
    }
  });
  conn.connect();
});
setTimeout(() => { console.error('timeout'); process.exit(2); }, 20000).unref();
