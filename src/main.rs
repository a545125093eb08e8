//! Parse, dispatch to the subcommand, map the outcome to an exit code. The only place that
//! prints errors.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use dpstat::cli::{request, usage, Cli, Query};
use dpstat::cmd;
use dpstat::error::{exit_code, EXIT_INTERNAL, EXIT_USAGE};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    if usage::uses_deprecated_o(&args) {
        let _ = writeln!(io::stderr(), "dpstat: warning: {}", usage::DEPRECATED_O);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    // One locked, buffered writer for everything a command prints (std's stdout flushes at
    // every line: a histogram of many keys or a man page would be a write per line). A reader
    // that went away (`dpstat … | head -1`) is not an error, during the run or at the flush.
    let mut out = io::BufWriter::new(io::stdout().lock());
    let done = match dpstat::privacy::rng::insecure_seeds() {
        Ok(None) => dispatch(&cli.query, &mut out),
        Ok(Some(seeds)) => seeds.into_iter().try_for_each(|seed| {
            dpstat::privacy::rng::set_run_seed(seed);
            dispatch(&cli.query, &mut out)
        }),
        Err(e) => Err(e.into()),
    };
    let flushed = out.flush();
    match done.and_then(|()| flushed.map_err(anyhow::Error::from)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "dpstat: {}", dpstat::error::printed(&format!("{e:#}")));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// Runs the subcommand, writing what it prints to `out`.
fn dispatch(query: &Query, out: &mut dyn Write) -> anyhow::Result<()> {
    match query {
        Query::Budget(args) => cmd::budget::report(&args.request(), out),
        Query::Ledger(dpstat::cli::LedgerCommand::Init(args)) => cmd::ledger::init(&args.key, out),
        Query::Check(args) => cmd::check::run(&args.input.flags(), out),
        Query::Plan(args) => match &args.query {
            dpstat::cli::plan::PlanQuery::Run(run) => {
                cmd::plan::compare_workload(&request::plan_run_request(run)?, out)
            }
            dpstat::cli::plan::PlanQuery::Sql(sql) => cmd::sql::plan(&request::plan_sql_request(sql)?, out),
            _ => cmd::plan::run(&request::plan_request(args)?, out),
        },
        Query::Completions(args) => cmd::generate::completions(args.shell, Cli::command(), out),
        Query::Man(args) => match &args.out {
            Some(dir) => {
                let pages = cmd::generate::man_pages(Cli::command(), dir)?;
                let _ = writeln!(
                    io::stderr(),
                    "dpstat: note: wrote {} man pages to {}",
                    pages.len(),
                    dir.display()
                );
                Ok(())
            }
            None => cmd::generate::man(Cli::command(), &args.command, out),
        },
        Query::Run(args) => cmd::run::run(&args.request(), out),
        Query::Sql(args) => cmd::sql::run(&args.request()?, out),
        #[cfg(feature = "cluster")]
        Query::Cluster(command) => cluster(command),
        Query::Describe(args) => cmd::describe::run(&args.request(), out),
        release => match request::release_request(release) {
            Some(request) => cmd::release::run(cmd::release::Job::new(request)?, out),
            None => Err(dpstat::error::Error::internal("a subcommand without a command").into()),
        },
    }
}

/// `dpstat cluster init|scheduler|executor`: the servers run until stopped.
#[cfg(feature = "cluster")]
fn cluster(command: &dpstat::cli::ClusterCommand) -> anyhow::Result<()> {
    use dpstat::cli::ClusterCommand;
    match command {
        ClusterCommand::Init(args) => cmd::cluster::init(&args.dir),
        ClusterCommand::Scheduler(args) => {
            cmd::cluster::scheduler(args.bind, args.access.credentials.as_deref())
        }
        ClusterCommand::Executor(args) => cmd::cluster::executor(cmd::cluster::ExecutorFlags {
            scheduler: args.scheduler,
            bind: args.bind,
            flight_port: args.flight_port,
            cores: args.cores,
            stock: args.stock,
            credentials: args.access.credentials.as_deref(),
        }),
    }
}

/// `--help` and `--version` go to stdout with exit 0; every usage error becomes one
/// `dpstat: …` line on stderr with exit 2, built from clap's error kind and context.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        // The reader of stdout may have gone away (`dpstat count --help | head -1`): not an error.
        return match e.print() {
            Ok(()) => ExitCode::SUCCESS,
            Err(io) if io.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(EXIT_INTERNAL),
        };
    }
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let message = usage::message(&e, &Cli::command(), &args);
    let _ = writeln!(io::stderr(), "dpstat: {}", dpstat::error::printed(&message));
    ExitCode::from(EXIT_USAGE)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().filter_map(|c| c.downcast_ref::<io::Error>()).any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}
