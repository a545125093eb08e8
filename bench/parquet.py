"""The targets of issue 26 (Parquet input), measured against DuckDB and polars (bench/parquet.sh
runs this with the venv's python).

    python parquet.py run DPSTAT DATA RUNS PROJECTION ROWS      generate, time, print the tables
    python parquet.py query ENGINE QUERY PATH                   one peer query (ENGINE: duckdb | polars)

Data (generated with DuckDB when missing, cached in DATA): ROWS rows of `income` (DOUBLE, 2
decimals, 0..250000, squared-uniform so about 11% lie above the mean's upper bound 200000 and
are clamped), `age` (INTEGER 0..109; 100..109 land in the histogram's last bin) and `region`
(VARCHAR, 10 values). The values are a fixed integer hash of the row number (`mix` below, plain
BIGINT arithmetic), not a random generator, so every run and every DuckDB version writes the same
rows. Files, snappy, 1M-row row groups:
- `pq_ROWS.parquet`: one file;
- `pq_ROWS_parts/part-NN.parquet`: the same rows as 64 files of consecutive row ranges;
- `pq_ROWS_wide.parquet` (income among 19 more DOUBLE columns x01..x19, income the 10th) and
  `pq_ROWS_narrow.parquet` (income alone): the projection pair.

Commands (whole processes; every run under `/usr/bin/time -f %M` for its peak RSS):
- start-up alone: `dpstat --version`, `python -c 'import duckdb'`, `python -c 'import polars'`,
  and `cat` of the file and of the parts (the bytes read from the page cache);
- for mean (`--col income --lower 0 --upper 200000 --eps 1`) and histogram (`--col age --lower 0
  --upper 100 --bins 10 --eps 1`), on the file and on the parts directory: dpstat, and DuckDB and
  polars computing the same statistic without noise (the mean of income clamped into [0,
  200000]; the counts of floor(age / 10) clamped into bins 0..9), each printing its result and its
  in-engine time (perf_counter around the query alone: after the import and, for DuckDB, after
  connecting; reading the files is inside it, so is polars' planning);
- projection (unless PROJECTION=0): the mean on the wide file and on the narrow file, by dpstat,
  DuckDB and polars.

Timing: page cache warm (every command runs once as a warm-up), then RUNS rounds; each round runs
every command once, in the list's order rotated by the round's number (round r starts at command
r mod n), so no command always follows the same neighbour and a burst of load from other
processes spreads over all of them. Reported: the median and the fastest whole-process wall time,
the ratio of medians to dpstat's same query on the same layout, the engines' median in-engine
time (and its ratio to dpstat's whole process), the largest peak RSS over all runs, and each
result (dpstat's is a noisy release: its distance to DuckDB's exact answer is shown). dpstat runs
without DPSTAT_INSECURE_SEED (OS randomness) and with its default threads; the engines with theirs.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MEAN = ["mean", "--col", "income", "--lower", "0", "--upper", "200000", "--eps", "1"]
HIST = ["histogram", "--col", "age", "--lower", "0", "--upper", "100", "--bins", "10", "--eps", "1"]
MEAN_BOUNDS = (0.0, 200000.0)
HIST_BINS = (0.0, 100.0, 10)
PARTS = 64
ROW_GROUP = 1_000_000
RSS_TARGET_MIB = 64
REGIONS = ["north", "south", "east", "west", "central", "islands", "coast", "mountains", "capital", "border"]

for var in ("DPSTAT_INSECURE_SEED", "DPSTAT_LEDGER"):
    os.environ.pop(var, None)


# ---------------------------------------------------------------------------------------------
# Data


# A 32-bit integer hash of (row, column) in BIGINT arithmetic: every product stays below 2^63
# (row numbers below 2^31, multipliers below 2^31 after the first step), so no overflow.
MACROS = """
create or replace macro xs(h, s) as xor(h, h >> s);
create or replace macro mix(i, k) as
    xs((xs((xs((i * 2654435761 + k * 2246822519) % 4294967296, 16) * 2146121005) % 4294967296, 15)
        * 1540483477) % 4294967296, 16);
