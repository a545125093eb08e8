//! How a person-level fold is planned on the cluster: its rows cross the shuffle as rows, each
//! person's to one task, and are folded there as they come, never held as a partial state.
//!
//! DataFusion plans `dpstat_fold` grouped by `dpstat_bucket` in two steps: a partial aggregate
//! over each part of the input, whose state is every row its `Bounded` fold held, then a merge
//! of those states after a shuffle by bucket. Each state is one value of a batch, written,
//! fetched and gathered again whole: an executor's memory grew with the rows it read (about
//! 65–75 MiB at 8M rows in one job, PERFORMANCE.md), whatever the fold's cap.
//!
//! [`PersonShuffle`], a rule of the scheduler's physical planner (its last), rewrites that
//! shape into one aggregate (`SinglePartitioned`) over a hash repartition of the rows by their
//! bucket: Ballista cuts the stages at the repartition, so the first stage writes the rows
//! (the fold's arguments and their bucket) to the shuffle partitioned by bucket, with the sort shuffle writer's
//! bounded buffer, and each task of the second stage reads its buckets' rows as a stream of
//! batches into one `Bounded` fold per bucket, which spills past its own cap and chooses its
//! persons once the stream ends. The rows each person keeps are those of the two-step plan:
//! every row of a bucket still meets in one fold. The guard accepts the two stages
//! (`guard::stage`): rows partitioned by `dpstat_bucket`, served to executors only, and a fold
//! grouped by it that reads them.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use super::function::{BUCKET, FOLD};

/// The column the rows' bucket is written in, after the fold's arguments.
const BUCKET_COLUMN: &str = "dpstat_bucket";

/// The scheduler's rule: a merge of `dpstat_fold` states grouped by `dpstat_bucket` becomes one
/// fold over the rows repartitioned by bucket (see the module's comment).
#[derive(Debug, Default)]
pub struct PersonShuffle;

