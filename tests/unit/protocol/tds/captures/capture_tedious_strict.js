// Captures what tedious 19 sends in TDS 8.0 strict mode (`encrypt: 'strict'`):
// TLS 1.3 first (ALPN tds/8.0), then PRELOGIN, LOGIN7 and requests inside TLS.
// A TLS server with a self-signed certificate for "localhost" decrypts and
// dumps each message as hex (one line per packet, header included) to
// OUTDIR/strict_<n>_<what>.hex, answering PRELOGIN (ENCRYPT_REQ), LOGIN7
// (LOGINACK + DONE) and every request (DONE). (strict_tls_first_bytes.hex, the
// first 16 bytes on the wire — a TLS 1.3 ClientHello record — was recorded once
// by a plain TCP front in an earlier version of this script.)
//
// Run (from a scratch dir with `npm install tedious@19`):
//   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
//     -subj /CN=localhost -addext subjectAltName=DNS:localhost -keyout key.pem -out cert.pem
//   NODE_PATH=node_modules node capture_tedious_strict.js OUTDIR cert.pem key.pem
'use strict';
const tls = require('tls');
const fs = require('fs');
const path = require('path');
const { Connection, Request } = require('tedious');

const [outdir, certFile, keyFile] = process.argv.slice(2);
fs.mkdirSync(outdir, { recursive: true });
const cert = fs.readFileSync(certFile);
const key = fs.readFileSync(keyFile);

function packet(payload) {
  const h = Buffer.alloc(8);
  h[0] = 4; h[1] = 0x01; h.writeUInt16BE(payload.length + 8, 2); h[6] = 1;
  return Buffer.concat([h, payload]);
}
function bvarchar(s) { return Buffer.concat([Buffer.from([s.length]), Buffer.from(s, 'utf16le')]); }
function done() { const b = Buffer.alloc(13); b[0] = 0xFD; return b; }
function prelogin() {
  const opts = [[0, Buffer.from([16, 0, 0, 1, 0, 0])], [1, Buffer.from([3])], [2, Buffer.from([0])],
                [3, Buffer.alloc(0)], [4, Buffer.from([0])]];
  let off = opts.length * 5 + 1;
  const table = [], data = [];
  for (const [t, d] of opts) {
    const e = Buffer.alloc(5); e[0] = t; e.writeUInt16BE(off, 1); e.writeUInt16BE(d.length, 3);
    table.push(e); data.push(d); off += d.length;
  }
  return Buffer.concat([...table, Buffer.from([0xff]), ...data]);
}
function loginack() {
  const body = Buffer.concat([Buffer.from([1, 0x74, 0, 0, 4]), bvarchar('wirepool'), Buffer.from([0, 1, 0, 0])]);
  const h = Buffer.alloc(3); h[0] = 0xAD; h.writeUInt16LE(body.length, 1);
  return Buffer.concat([h, body]);
}

let n = 0;
const tlsServer = tls.createServer({ cert, key, minVersion: 'TLSv1.3', ALPNProtocols: ['tds/8.0'] }, (sock) => {
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
      const names = { 1: 'sqlbatch', 3: 'rpc', 14: 'txmgr', 16: 'login7', 18: 'prelogin' };
      const file = path.join(outdir, `strict_${String(n++).padStart(2, '0')}_${names[type] || type}.hex`);
      fs.writeFileSync(file, packets.map((x) => x.toString('hex')).join('\n') + '\n');
      packets = [];
      if (type === 18) sock.write(packet(prelogin()));
      else if (type === 16) sock.write(packet(Buffer.concat([loginack(), done()])));
      else sock.write(packet(done()));
    }
  });
});
tlsServer.listen(0, '127.0.0.1', () => {
  const port = tlsServer.address().port;
  const conn = new Connection({
    server: '127.0.0.1',
    authentication: { type: 'default', options: { userName: 'demo', password: 'Pässwörd!1' } },
    options: { port, encrypt: 'strict', serverName: 'localhost', cryptoCredentialsDetails: { ca: cert },
               database: 'demo', appName: 'capture', connectTimeout: 5000, requestTimeout: 5000 },
  });
  conn.on('connect', (err) => {
    if (err) { console.error('connect failed', err); process.exit(1); }
    const r = new Request('SELECT 1', (e) => {
      if (e) { console.error(e); process.exit(1); }
      conn.close();
      tlsServer.close();
      setTimeout(() => process.exit(0), 100);
    });
    conn.execSql(r);
  });
  conn.connect();
});
setTimeout(() => { console.error('timeout'); process.exit(2); }, 20000).unref();
