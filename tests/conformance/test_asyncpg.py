"""asyncpg (Debian python3-asyncpg 0.27) sees PostgreSQL through wirepool:
checked differentially (differential.py) against PostgreSQL directly, through
wirepool in session mode (a pool of 20) and in transaction mode (a pool of 10
backends under asyncpg's 20 connections).

Covers: create_pool of 20 connections with asyncpg's statement cache, 400
concurrent fetch/fetchrow/fetchval calls inside and outside transactions;
fetchrow and fetchval inside a transaction followed by COMMIT and ROLLBACK;
copy_records_to_table and copy_from_query; the statement cache after
`ALTER TABLE … ADD COLUMN` (asyncpg retries after InvalidCachedStatementError
on a connection that cached it; ten new connections plan afresh); cursors in
transactions (iterated with prefetch, and fetch/forward/fetchrow); executemany,
and an executemany with a failing row (nothing of it stays); the backend
terminated during a cursor fetch in a transaction (the session ends, its row
is gone, the next connection works); the client gone mid-cursor in a
transaction (its row is gone, the next client works).

Run with /usr/bin/python3 (Debian's asyncpg). Every scenario runs under
asyncio.wait_for(`DEADLINE`), so a hang fails the check.
"""

import asyncio
import io
import unittest

import asyncpg

from differential import DifferentialCase

DEADLINE = 40


def run(t, body):
    """Runs `body(t)` (a coroutine function) with a deadline."""
    return asyncio.run(asyncio.wait_for(body(t), DEADLINE))


def connect(t):
    return asyncpg.connect(**t.params(), ssl=False, timeout=10, command_timeout=20)


def error(e):
    return ("error", type(e).__name__, getattr(e, "sqlstate", None))


def lost(e):
    """A lost session: 57P01, the 08 class, asyncpg's own
    ConnectionDoesNotExistError or "connection is closed" count the same."""
    code = getattr(e, "sqlstate", None)
    if code == "57P01" or (code or "").startswith("08") or \
            isinstance(e, (asyncpg.ConnectionDoesNotExistError, ConnectionError)) or \
            (isinstance(e, asyncpg.InterfaceError) and "closed" in str(e)):
        return "connection lost"
    return error(e)


async def step(out, coro, shape=lambda v: v):
    """Appends what awaiting `coro` gave, or the PostgreSQL error it raised."""
    try:
        out.append(shape(await coro))
    except asyncpg.PostgresError as e:
        out.append(error(e))