impl PhysicalOptimizerRule for PersonShuffle {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            Ok(match rewritten(&node)? {
                Some(single) => Transformed::yes(single),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "dpstat_person_shuffle"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The one fold that replaces `node`, when it is a merge of a partial person-level fold.
fn rewritten(node: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(merge) = node.downcast_ref::<AggregateExec>() else { return Ok(None) };
    if !matches!(merge.mode(), AggregateMode::Final | AggregateMode::FinalPartitioned) {
        return Ok(None);
    }
    let Some(partial) = partial_below(merge.input()) else { return Ok(None) };
    let groups = partial.group_expr();
    let [(bucket, _)] = groups.expr() else { return Ok(None) };
    let folds = partial.aggr_expr().iter().all(|a| a.fun().name() == FOLD);
    if !groups.is_single()
        || !is_bucket(bucket)
        || !folds
        || partial.filter_expr().iter().any(Option::is_some)
    {
        return Ok(None);
    }
    // The rows with their bucket as a column after theirs, repartitioned by that column: a
    // partitioning that is a column's crosses to the executors as Ballista writes it (one by a
    // function would lose the function's bytes), and the guard checks that the column is the
    // bucket (`guard::rows_by_bucket`).
    let input = partial.input();
    let schema = input.schema();
    let mut columns: Vec<(Arc<dyn PhysicalExpr>, String)> = (schema.fields().iter().enumerate())
        .map(|(i, f)| (Arc::new(Column::new(f.name(), i)) as Arc<dyn PhysicalExpr>, f.name().clone()))
        .collect();
    columns.push((Arc::clone(bucket), BUCKET_COLUMN.to_string()));
    let with_bucket = ProjectionExec::try_new(columns, Arc::clone(input))?;
    let by = Arc::new(Column::new(BUCKET_COLUMN, schema.fields().len()));
    let parts = merge.input().output_partitioning().partition_count().max(1);
    let rows: Arc<dyn ExecutionPlan> =
        Arc::new(RepartitionExec::try_new(Arc::new(with_bucket), Partitioning::Hash(vec![by], parts))?);
    let single = AggregateExec::try_new(
        AggregateMode::SinglePartitioned,
        groups.clone(),
        partial.aggr_expr().to_vec(),
        partial.filter_expr().to_vec(),
        Arc::clone(&rows),
        rows.schema(),
    )?;
    Ok(Some(Arc::new(single)))
}

/// The partial aggregate a merge reads, through the nodes that only move its states.
fn partial_below(plan: &Arc<dyn ExecutionPlan>) -> Option<&AggregateExec> {
    if let Some(partial) = plan.downcast_ref::<AggregateExec>() {
        return (*partial.mode() == AggregateMode::Partial).then_some(partial);
    }
    if !["RepartitionExec", "CoalescePartitionsExec", "CoalesceBatchesExec"].contains(&plan.name()) {
        return None;
    }
    match plan.children().as_slice() {
        [only] => partial_below(only),
        _ => None,
    }
}

/// Whether `expr` is `dpstat_bucket` (of any columns: the guard checks what feeds it).
pub(crate) fn is_bucket(expr: &Arc<dyn PhysicalExpr>) -> bool {
    expr.downcast_ref::<ScalarFunctionExpr>().is_some_and(|f| f.name() == BUCKET)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use ballista_core::execution_plans::sort_shuffle::SortShuffleConfig;
    use ballista_core::execution_plans::SortShuffleWriterExec;
    use ballista_core::JobId;
    use ballista_scheduler::planner::{
        remove_unresolved_shuffles, DefaultDistributedPlanner, DistributedPlanner,
    };
    use datafusion::execution::SessionStateBuilder;
    use datafusion::logical_expr::{col, lit, AggregateUDF, ScalarUDF};
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

    use super::*;
    use crate::data::cluster::function::{encode, BucketFunction, BucketPlan, FoldFunction, Plan};
    use crate::data::cluster::guard::{stage, Output};

    /// A person-level fold of the people fixture (id `region`, value `income`) as the client
    /// sends it, planned in `parts` parts with the rule at the end as the scheduler plans it.
    fn planned(rule: bool, parts: usize) -> (Arc<dyn ExecutionPlan>, ConfigOptions) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let config = SessionConfig::new().with_target_partitions(parts);
            let mut state = SessionStateBuilder::new().with_default_features().with_config(config);
            if rule {
                state = state.with_physical_optimizer_rule(Arc::new(PersonShuffle));
            }
            let ctx = SessionContext::new_with_state(state.build());
            let people = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/people.parquet");
            let frame = ctx.read_parquet(people, ParquetReadOptions::default()).await.unwrap();
            let frame = frame
                .select(vec![
                    lit(0u8).alias("dpstat_rows"),
                    col("region").alias("dpstat_0"),
                    col("income").alias("dpstat_1"),
                ])
                .unwrap();
            let args = vec![col("dpstat_rows"), col("dpstat_0"), col("dpstat_1")];
            let buckets = BucketPlan { width: 2, columns: vec![0, 1], ids: vec![0], key: [7; 16] };
            let bucket = ScalarUDF::from(BucketFunction::new(encode(&buckets).unwrap()));
            let plan = Plan {
                build: String::new(),
                tag: String::new(),
                width: 2,
                columns: vec![0, 1],
                fold: vec![],
            };
            let fold = AggregateUDF::from(FoldFunction::new(encode(&plan).unwrap(), None));
            let frame = frame
                .aggregate(
                    vec![bucket.call(args.clone()).alias("bucket")],
                    vec![fold.call(args).alias("state")],
                )
                .unwrap();
            let options = ctx.state().config().options().as_ref().clone();
            (frame.create_physical_plan().await.unwrap(), options)
        })
    }

