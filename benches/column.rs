//! Throughput of the one hot loop (`data::scan::scan`) on a generated CSV, for the folds of the
//! benchmark queries, read from a pipe-like stream and from the file, with 1 and all threads. A plain harness: `cargo bench --bench column` (rows: DPSTAT_BENCH_ROWS,
//! default 2,000,000, about 66 MB in a temporary file). Prints the median of 5 runs.
//! Whole-process comparisons with other engines are in bench/compare.sh.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dpstat::cli::values::Threads;
use dpstat::data::cell::{InvalidPolicy, NumberCell};
use dpstat::data::filter::{Filter, Test};
use dpstat::data::input::Input;
use dpstat::data::route::Routed;
use dpstat::data::row::Fold;
use dpstat::data::scan::scan;
use dpstat::data::source::{ColumnRef, CsvOptions, Source};
use dpstat::numeric::bins::Categories;
use dpstat::numeric::bounds::{Bounds, Finite};
use dpstat::privacy::unit::Neighbours;
use dpstat::query::count::CountFold;
use dpstat::query::histogram::{BinOf, HistogramFold};
use dpstat::query::mean::{MeanFold, MeanSpec};

const RUNS: usize = 5;
/// The benchmark data generator, shared with bench/compare.sh.
#[path = "../bench/gen.rs"]
mod gen;

/// The same rows as bench/gen.rs; returns the file's size.
fn generate(path: &Path, rows: u64) -> std::io::Result<u64> {
    gen::write_rows(BufWriter::new(File::create(path)?), rows)?;
    Ok(std::fs::metadata(path)?.len())
}

/// How the file is read: as a stream (as standard input is, one thread), or as a file with
/// this many threads.
#[derive(Clone, Copy)]
enum Reader {
    Stream,
    Threads(usize),
}

fn open(path: &Path, reader: Reader) -> Input {
    let options = CsvOptions { delimiter: b',', has_header: true, decimal: Default::default() };
    match reader {
        Reader::Stream => {
            let file = File::open(path).expect("the generated file opens");
            Input::from_reader("bench.csv".into(), Box::new(file), &options).expect("header")
        }
        Reader::Threads(n) => Input::open(&Source::Path(path.to_path_buf()), &options, false, n)
            .expect("the generated file opens"),
    }
}

fn median_time<F: Fold>(
    path: &Path,
    reader: Reader,
    filters: &[&str],
    make: impl Fn(&Input) -> F,
) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let mut input = open(path, reader);
            let filters: Vec<(usize, Test)> = filters
                .iter()
                .map(|f| {
                    let f: Filter = f.parse().expect("a valid filter");
                    (input.resolve(&ColumnRef::Name(f.column), "--where").unwrap(), f.test)
                })
                .collect();
            let mut fold = Routed::new(make(&input), filters, None);
            let kept = scan(&mut input, &mut fold).expect("the generated file scans");
            std::hint::black_box((kept, fold));
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn main() {
    let rows: u64 = std::env::var("DPSTAT_BENCH_ROWS").ok().and_then(|r| r.parse().ok()).unwrap_or(2_000_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bench.csv");
    let bytes = generate(&path, rows).expect("the benchmark file is written");
    let all = Threads::all_cores().get();
    let eps = dpstat::privacy::noise::Mechanism::Laplace("1".parse().expect("epsilon"));
    let bounds = Bounds::new(Finite::from_f64(0.0).unwrap(), Finite::from_f64(250_000.0).unwrap()).unwrap();
    let spec = MeanSpec::new(bounds, Neighbours::AddRemove, &eps).expect("mean spec");
    let categories: Arc<Categories> = Arc::new(gen::REGIONS.join(",").parse().expect("categories"));
    let column = |input: &Input, name: &str| input.resolve(&ColumnRef::Name(name.into()), "--col").unwrap();

    println!("{rows} rows, {:.1} MB, {all} cores; median of {RUNS} runs", bytes as f64 / 1e6);
    println!("{:<34} {:>10} {:>10} {:>10}", "fold", "stream", "1 thread", format!("{all} threads"));
    let readers = [Reader::Stream, Reader::Threads(1), Reader::Threads(all)];
    let report = |name: &str, times: Vec<Duration>| {
        let cells: Vec<String> =
            times.iter().map(|t| format!("{:>5.0} MB/s", bytes as f64 / 1e6 / t.as_secs_f64())).collect();
        println!("{name:<34} {}", cells.join(" "));
    };
    report("count", readers.iter().map(|&r| median_time(&path, r, &[], |_| CountFold::default())).collect());
    for filter in ["region=north", "age>=65", "region in north,south"] {
        report(
            &format!("count --where {filter}"),
            readers.iter().map(|&r| median_time(&path, r, &[filter], |_| CountFold::default())).collect(),
        );
    }
    report(
        "mean --col income",
        readers
            .iter()
            .map(|&r| {
                median_time(&path, r, &[], |input| {
                    let cell = NumberCell { index: column(input, "income"), invalid: InvalidPolicy::Error };
                    MeanFold::new(spec.clone(), cell)
                })
            })
            .collect(),
    );
    report(
        "histogram --col region (6 cat.)",
        readers
            .iter()
            .map(|&r| {
                median_time(&path, r, &[], |input| {
                    HistogramFold::new(BinOf::Category(column(input, "region"), Arc::clone(&categories)))
                })
            })
            .collect(),
    );
}