create or replace macro unit(i, k) as mix(i, k) / 4294967296.0;
"""
INCOME = "round(250000 * unit(i, 1) * unit(i, 1), 2)::double as income"
AGE = "(mix(i, 2) % 110)::integer as age"
REGION = f"{REGIONS}[1 + mix(i, 3) % 10]::varchar as region"
EXTRA = [f"round(1000 * unit(i, {10 + j}), 2)::double as x{j:02}" for j in range(1, 20)]
OPTIONS = f"(format parquet, compression snappy, row_group_size {ROW_GROUP})"


def copy(con, columns, first, last, path):
    con.execute(f"copy (select {', '.join(columns)} from range({first}, {last}) t(i)) to '{path}' {OPTIONS}")


def generate(data, rows, projection):
    """The files for ROWS rows, written when missing (under a temporary name, then renamed)."""
    import duckdb

    base = os.path.join(data, f"pq_{rows}")
    files = {"file": base + ".parquet", "parts": base + "_parts"}
    if projection:
        files |= {"wide": base + "_wide.parquet", "narrow": base + "_narrow.parquet"}
    con = None
    for kind, path in files.items():
        if os.path.exists(path):
            continue
        if con is None:
            con = duckdb.connect()
            # The progress bar would land among the tables.
            con.execute("set enable_progress_bar = false")
            con.execute(MACROS)
        print(f"# generating {path}", file=sys.stderr, flush=True)
        tmp = path + ".tmp"
        if kind == "parts":
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            for p in range(PARTS):
                first, last = rows * p // PARTS, rows * (p + 1) // PARTS
                copy(con, [INCOME, AGE, REGION], first, last, os.path.join(tmp, f"part-{p:02}.parquet"))
        else:
            columns = {
                "file": [INCOME, AGE, REGION],
                "wide": [*EXTRA[:9], INCOME, *EXTRA[9:]],
                "narrow": [INCOME],
            }[kind]
            copy(con, columns, 0, rows, tmp)
        os.replace(tmp, path)
    return files


def describe(path):
    """Size, files, row groups and columns of a file or a directory of parts."""
    import pyarrow.parquet as pq

    paths = parts_of(path)
    metas = [pq.ParquetFile(p).metadata for p in paths]
    size = sum(os.path.getsize(p) for p in paths) / 1e6
    rows = sum(m.num_rows for m in metas)
    groups = sum(m.num_row_groups for m in metas)
    largest = max(m.row_group(g).num_rows for m in metas for g in range(m.num_row_groups))
    return (f"{size:,.0f} MB, {len(paths)} file{'s' if len(paths) > 1 else ''}, {rows:,} rows, "
            f"{groups} row groups (largest {largest:,} rows), {metas[0].num_columns} columns")


def parts_of(path):
    if os.path.isdir(path):
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".parquet"))
    return [path]


# ---------------------------------------------------------------------------------------------
# The engines' side (run as `python parquet.py query ENGINE QUERY PATH`, one process per run)


def query(engine, what, path):
    """Print {"value": ..., "seconds": in-engine time} for the clamped mean or the binned counts."""
    lower, upper = MEAN_BOUNDS
    h_lower, h_upper, bins = HIST_BINS
    width = (h_upper - h_lower) / bins
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        glob = os.path.join(path, "**", "*.parquet") if os.path.isdir(path) else path
        source = f"read_parquet('{glob}')"
        if what == "mean":
            sql = f"select avg(least(greatest(income, {lower}), {upper})) from {source}"
        else:
            sql = (f"select least(greatest(floor((age - {h_lower}) / {width}), 0), {bins - 1})::bigint as b, "
                   f"count(*) from {source} group by b")
        start = time.perf_counter()
        rows = con.sql(sql).fetchall()
        seconds = time.perf_counter() - start
    else:
        import polars as pl

        start = time.perf_counter()
        frame = pl.scan_parquet(path)
        if what == "mean":
            rows = [(frame.select(pl.col("income").clip(lower, upper).mean()).collect().item(),)]
        else:
            b = ((pl.col("age") - h_lower) / width).floor().clip(0, bins - 1).cast(pl.Int64).alias("b")
            rows = frame.select(b).group_by("b").agg(pl.len()).collect().rows()
        seconds = time.perf_counter() - start
    if what == "mean":
        value = rows[0][0]
    else:
        value = [0] * bins
        for b, n in rows:
            value[b] = n
    print(json.dumps({"value": value, "seconds": seconds}))


# ---------------------------------------------------------------------------------------------
# Timing


def timed(argv, keep=True):
    """(wall seconds, peak RSS MiB, stdout) of one run under /usr/bin/time; with keep=False its
    output goes to /dev/null (`cat`)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *argv],
                             stdout=subprocess.PIPE if keep else subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        if out.returncode != 0:
            sys.exit(f"failed (exit {out.returncode}): {' '.join(argv)}\n{out.stderr.strip()}")
        return wall, int(rss.read().split()[-1]) / 1024, out.stdout or ""


