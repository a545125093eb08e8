//! What an executor of dpstat's agrees to run: a stage whose output is dpstat's fold states, or
//! rows by person bucket for the next stage's fold, and nothing else. Ballista hands every
//! task's physical plan to the executor's [`ExecutionEngine`]; [`Guarded`] checks it against
//! the shapes dpstat's client and scheduler make before Ballista's own engine runs it, and
//! refuses (and logs) anything else, so that even a holder of the cluster's credentials cannot
//! have an executor return rows (`SELECT *`), a column's distinct values (a grouping by a data
//! column), or any aggregate but dpstat's.
//!
//! The shapes: a shuffle writer over an aggregate whose every function is `dpstat_fold` or
//! `dpstat_probe`, reached through nodes that only pass its output on (projections of its
//! columns, coalescing, repartitioning). Below an aggregate that reads rows (modes Partial,
//! Single and SinglePartitioned), anything that reads or combines rows, and projections of
//! columns, constants and their casts, may feed it, since only the fold's state leaves; it may
//! group only by `dpstat_bucket` (a seeded hash of the person columns, as `data::bound` buckets
//! them), and a whole fold so grouped may read what an earlier stage wrote. An aggregate that
//! merges states (Final) may group only by a column and read only what an earlier stage wrote
//! (a shuffle reader) or a partial aggregate. The one stage without a fold writes rows for a
//! fold grouped by bucket (`super::persons`): a sort shuffle writer partitioned by columns the
//! projection under it computes as `dpstat_bucket`, over the nodes that read rows. So every
//! shuffle file is fold states, or rows that only a fold of their bucket's persons reads.
//!
//! What each accepted stage hands on is kept in [`Stages`]: what the next stage's executors
//! read (a partial fold's states, which for `--privacy-id` are the persons' rows a `Bounded`
//! fold holds until its bucket's rows all met, or those rows themselves), or a fold's results.
//! [`super::gate`] serves a client only the latter.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use ballista_core::execution_plans::SortShuffleWriterExec;
use ballista_core::JobId;
use ballista_executor::execution_engine::{DefaultExecutionEngine, ExecutionEngine, QueryStageExecutor};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::expressions::{CastExpr, Column, Literal, TryCastExpr};
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{displayable, ExecutionPlan, Partitioning, PhysicalExpr};
use datafusion::prelude::SessionConfig;

use super::function::{FOLD, PROBE};
use super::persons::is_bucket;

/// Nodes that pass their input's batches on (a partitioning or a batching of them, never new
/// values).
const PASS: &[&str] = &[
    "ShuffleWriterExec",
    "SortShuffleWriterExec",
    "CoalescePartitionsExec",
    "CoalesceBatchesExec",
    "RepartitionExec",
];

/// Nodes that read or combine rows, allowed only below a fold that reads rows.
const ROWS: &[&str] = &[
    "DataSourceExec",
    "PlaceholderRowExec",
    "EmptyExec",
    "UnionExec",
    "InterleaveExec",
    "CoalescePartitionsExec",
    "CoalesceBatchesExec",
    "RepartitionExec",
];

/// Nodes that read what an earlier stage wrote (fold states, by this same check there).
const STATES: &[&str] =
    &["ShuffleReaderExec", "CoalescePartitionsExec", "CoalesceBatchesExec", "RepartitionExec"];

/// What a stage of dpstat's hands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A fold's results (a final or single aggregate): what the client reads.
    Results,
    /// Partial states, merged by the next stage's executors (a person-level fold's hold rows),
    /// or the rows by bucket that the next stage's fold reads.
    States,
}

/// Why `plan` is not one of dpstat's stages, or None when it is.
pub fn refusal(plan: &Arc<dyn ExecutionPlan>) -> Option<String> {
    stage(plan).err()
}

/// What `plan` hands on, or why it is not one of dpstat's stages.
pub fn stage(plan: &Arc<dyn ExecutionPlan>) -> Result<Output, String> {
    if let Some(input) = rows_by_bucket(plan) {
        // Rows, for the fold grouped by their bucket that the next stage runs
        // (`persons::PersonShuffle`): as sensitive as a person-level fold's states, which hold
        // the same rows, and served as those are, to executors only.
        return rows(input, false).map(|()| Output::States);
    }
    output(plan).map(|mode| match mode {
        AggregateMode::Partial | AggregateMode::PartialReduce => Output::States,
        _ => Output::Results,
    })
}