    /// The first node of type `T` down `plan`'s first inputs.
    fn first<T: ExecutionPlan + 'static>(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let mut node = Arc::clone(plan);
        while node.downcast_ref::<T>().is_none() {
            node = Arc::clone(node.children()[0]);
        }
        node
    }

    fn shown(plan: &Arc<dyn ExecutionPlan>) -> String {
        displayable(plan.as_ref()).indent(false).to_string()
    }

    /// The stages Ballista cuts `plan` into, each as its executors receive it (shuffles read
    /// from, not yet resolved, left as readers of nothing).
    fn stages(plan: Arc<dyn ExecutionPlan>, options: &ConfigOptions) -> Vec<Arc<dyn ExecutionPlan>> {
        let writers =
            DefaultDistributedPlanner::new().plan_query_stages(&JobId::new("job"), plan, options).unwrap();
        let written: HashMap<usize, HashMap<usize, Vec<_>>> =
            writers.iter().map(|w| (w.stage_id(), HashMap::new())).collect();
        writers
            .into_iter()
            .map(|w| remove_unresolved_shuffles(w.clone_box() as Arc<dyn ExecutionPlan>, &written).unwrap())
            .collect()
    }

    #[test]
    fn a_person_level_fold_reads_rows_shuffled_by_bucket() {
        let (before, _) = planned(false, 4);
        assert!(shown(&before).contains("mode=Partial"), "{}", shown(&before));
        let (plan, options) = planned(true, 4);
        let text = shown(&plan);
        assert!(!text.contains("mode=Partial") && !text.contains("mode=Final"), "{text}");
        assert!(text.contains("mode=SinglePartitioned") && text.contains("Hash([dpstat_bucket@3]"), "{text}");
        // Ballista's stages: rows by bucket, handed to executors only, then the fold's results.
        let stages = stages(plan, &options);
        let outputs: Vec<_> = stages.iter().map(stage).collect();
        assert_eq!(outputs, [Ok(Output::States), Ok(Output::Results)]);
        // Only a whole fold reads the shuffled rows: a partial one would hand them on as states.
        let fold = first::<AggregateExec>(&stages[1]);
        let whole = fold.downcast_ref::<AggregateExec>().unwrap();
        let partial = AggregateExec::try_new(
            AggregateMode::Partial,
            whole.group_expr().clone(),
            whole.aggr_expr().to_vec(),
            whole.filter_expr().to_vec(),
            Arc::clone(whole.input()),
            whole.input_schema(),
        );
        let partial: Arc<dyn ExecutionPlan> = Arc::new(partial.unwrap());
        assert!(stage(&partial).is_err(), "{}", shown(&partial));
    }

    #[test]
    fn in_one_part_the_rows_meet_one_fold_without_a_shuffle() {
        // One part: DataFusion plans one fold over the rows (mode Single), which the rule
        // leaves as it is: no partial state is made, and the one stage hands on results.
        let (plan, options) = planned(true, 1);
        let text = shown(&plan);
        assert!(text.contains("mode=Single,") && !text.contains("Partial"), "{text}");
        let outputs: Vec<_> = stages(plan, &options).iter().map(stage).collect();
        assert_eq!(outputs, [Ok(Output::Results)]);
    }

    #[test]
    fn rows_shuffled_by_anything_but_the_bucket_are_refused() {
        let (plan, _) = planned(true, 4);
        // The projection under the shuffle, with the bucket column and a data column.
        let projection = first::<ProjectionExec>(&plan);
        let write = |column: usize| -> Arc<dyn ExecutionPlan> {
            let by = Arc::new(Column::new("c", column));
            let config = SortShuffleConfig::new(true, 8192);
            let writer = SortShuffleWriterExec::try_new(
                JobId::new("job"),
                1,
                Arc::clone(&projection),
                String::new(),
                Partitioning::Hash(vec![by], 4),
                config,
            );
            Arc::new(writer.unwrap())
        };
        assert_eq!(stage(&write(3)), Ok(Output::States));
        for data in [1, 2] {
            assert!(stage(&write(data)).is_err(), "rows by column {data} were written");
        }
    }
}