def result(kind, stdout):
    """The value a run printed: a number (mean) or the list of bin counts (histogram); None if
    the output cannot be read (the table then shows `?`)."""
    try:
        if kind.startswith("engine"):
            return json.loads(stdout)
        if kind == "dpstat mean":
            return {"value": float(stdout.strip())}
        if kind == "dpstat histogram":
            lines = stdout.strip().splitlines()
            return {"value": [int(line.rsplit(",", 1)[1]) for line in lines[1:]]}
    except (ValueError, IndexError, KeyError):
        return None
    return {}


def run(dpstat, data, runs, projection, rows):
    runs, rows, projection = int(runs), int(rows), projection == "1"
    files = generate(data, rows, projection)
    py, me = sys.executable, os.path.abspath(__file__)

    # (section, label, kind, argv); the kind says how to read the output.
    commands = [
        ("start-up", "dpstat --version", "startup dpstat", [dpstat, "--version"]),
        ("start-up", "python -c 'import duckdb'", "startup duckdb", [py, "-c", "import duckdb"]),
        ("start-up", "python -c 'import polars'", "startup polars", [py, "-c", "import polars"]),
        ("start-up", "cat file", "cat", ["cat", files["file"]]),
        ("start-up", f"cat parts ({PARTS} files)", "cat", ["cat", *parts_of(files["parts"])]),
    ]
    for what, args in (("mean", MEAN), ("histogram", HIST)):
        for layout in ("file", "parts"):
            path = files[layout]
            commands += [
                (what, f"{layout} | dpstat", f"dpstat {what}", [dpstat, *args, path]),
                (what, f"{layout} | duckdb", f"engine duckdb {what}", [py, me, "query", "duckdb", what, path]),
                (what, f"{layout} | polars", f"engine polars {what}", [py, me, "query", "polars", what, path]),
            ]
    if projection:
        for layout in ("narrow", "wide"):
            path = files[layout]
            commands += [
                ("projection", f"{layout} | dpstat", "dpstat mean", [dpstat, *MEAN, path]),
                ("projection", f"{layout} | duckdb", "engine duckdb mean", [py, me, "query", "duckdb", "mean", path]),
                ("projection", f"{layout} | polars", "engine polars mean", [py, me, "query", "polars", "mean", path]),
            ]

    print(f"## {rows:,} rows\n")
    for layout, path in files.items():
        print(f"- {layout}: `{os.path.basename(path)}`: {describe(path)}")
    print(f"\nmedian and fastest of {runs} rounds after a warm-up, each round every command once in a "
          "rotated order; peak RSS: the largest of all runs\n", flush=True)

    for _, _, kind, argv in commands:
        timed(argv, kind != "cat")
    walls = {c[1:2] + (c[0],): [] for c in commands}
    rss, inner, value = ({k: [] for k in walls} for _ in range(3))
    for r in range(runs):
        for section, label, kind, argv in commands[r % len(commands):] + commands[:r % len(commands)]:
            key = (label, section)
            wall, peak, stdout = timed(argv, kind != "cat")
            walls[key].append(wall)
            rss[key].append(peak)
            got = result(kind, stdout)
            value[key].append(got)
            if got and "seconds" in got:
                inner[key].append(got["seconds"])
    median = {k: statistics.median(v) for k, v in walls.items()}
    startup = {kind.split()[1]: median[(label, "start-up")] for section, label, kind, _ in commands
               if kind.startswith("startup")}

    print("### Start-up and reading the bytes\n")
    print("| process | median s | min s | peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for section, label, kind, _ in commands:
        if section == "start-up":
            k = (label, section)
            print(f"| {label} | {median[k]:.3f} | {min(walls[k]):.3f} | {max(rss[k]):.1f} |")
    print()

    sections = ["mean", "histogram"] + (["projection"] if projection else [])
    for section in sections:
        title = {
            "mean": f"mean {' '.join(MEAN[1:])}",
            "histogram": f"histogram {' '.join(HIST[1:])}",
            "projection": "projection: mean of income from the 1-column file and from the 20-column file",
        }[section]
        print(f"### {title}\n")
        print("| layout | engine | whole median s | min s | vs dpstat | start-up s | in-engine median s "
              "| in-engine vs dpstat whole | peak RSS MiB | result |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for sec, label, kind, _ in commands:
            if sec != section:
                continue
            k = (label, section)
            layout, engine = label.split(" | ")
            base = median[(f"{layout} | dpstat", section)]
            exact = next((v for v in value[(f"{layout} | duckdb", section)] if v), None)
            in_engine = f"{statistics.median(inner[k]):.3f}" if inner[k] else "-"
            in_ratio = f"{statistics.median(inner[k]) / base:.2f}" if inner[k] else "-"
            print(f"| {layout} | {engine} | {median[k]:.3f} | {min(walls[k]):.3f} | {median[k] / base:.2f} "
                  f"| {startup[engine]:.3f} | {in_engine} | {in_ratio} | {max(rss[k]):.1f} "
                  f"| {shown(value[k][-1], exact, engine)} |", flush=True)
        print()

    dp = [(max(rss[k]), k) for k in rss if k[0].endswith("| dpstat")]
    peak, worst = max(dp)
    print(f"targets (issue 26), {rows:,} rows:")
    print(f"- dpstat peak RSS <= {RSS_TARGET_MIB} MiB: largest {peak:.1f} MiB ({worst[1]}, {worst[0].split(' |')[0]}): "
          f"{'met' if peak <= RSS_TARGET_MIB else 'NOT met'}")
    for section in ("mean", "histogram"):
        for layout in ("file", "parts"):
            d = median[(f"{layout} | dpstat", section)]
            versus = ", ".join(
                f"{e} {median[(f'{layout} | {e}', section)]:.3f} s ({d / median[(f'{layout} | {e}', section)]:.2f}x)"
                for e in ("duckdb", "polars"))
            print(f"- {section} on the {layout}: dpstat {d:.3f} s; {versus} (dpstat's time over theirs, whole processes)")
    if projection:
        narrow, wide = median[("narrow | dpstat", "projection")], median[("wide | dpstat", "projection")]
        print(f"- projection: dpstat's mean on the 20-column file {wide:.3f} s vs the 1-column file {narrow:.3f} s: "
              f"{wide / narrow:.2f}x")
    agree = all(
        close(next(v for v in value[(f"{layout} | polars", s)] if v)["value"],
              next(v for v in value[(f"{layout} | duckdb", s)] if v)["value"])
        for s in sections for layout in (("narrow", "wide") if s == "projection" else ("file", "parts")))
    print(f"- DuckDB and polars give the same exact results: {'yes' if agree else 'NO'}")
    print()


def close(a, b):
    if isinstance(a, list):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def shown(got, exact, engine):
    """A run's result for the table: the mean or, for a histogram, the total; beside dpstat's
    noisy release its distance to DuckDB's exact answer (the largest over the bins)."""
    if not got or "value" not in got:
        return "?"
    v = got["value"]
    if isinstance(v, list):
        text = f"n = {sum(v):,}"
        if engine != "duckdb" and exact and len(exact["value"]) == len(v):
            text += f", max abs diff per bin {max(abs(a - b) for a, b in zip(v, exact['value'])):,}"
        return text
    text = f"{v:.4f}"
    if engine != "duckdb" and exact:
        text += f" (diff {v - exact['value']:+.4f})"
    return text


if __name__ == "__main__":
    {"run": run, "query": query}[sys.argv[1]](*sys.argv[2:])