/// What the stages this executor accepted hand on, by job and stage: the last [`Stages::KEPT`]
/// of them (a client fetches a job's results as soon as it ends; an older stage's output is
/// served to executors only).
#[derive(Default)]
pub struct Stages {
    seen: Mutex<Seen>,
}

/// A stage by its job's id and its number.
type StageId = (String, usize);

/// Each stage's output, and the stages in the order they were accepted.
#[derive(Default)]
struct Seen {
    outputs: HashMap<StageId, Output>,
    order: VecDeque<StageId>,
}

impl Stages {
    pub const KEPT: usize = 4096;

    pub fn record(&self, job: &str, stage: usize, output: Output) {
        let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Seen { outputs, order } = &mut *seen;
        let id = (job.to_string(), stage);
        // Every task of a stage records it; only its first is new.
        if outputs.insert(id.clone(), output).is_none() {
            order.push_back(id);
            if order.len() > Self::KEPT {
                if let Some(oldest) = order.pop_front() {
                    outputs.remove(&oldest);
                }
            }
        }
    }

    pub fn output(&self, job: &str, stage: usize) -> Option<Output> {
        let seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        seen.outputs.get(&(job.to_string(), stage)).copied()
    }
}

fn node(plan: &Arc<dyn ExecutionPlan>) -> String {
    crate::error::shown(plan.name(), 60)
}

/// The input of a stage that writes rows to the shuffle partitioned by their persons' buckets
/// alone (`persons::PersonShuffle`): the sort shuffle writer Ballista puts where a hash
/// repartition was, by columns that the projection below it computes as `dpstat_bucket`.
fn rows_by_bucket(plan: &Arc<dyn ExecutionPlan>) -> Option<&Arc<dyn ExecutionPlan>> {
    let writer = plan.downcast_ref::<SortShuffleWriterExec>()?;
    let Partitioning::Hash(exprs, _) = writer.shuffle_output_partitioning() else { return None };
    let children = plan.children();
    let [input] = children.as_slice() else { return None };
    let projection = input.downcast_ref::<ProjectionExec>()?;
    let bucket = |e: &Arc<dyn PhysicalExpr>| {
        let column = e.downcast_ref::<Column>();
        column.and_then(|c| projection.expr().get(c.index())).is_some_and(|p| is_bucket(&p.expr))
    };
    (!exprs.is_empty() && exprs.iter().all(bucket)).then_some(*input)
}

/// The stage's top: pass-through nodes down to a fold; the fold's mode.
fn output(plan: &Arc<dyn ExecutionPlan>) -> Result<AggregateMode, String> {
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
        return fold(aggregate).map(|()| *aggregate.mode());
    }
    if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
        if let Some(bad) = projection.expr().iter().find(|p| p.expr.downcast_ref::<Column>().is_none()) {
            return Err(format!(
                "a projection of {} above the fold",
                crate::error::shown(&bad.expr.to_string(), 60)
            ));
        }
    } else if !PASS.contains(&plan.name()) {
        return Err(format!("{} where dpstat's fold must be", node(plan)));
    }
    let children = plan.children();
    if children.len() != 1 {
        return Err(format!("{} with {} inputs above the fold", node(plan), children.len()));
    }
    output(children[0])
}

/// An aggregate of dpstat's functions only, grouped as its mode allows.
fn fold(aggregate: &AggregateExec) -> Result<(), String> {
    if let Some(other) = aggregate.aggr_expr().iter().find(|a| ![FOLD, PROBE].contains(&a.fun().name())) {
        return Err(format!("the aggregate {}", crate::error::shown(other.fun().name(), 60)));
    }
    if aggregate.aggr_expr().is_empty() {
        return Err("a grouping with no fold".into());
    }
    let groups = aggregate.group_expr().expr();
    match aggregate.mode() {
        AggregateMode::Partial | AggregateMode::Single | AggregateMode::SinglePartitioned => {
            if let Some((bad, _)) = groups.iter().find(|(e, _)| !is_bucket(e)) {
                return Err(format!("a fold grouped by {}", crate::error::shown(&bad.to_string(), 60)));
            }
            // A whole fold grouped by bucket may read rows an earlier stage wrote by bucket.
            let shuffled = !groups.is_empty() && *aggregate.mode() != AggregateMode::Partial;
            rows(aggregate.input(), shuffled)
        }
        AggregateMode::Final | AggregateMode::FinalPartitioned | AggregateMode::PartialReduce => {
            if let Some((bad, _)) = groups.iter().find(|(e, _)| e.downcast_ref::<Column>().is_none()) {
                return Err(format!("a merge grouped by {}", crate::error::shown(&bad.to_string(), 60)));
            }
            states(aggregate.input())
        }
    }
}

