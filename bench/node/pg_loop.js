// node-postgres doing what tds.js's "bench" scenario does with tedious: a
// primary-key SELECT with one bound parameter, in a loop, for SECONDS.
//   node pg_loop.js DSN SECONDS
'use strict';
const { Client } = require('pg');

async function main() {
  const [dsn, seconds = '5'] = process.argv.slice(2);
  const c = new Client({ connectionString: dsn });
  await c.connect();
  await c.query('DROP TABLE IF EXISTS t_bench_pg');
  await c.query('CREATE TABLE t_bench_pg (id INTEGER PRIMARY KEY, v TEXT)');
  await c.query("INSERT INTO t_bench_pg VALUES (1, 'a'), (2, 'b'), (3, 'c')");
  const end = Date.now() + Number(seconds) * 1000;
  let n = 0;
  while (Date.now() < end) {
    await c.query('SELECT v FROM t_bench_pg WHERE id = $1', [1 + (n % 3)]);
    n++;
  }
  console.log(`pg bench: ${(n / Number(seconds)).toFixed(0)} qps`);
  await c.end();
}
main().catch((e) => { console.error(e); process.exit(1); });
