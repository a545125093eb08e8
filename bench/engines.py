"""The benchmark queries in polars and DuckDB, for bench/compare.sh.

    python engines.py ENGINE QUERY FILE      ENGINE: polars | duckdb   QUERY: mean | count | histogram

The same statistics as the dpstat commands in compare.sh, without noise: mean of income,
count of rows with region = north, row counts per region. FILE may be `-` (standard input) or
end in `.gz`: each engine reads those the way its documentation gives.
"""

import sys


def polars(query, path):
    import polars as pl

    if path == "-":
        # polars has no streaming reader for a pipe: it reads standard input whole.
        frame = pl.read_csv(sys.stdin.buffer).lazy()
    elif path.endswith(".gz"):
        # scan_csv cannot decompress; read_csv can.
        frame = pl.read_csv(path).lazy()
    else:
        frame = pl.scan_csv(path)
    if query == "mean":
        return frame.select(pl.col("income").mean()).collect().item()
    if query == "count":
        return frame.filter(pl.col("region") == "north").select(pl.len()).collect().item()
    return frame.group_by("region").agg(pl.len()).collect().rows()


def duckdb(query, path):
    import duckdb as db

    source = "read_csv('/dev/stdin')" if path == "-" else f"read_csv('{path}')"
    if query == "mean":
        return db.sql(f"select avg(income) from {source}").fetchall()
    if query == "count":
        return db.sql(f"select count(*) from {source} where region = 'north'").fetchall()
    return db.sql(f"select region, count(*) from {source} group by region").fetchall()


if __name__ == "__main__":
    engine, query, path = sys.argv[1:4]
    print({"polars": polars, "duckdb": duckdb}[engine](query, path))