/// Below a fold that reads rows: reading, projecting (columns, constants, the bucket) and
/// combining rows; with `shuffled`, also reading what an earlier stage wrote.
fn rows(plan: &Arc<dyn ExecutionPlan>, shuffled: bool) -> Result<(), String> {
    if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
        if let Some(bad) = projection.expr().iter().find(|p| !plain(&p.expr)) {
            return Err(format!("a projection of {}", crate::error::shown(&bad.expr.to_string(), 60)));
        }
    } else if !(ROWS.contains(&plan.name()) || shuffled && plan.name() == "ShuffleReaderExec") {
        return Err(format!("{} below dpstat's fold", node(plan)));
    }
    plan.children().into_iter().try_for_each(|child| rows(child, shuffled))
}

/// A column, a constant, the bucket, or a cast of one (a union casts a partition's column to
/// the type of the others'): only the fold's inputs, never its output.
fn plain(e: &Arc<dyn PhysicalExpr>) -> bool {
    if let Some(cast) = e.downcast_ref::<CastExpr>() {
        return plain(cast.expr());
    }
    if let Some(cast) = e.downcast_ref::<TryCastExpr>() {
        return plain(cast.expr());
    }
    e.downcast_ref::<Column>().is_some() || e.downcast_ref::<Literal>().is_some() || is_bucket(e)
}

/// Below a fold that merges states: an earlier stage's output, or a partial fold here.
fn states(plan: &Arc<dyn ExecutionPlan>) -> Result<(), String> {
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
        if !matches!(aggregate.mode(), AggregateMode::Partial | AggregateMode::PartialReduce) {
            return Err("a merge of a finished fold".into());
        }
        return fold(aggregate);
    }
    if !STATES.contains(&plan.name()) {
        return Err(format!("{} below a merge of dpstat's folds", node(plan)));
    }
    plan.children().into_iter().try_for_each(states)
}

/// Ballista's engine behind the check; what each accepted stage hands on goes to `stages`.
pub struct Guarded {
    inner: DefaultExecutionEngine,
    stages: Arc<Stages>,
}

impl Guarded {
    pub fn new(stages: Arc<Stages>) -> Guarded {
        Guarded { inner: DefaultExecutionEngine::new(), stages }
    }
}