class AsyncpgTest(DifferentialCase):
    pool_max = 10
    session_pool_max = 20

    def differ_async(self, body):
        def scenario(t):
            return run(t, body)
        return self.differ(scenario)

    def test_pool_of_twenty_with_statement_cache(self):
        async def body(t):
            pool = await asyncpg.create_pool(**t.params(), ssl=False, min_size=20, max_size=20,
                                             timeout=10, command_timeout=20)
            try:
                async def one(i):
                    async with pool.acquire() as c:
                        if i % 2:
                            async with c.transaction():
                                await c.execute(f"INSERT INTO {t.table} VALUES ($1, $2)", i, str(i))
                                n = await c.fetchval(f"SELECT count(*) FROM {t.table} "
                                                     "WHERE id = $1", i)
                                r = await c.fetchrow("SELECT $1::int + 1 AS a, $2::text AS b",
                                                     i, "x")
                                return (n, r["a"], r["b"])
                        rows = await c.fetch("SELECT g FROM generate_series(1, $1::int) g", i % 50)
                        v = await c.fetchval("SELECT $1::int * 3", i)
                        r = await c.fetchrow("SELECT $1::text || 'y' AS s", str(i))
                        return (len(rows), v, r["s"])
                got = await asyncio.gather(*(one(i) for i in range(400)))
                return [got, pool.get_size()]
            finally:
                await pool.close()
        self.assertEqual(self.differ_async(body)[-1], ("rows", 200))

    def test_fetchrow_and_fetchval_in_a_transaction_then_commit_and_rollback(self):
        async def body(t):
            c = await connect(t)
            out = []
            try:
                for key, commit in ((1, True), (2, False)):
                    tr = c.transaction()
                    await tr.start()
                    out.append(await c.fetchval("SELECT g FROM generate_series(1, 5) g"))
                    out.append(tuple(await c.fetchrow("SELECT g, g * 2 FROM generate_series(3, 9) g")))
                    await c.execute(f"INSERT INTO {t.table} VALUES ($1, 'x')", key)
                    await (tr.commit() if commit else tr.rollback())
                out.append(await c.fetchval(f"SELECT count(*) FROM {t.table}"))
            finally:
                await c.close()
            return out
        self.assertEqual(self.differ_async(body)[-1], ("rows", 1))

    def test_copy_records_to_table_and_copy_from_query(self):
        async def body(t):
            c = await connect(t)
            out = []
            try:
                res = await c.copy_records_to_table(
                    t.table, records=[(i, f"r{i}" if i % 5 else None) for i in range(10000)],
                    columns=["id", "v"])
                out.append(res)
                buf = io.BytesIO()
                res = await c.copy_from_query(f"SELECT id, v FROM {t.table} ORDER BY id", output=buf)
                out.append((res, len(buf.getvalue()), hash(buf.getvalue())))
                buf = io.BytesIO()
                res = await c.copy_from_query("SELECT g FROM generate_series(1, $1::int) g", 500,
                                              output=buf, format="csv")
                out.append((res, buf.getvalue()[-8:]))
                try:
                    await c.copy_records_to_table(t.table, records=[(20000, "a"), (1, "dup")])
                except asyncpg.PostgresError as e:
                    out.append(error(e))
                out.append(await c.fetchval("SELECT 1"))
            finally:
                await c.close()
            return out
        self.assertEqual(self.differ_async(body)[-1], ("rows", 10000))

    def test_statement_cache_after_alter_table_add_column(self):
        async def body(t):
            out = []
            c = await connect(t)
            ddl = await connect(t)
            try:
                rows = lambda rs: [tuple(r) for r in rs]  # noqa: E731
                await c.execute(f"INSERT INTO {t.table} VALUES (1, 'a')")
                await step(out, c.fetch(f"SELECT * FROM {t.table}"), rows)
                await ddl.execute(f"ALTER TABLE {t.table} ADD COLUMN w int DEFAULT 7")
                # asyncpg raises InvalidCachedStatementError inside and retries once.
                await step(out, c.fetch(f"SELECT * FROM {t.table}"), rows)
                for _ in range(10):
                    n = await connect(t)
                    try:
                        await step(out, n.fetch(f"SELECT * FROM {t.table}"), rows)
                    finally:
                        await n.close()
            finally:
                await c.close()
                await ddl.close()
            return out
        self.assertEqual(self.differ_async(body)[1], [(1, "a", 7)])

    def test_cursors_in_transactions(self):
        async def body(t):
            c = await connect(t)
            out = []
            try:
                try:
                    async with c.transaction():
                        async def iterate():
                            total = 0
                            async for r in c.cursor("SELECT g FROM generate_series(1, 20000) g",
                                                    prefetch=500):
                                total += r[0]
                            return total
                        await step(out, iterate())
                        firsts = lambda rs: [r[0] for r in rs]  # noqa: E731
                        cur = await c.cursor("SELECT g FROM generate_series(1, $1::int) g", 100)
                        await step(out, cur.fetch(5), firsts)
                        await step(out, cur.forward(10))
                        await step(out, cur.fetchrow(), tuple)
                        other = await c.cursor("SELECT g * 2 FROM generate_series(1, 10) g")
                        await step(out, other.fetch(3), firsts)
                        await step(out, cur.fetch(3), firsts)
                except asyncpg.PostgresError as e:
                    out.append(error(e))
                out.append(await c.fetchval("SELECT 2"))
            finally:
                await c.close()
            return out
        self.assertEqual(self.differ_async(body)[0], 20000 * 20001 // 2)

    def test_executemany(self):
        async def body(t):
            c = await connect(t)
            out = []
            try:
                await c.executemany(f"INSERT INTO {t.table} VALUES ($1, $2)",
                                    [(i, f"m{i}") for i in range(1000)])
                out.append(await c.fetchval(f"SELECT count(*) FROM {t.table}"))
                try:
                    await c.executemany(f"INSERT INTO {t.table} VALUES ($1, $2)",
                                        [(2000, "a"), (2001, "b"), (5, "dup"), (2002, "c")])
                except asyncpg.PostgresError as e:
                    out.append(error(e))
                out.append(await c.fetchval(f"SELECT count(*) FROM {t.table}"))
            finally:
                await c.close()
            return out
        self.assertEqual(self.differ_async(body)[-1], ("rows", 1000))

    def test_backend_terminated_mid_cursor_fetch(self):
        async def body(t):
            out = []
            c = await connect(t)
            try:
                async with c.transaction():
                    await c.execute(f"INSERT INTO {t.table} VALUES (1, 'a')")
                    pid = await c.fetchval("SELECT pg_backend_pid()")
                    cur = await c.cursor("SELECT g FROM generate_series(1, 1000) g")
                    out.append(len(await cur.fetch(10)))
                    k = await asyncpg.connect(self.direct(), ssl=False, timeout=10)
                    await k.fetchval("SELECT pg_terminate_backend($1, 5000)", pid)
                    await k.close()
                    rows = await cur.fetch(10)
                    out.append(("fetched after terminate", [r[0] for r in rows]))
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
                out.append(lost(e))
            finally:
                await c.close()
            n = await connect(t)
            try:
                out.append(await n.fetchval("SELECT 5"))
            finally:
                await n.close()
            return out
        self.assertEqual(self.differ_async(body)[-1], ("rows", 0))

    def test_client_gone_mid_cursor(self):
        async def body(t):
            c = await connect(t)
            tr = c.transaction()
            await tr.start()
            await c.execute(f"INSERT INTO {t.table} VALUES (1, 'a')")
            cur = await c.cursor("SELECT g FROM generate_series(1, 100000) g")
            out = [len(await cur.fetch(100))]
            c.terminate()  # the socket closed, no Terminate, the transaction open
            await asyncio.sleep(0.3)
            n = await connect(t)
            try:
                out.append(await n.fetchval("SELECT 7"))
                out.append(await n.fetchval(f"SELECT count(*) FROM {t.table}"))
            finally:
                await n.close()
            return out
        self.assertEqual(self.differ_async(body), [100, 7, 0, ("rows", 0)])


if __name__ == "__main__":
    unittest.main()
