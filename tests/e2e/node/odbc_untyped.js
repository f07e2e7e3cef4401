// node-postgres's untyped parameters through wirepool's ODBC driver: node
// sends every non-Buffer parameter as text with OID 0, so a boolean arrives as
// 'true' and a Date as '2024-02-29T12:34:56.000+00:00'. The ODBC driver binds
// them as text and the backend converts where it can (docs/odbc.md, "Untyped
// parameters"). Prints one line per case: "<case> -> <JSON value>" or
// "<case> -> error <SQLSTATE>".
// Usage: node odbc_untyped.js <connection string> <table>
'use strict';
const { Client } = require('pg');

async function main() {
  const [url, table] = process.argv.slice(2);
  const c = new Client({ connectionString: url });
  await c.connect();
  await c.query(`DROP TABLE IF EXISTS ${table}`);
  await c.query(`CREATE TABLE ${table} (id int PRIMARY KEY, b boolean, ts timestamp, s varchar(40))`);
  const cases = [
    ['bool true', 'b', true],
    ['bool 1', 'b', 1],
    ['bool 0', 'b', 0],
    ['Date', 'ts', new Date(Date.UTC(2024, 1, 29, 12, 34, 56))],
    ['YYYY-MM-DD HH:MM:SS', 'ts', '2024-02-29 12:34:56'],
    ['text', 's', 'Grüße 🚀'],
    ['int', 'id', 99],
  ];
  let id = 0;
  for (const [name, col, v] of cases) {
    id++;
    try {
      if (col === 'id') {
        await c.query(`INSERT INTO ${table} (id) VALUES ($1)`, [v]);
        const r = await c.query(`SELECT id AS v FROM ${table} WHERE id = $1`, [v]);
        console.log(`${name} -> ${JSON.stringify(r.rows[0].v)}`);
        continue;
      }
      await c.query(`INSERT INTO ${table} (id, ${col}) VALUES ($1, $2)`, [id, v]);
      const r = await c.query(`SELECT ${col} AS v FROM ${table} WHERE id = $1`, [id]);
      console.log(`${name} -> ${JSON.stringify(r.rows[0].v)}`);
    } catch (e) {
      console.log(`${name} -> error ${e.code}`);
    }
  }
  await c.end();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