impl ExecutionEngine for Guarded {
    fn create_query_stage_exec(
        &self,
        job_id: JobId,
        stage_id: usize,
        task_id: usize,
        global_output_partition_ids: Vec<usize>,
        plan: Arc<dyn ExecutionPlan>,
        work_dir: &str,
        config: &SessionConfig,
    ) -> Result<Arc<dyn QueryStageExecutor>> {
        match stage(&plan) {
            Ok(output) => self.stages.record(job_id.as_str(), stage_id, output),
            Err(why) => {
                log::warn!(
                    "refused job {job_id} stage {stage_id}: {why}; not one of dpstat's folds:\n{}",
                    displayable(plan.as_ref()).indent(false)
                );
                return Err(DataFusionError::Execution(format!(
                    "dpstat executor: refused a plan that is not dpstat's ({why})"
                )));
            }
        }
        self.inner.create_query_stage_exec(
            job_id,
            stage_id,
            task_id,
            global_output_partition_ids,
            plan,
            work_dir,
            config,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cluster::function::{Probe, ProbeFunction};
    use datafusion::logical_expr::{col, lit, AggregateUDF};
    use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
    use datafusion::prelude::{ParquetReadOptions, SessionContext};

    fn plans(
        make: impl AsyncFnOnce(&SessionContext) -> Vec<Arc<dyn ExecutionPlan>>,
    ) -> Vec<Arc<dyn ExecutionPlan>> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let ctx = SessionContext::new();
            let people = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/people.parquet");
            ctx.register_parquet("t", people, ParquetReadOptions::default()).await.unwrap();
            make(&ctx).await
        })
    }

    fn probe() -> AggregateUDF {
        let bytes =
            crate::data::cluster::function::encode(&Probe { build: String::new(), paths: vec![] }).unwrap();
        AggregateUDF::from(ProbeFunction::new(bytes))
    }

    #[test]
    fn rows_values_and_other_aggregates_are_refused() {
        let refused = plans(async |ctx| {
            let mut all = Vec::new();
            for sql in [
                "SELECT * FROM t",
                "SELECT income FROM t WHERE region = 'north'",
                "SELECT count(*) FROM t",
                "SELECT region, count(*) FROM t GROUP BY region",
                "SELECT DISTINCT region FROM t",
            ] {
                all.push(ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap());
            }
            // dpstat's own function, grouped by a data column: its distinct values would leave.
            let frame = ctx.table("t").await.unwrap();
            let grouped = frame.aggregate(vec![col("region")], vec![probe().call(vec![lit(0u8)])]).unwrap();
            all.push(grouped.create_physical_plan().await.unwrap());
            all
        });
        for plan in refused {
            assert!(refusal(&plan).is_some(), "ran:\n{}", displayable(plan.as_ref()).indent(false));
        }
    }

    #[test]
    fn a_partial_fold_hands_on_states_and_a_merge_results() {
        let plan = plans(async |ctx| {
            let folded = ctx
                .table("t")
                .await
                .unwrap()
                .select(vec![col("income").alias("dpstat_0")])
                .unwrap()
                .aggregate(vec![], vec![probe().call(vec![col("dpstat_0")]).alias("state")])
                .unwrap();
            vec![folded.create_physical_plan().await.unwrap()]
        })
        .remove(0);
        let shown = displayable(plan.as_ref()).indent(false).to_string();
        assert_eq!(stage(&plan), Ok(Output::Results), "{shown}");
        // The same fold as the partial step of a first stage, under a pass-through node.
        let whole =
            plan.downcast_ref::<AggregateExec>().unwrap_or_else(|| panic!("not a fold on top:\n{shown}"));
        let partial = AggregateExec::try_new(
            AggregateMode::Partial,
            whole.group_expr().clone(),
            whole.aggr_expr().to_vec(),
            whole.filter_expr().to_vec(),
            whole.input().clone(),
            whole.input_schema(),
        )
        .unwrap();
        let first: Arc<dyn ExecutionPlan> = Arc::new(CoalescePartitionsExec::new(Arc::new(partial)));
        assert_eq!(stage(&first), Ok(Output::States));
    }

    #[test]
    fn stages_keep_the_latest() {
        let stages = Stages::default();
        stages.record("first", 1, Output::States);
        stages.record("first", 1, Output::States);
        for i in 0..Stages::KEPT - 1 {
            stages.record("job", i, Output::Results);
        }
        assert_eq!(stages.output("first", 1), Some(Output::States));
        stages.record("last", 7, Output::Results);
        assert_eq!(stages.output("first", 1), None);
        assert_eq!(stages.output("job", 0), Some(Output::Results));
        assert_eq!(stages.output("last", 7), Some(Output::Results));
        assert_eq!(stages.output("last", 8), None);
    }

    #[test]
    fn dpstat_own_shapes_run() {
        let allowed = plans(async |ctx| {
            let empty = ctx.read_empty().unwrap();
            let probed = empty.aggregate(vec![], vec![probe().call(vec![lit(0u8)]).alias("answer")]).unwrap();
            let frame = ctx.table("t").await.unwrap();
            let scanned = frame
                .select(vec![lit(0u8).alias("dpstat_rows"), col("income").alias("dpstat_0")])
                .unwrap()
                .aggregate(vec![], vec![probe().call(vec![col("dpstat_rows")]).alias("state")])
                .unwrap();
            vec![probed.create_physical_plan().await.unwrap(), scanned.create_physical_plan().await.unwrap()]
        });
        for plan in allowed {
            assert_eq!(refusal(&plan), None, "refused:\n{}", displayable(plan.as_ref()).indent(false));
        }
    }
}
