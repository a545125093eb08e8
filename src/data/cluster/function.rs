//! The aggregate a cluster executor runs: `dpstat_fold`, whose definition is the query's empty
//! fold. It folds each batch with the query's own per-row code (the same `Fold::row` a local
//! scan calls, over the same cells a Parquet scan reads), and its partial state is the folded
//! state, merged with the fold's own `merge`. Both travel as bytes inside Ballista's plans and
//! shuffles, through the codecs below; nothing else about a query leaves the client.
//!
//! With `--privacy-id` the rows are grouped by `dpstat_bucket`, the bucket of their person
//! (the seeded hash of the id cells, as `data::bound` buckets them): each bucket's fold is a
//! `Bounded` fold that chooses its persons' rows once all of them met, and sends back the
//! query's fold of the kept rows. The scheduler plans it so that the rows reach that fold
//! through the shuffle as rows ([`super::persons`]).
//!
//! `dpstat_probe` is the check before the charge: run on one executor over one row, it answers
//! with the executor's build and the first data file it cannot open.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, BinaryArray, UInt32Array};
use arrow_schema::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue, TableReference};
use datafusion::datasource::TableProvider;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Extension, LogicalPlan, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use serde::{Deserialize, Serialize};

use crate::data::bound::{Bounded, Failure, PersonBuckets};
use crate::data::parquet;
use crate::data::row::{BadCell, Fold};

/// The aggregate's name in plans.
pub const FOLD: &str = "dpstat_fold";
/// The person-bucket function's name in plans.
pub const BUCKET: &str = "dpstat_bucket";
/// The probe's name in plans.
pub const PROBE: &str = "dpstat_probe";
/// What starts an executor's error about a refused cell, so the client can name the column.
pub const BAD_CELL: &str = "dpstat-bad-cell";

/// This build, as executors must match it: a fold's bytes mean the same only to the same code.
pub fn build() -> String {
    format!("{} {}", env!("CARGO_PKG_VERSION"), env!("DPSTAT_SOURCE_HASH"))
}

/// What a query ships to the executors: the empty fold, its type, and where its columns are.
#[derive(Serialize, Deserialize)]
pub struct Plan {
    pub build: String,
    /// `std::any::type_name` of the fold: the executor's [`Registry`] finds its decoder by it.
    pub tag: String,
    /// The dataset's width, and the dataset column each argument after the first holds.
    pub width: usize,
    pub columns: Vec<usize>,
    pub fold: Vec<u8>,
}

/// A fold and the rows it saw: the aggregate's state and its result.
#[derive(Serialize, Deserialize)]
pub struct Folded<F> {
    pub rows: u64,
    pub fold: F,
}

/// A bucket of persons once their rows were chosen: the query's fold of the kept rows, and the
/// persons who had rows dropped (`--count-truncated`).
#[derive(Serialize, Deserialize)]
pub struct Finished<G> {
    pub rows: u64,
    pub truncated: u64,
    pub fold: G,
}

/// What `dpstat_bucket` needs: where the id columns are, and the run's selection key.
#[derive(Serialize, Deserialize)]
pub struct BucketPlan {
    pub width: usize,
    pub columns: Vec<usize>,
    pub ids: Vec<usize>,
    pub key: [u8; 16],
}

/// The probe's definition: the client's build and the files every executor must read.
#[derive(Serialize, Deserialize)]
pub struct Probe {
    pub build: String,
    pub paths: Vec<String>,
}

pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    bincode::serde::encode_to_vec(value, bincode::config::standard()).map_err(|e| e.to_string())
}

pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    match bincode::serde::decode_from_slice(bytes, bincode::config::standard()) {
        Ok((value, read)) if read == bytes.len() => Ok(value),
        Ok(_) => Err("trailing bytes".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// A fold of a type known only at run time.
pub trait Erased: Send {
    /// Folds a batch: `arrays` after the first argument (which only gives the row count).
    fn batch(&mut self, plan: &Plan, arrays: &[ArrayRef]) -> Result<(), BadCell>;
    fn merge_bytes(&mut self, bytes: &[u8]) -> Result<(), String>;
    /// The state to merge elsewhere.
    fn to_bytes(&self) -> Result<Vec<u8>, String>;
    /// The result: the state itself, or for persons the fold of their kept rows.
    fn result(&mut self) -> Result<Vec<u8>, String> {
        self.to_bytes()
    }
    fn heap_bytes(&self) -> usize;
}

/// The message of a refused cell, for the client to name its column.
pub fn refused(bad: &BadCell) -> String {
    format!("{BAD_CELL} {} {}", bad.column, bad.why)
}

fn fold_batch<F: Fold>(plan: &Plan, arrays: &[ArrayRef], fold: &mut F) -> Result<u64, BadCell> {
    let rows = arrays.first().map_or(0, |a| a.len());
    let rest = arrays.get(1..).unwrap_or_default();
    parquet::fold_arrays(plan.width, &plan.columns, rest, rows, fold).map_err(|(_, bad)| bad)
}

impl<F: Fold> Erased for Folded<F> {
    fn batch(&mut self, plan: &Plan, arrays: &[ArrayRef]) -> Result<(), BadCell> {
        self.rows += fold_batch(plan, arrays, &mut self.fold)?;
        Ok(())
    }

    fn merge_bytes(&mut self, bytes: &[u8]) -> Result<(), String> {
        let other: Folded<F> = decode(bytes)?;
        self.rows += other.rows;
        self.fold.merge(other.fold);
        Ok(())
    }

    fn to_bytes(&self) -> Result<Vec<u8>, String> {
        encode(self)
    }

    fn heap_bytes(&self) -> usize {
        self.fold.heap_bytes()
    }
}

/// The rows of one bucket of persons, held until all of them met, then chosen.
struct PersonFolded<G: Fold> {
    rows: u64,
    fold: Bounded<G>,
}

impl<G: Fold> Erased for PersonFolded<G> {
    fn batch(&mut self, plan: &Plan, arrays: &[ArrayRef]) -> Result<(), BadCell> {
        self.rows += fold_batch(plan, arrays, &mut self.fold)?;
        Ok(())
    }

    fn merge_bytes(&mut self, bytes: &[u8]) -> Result<(), String> {
        let other: Folded<Bounded<G>> = decode(bytes)?;
        self.rows += other.rows;
        self.fold.merge(other.fold);
        Ok(())
    }

    fn to_bytes(&self) -> Result<Vec<u8>, String> {
        encode(&Folded { rows: self.rows, fold: &self.fold })
    }

    fn result(&mut self) -> Result<Vec<u8>, String> {
        let empty = self.fold.clone();
        let (fold, truncated) =
            std::mem::replace(&mut self.fold, empty).finish_own().map_err(|f| match f {
                Failure::Cell(bad) => refused(&bad),
                Failure::Temp(why) => why,
            })?;
        encode(&Finished { rows: self.rows, truncated, fold })
    }

    fn heap_bytes(&self) -> usize {
        self.fold.heap_bytes()
    }
}

type Decoder = fn(&[u8]) -> Result<Box<dyn Erased>, String>;

/// The fold types an executor can run, by tag: every fold a command hands the engine
/// (`query::cluster_folds` and `cmd` fill it).
#[derive(Default)]
pub struct Registry {
    decoders: HashMap<&'static str, Decoder>,
}

impl Registry {
    pub fn add<F: Fold>(&mut self) {
        fn decoder<F: Fold>(bytes: &[u8]) -> Result<Box<dyn Erased>, String> {
            Ok(Box::new(Folded::<F> { rows: 0, fold: decode(bytes)? }))
        }
        self.decoders.insert(std::any::type_name::<F>(), decoder::<F>);
    }

    /// A fold of persons' kept rows: its `Bounded` form travels, its result is `G`.
    pub fn add_persons<G: Fold>(&mut self) {
        fn decoder<G: Fold>(bytes: &[u8]) -> Result<Box<dyn Erased>, String> {
            Ok(Box::new(PersonFolded::<G> { rows: 0, fold: decode(bytes)? }))
        }
        self.decoders.insert(std::any::type_name::<Bounded<G>>(), decoder::<G>);
    }

    fn decode(&self, plan: &Plan) -> Result<Box<dyn Erased>, String> {
        if plan.build != build() {
            return Err(format!("this executor runs dpstat {}, the client {}", build(), plan.build));
        }
        let decoder = self.decoders.get(plan.tag.as_str()).ok_or_else(|| format!("no fold {}", plan.tag))?;
        decoder(&plan.fold)
    }
}

fn failed(why: impl fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("dpstat: {why}"))
}

/// `dpstat_fold`: its bytes are a [`Plan`]; the registry is set where the function runs (an
/// executor), absent where it is only planned (client, scheduler).
#[derive(Clone)]
pub struct FoldFunction {
    plan: Arc<Vec<u8>>,
    registry: Option<Arc<Registry>>,
    signature: Signature,
}

impl FoldFunction {
    pub fn new(plan: Vec<u8>, registry: Option<Arc<Registry>>) -> FoldFunction {
        FoldFunction {
            plan: Arc::new(plan),
            registry,
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

impl fmt::Debug for FoldFunction {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{FOLD}({} bytes)", self.plan.len())
    }
}

impl PartialEq for FoldFunction {
    fn eq(&self, other: &Self) -> bool {
        self.plan == other.plan
    }
}

impl Eq for FoldFunction {}

impl Hash for FoldFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.plan.hash(state);
    }
}

fn state_field(name: &str) -> FieldRef {
    Arc::new(Field::new(format!("{name}_state"), DataType::Binary, true))
}

impl AggregateUDFImpl for FoldFunction {
    fn name(&self) -> &str {
        FOLD
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Binary)
    }
    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        Ok(vec![state_field(args.name)])
    }
    fn accumulator(&self, _: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        let registry = self.registry.as_ref().ok_or_else(|| failed("this process has no dpstat folds"))?;
        let plan: Plan = decode(&self.plan).map_err(failed)?;
        let fold = registry.decode(&plan).map_err(failed)?;
        Ok(Box::new(FoldAccumulator { plan, fold: Mutex::new(fold) }))
    }
}

struct FoldAccumulator {
    plan: Plan,
    /// A Mutex only for `Sync`: one task owns the accumulator.
    fold: Mutex<Box<dyn Erased>>,
}

impl fmt::Debug for FoldAccumulator {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{FOLD} accumulator of {}", self.plan.tag)
    }
}

impl FoldAccumulator {
    fn fold(&self) -> std::sync::MutexGuard<'_, Box<dyn Erased>> {
        self.fold.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn bytes(&self) -> DfResult<ScalarValue> {
        Ok(ScalarValue::Binary(Some(self.fold().to_bytes().map_err(failed)?)))
    }
}

impl Accumulator for FoldAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let plan = &self.plan;
        self.fold().batch(plan, values).map_err(|bad| failed(refused(&bad)))
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let Some(states) = states.first() else { return Ok(()) };
        let states = states
            .as_any()
            .downcast_ref::<BinaryArray>()
            .ok_or_else(|| failed("a fold's state is not binary"))?;
        let mut fold = self.fold();
        for state in states.iter().flatten() {
            fold.merge_bytes(state).map_err(failed)?;
        }
        Ok(())
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![self.bytes()?])
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        Ok(ScalarValue::Binary(Some(self.fold().result().map_err(failed)?)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.fold().heap_bytes()
    }
}

/// `dpstat_bucket`: its bytes are a [`BucketPlan`]; the bucket of each row's person.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BucketFunction {
    plan: Arc<Vec<u8>>,
    signature: Signature,
}

impl BucketFunction {
    pub fn new(plan: Vec<u8>) -> BucketFunction {
        BucketFunction { plan: Arc::new(plan), signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for BucketFunction {
    fn name(&self) -> &str {
        BUCKET
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::UInt32)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let plan: BucketPlan = decode(&self.plan).map_err(failed)?;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut buckets = PersonBuckets::new(plan.ids, &plan.key);
        let mut out = Vec::with_capacity(args.number_rows);
        let rest = arrays.get(1..).unwrap_or_default();
        parquet::each_row_of_arrays(plan.width, &plan.columns, rest, args.number_rows, |row| {
            out.push(buckets.bucket(row) as u32);
            Ok(())
        })
        .map_err(|(_, bad)| failed(refused(&bad)))?;
        Ok(ColumnarValue::Array(Arc::new(UInt32Array::from(out))))
    }
}

/// `dpstat_probe`: its bytes are a [`Probe`]; it answers with this process's build, or the
/// first file it cannot open, as text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProbeFunction {
    probe: Arc<Vec<u8>>,
    signature: Signature,
}

impl ProbeFunction {
    pub fn new(probe: Vec<u8>) -> ProbeFunction {
        ProbeFunction { probe: Arc::new(probe), signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for ProbeFunction {
    fn name(&self) -> &str {
        PROBE
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }
    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format!("{}_state", args.name), DataType::Utf8, true))])
    }
    fn accumulator(&self, _: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        let probe: Probe = decode(&self.probe).map_err(failed)?;
        Ok(Box::new(ProbeAccumulator { answer: answer(&probe) }))
    }
}

/// What this executor says to a probe: its build, then the first path it cannot read, if any.
fn answer(probe: &Probe) -> String {
    let unreadable = probe.paths.iter().find_map(|path| {
        std::fs::File::open(path).and_then(|f| f.metadata()).err().map(|e| format!("{path}: {e}"))
    });
    match unreadable {
        Some(why) => format!("{}\n{why}", build()),
        None => build(),
    }
}

#[derive(Debug)]
struct ProbeAccumulator {
    answer: String,
}

impl Accumulator for ProbeAccumulator {
    fn update_batch(&mut self, _: &[ArrayRef]) -> DfResult<()> {
        Ok(())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        // The probe runs over one row: a state from elsewhere is that row's executor's answer.
        if let Some(answer) =
            states.first().and_then(|s| s.as_any().downcast_ref::<arrow_array::StringArray>())
        {
            if let Some(first) = answer.iter().flatten().next() {
                self.answer = first.to_string();
            }
        }
        Ok(())
    }
    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Utf8(Some(self.answer.clone()))])
    }
    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        Ok(ScalarValue::Utf8(Some(self.answer.clone())))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.answer.len()
    }
}

/// Decodes dpstat's two functions from their bytes; `None` for another name.
fn decode_function(name: &str, buf: &[u8], registry: &Option<Arc<Registry>>) -> Option<Arc<AggregateUDF>> {
    match name {
        FOLD => Some(Arc::new(AggregateUDF::from(FoldFunction::new(buf.to_vec(), registry.clone())))),
        PROBE => Some(Arc::new(AggregateUDF::from(ProbeFunction::new(buf.to_vec())))),
        _ => None,
    }
}

fn decode_scalar(name: &str, buf: &[u8]) -> Option<Arc<ScalarUDF>> {
    (name == BUCKET).then(|| Arc::new(ScalarUDF::from(BucketFunction::new(buf.to_vec()))))
}

fn encode_scalar(node: &ScalarUDF, buf: &mut Vec<u8>) {
    let inner: &dyn Any = node.inner().as_ref();
    if let Some(bucket) = inner.downcast_ref::<BucketFunction>() {
        buf.extend_from_slice(&bucket.plan);
    }
}

/// Writes dpstat's functions' bytes into a plan.
fn encode_function(node: &AggregateUDF, buf: &mut Vec<u8>) {
    let inner: &dyn Any = node.inner().as_ref();
    if let Some(fold) = inner.downcast_ref::<FoldFunction>() {
        buf.extend_from_slice(&fold.plan);
    } else if let Some(probe) = inner.downcast_ref::<ProbeFunction>() {
        buf.extend_from_slice(&probe.probe);
    }
}

/// Ballista's logical codec, plus dpstat's functions.
#[derive(Debug)]
pub struct LogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl Default for LogicalCodec {
    fn default() -> Self {
        LogicalCodec { inner: Arc::new(ballista_core::serde::BallistaLogicalExtensionCodec::default()) }
    }
}

impl LogicalExtensionCodec for LogicalCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> DfResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }
    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode(node, buf)
    }
    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: arrow_schema::SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        self.inner.try_decode_table_provider(buf, table_ref, schema, ctx)
    }
    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        self.inner.try_encode_table_provider(table_ref, node, buf)
    }
    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn datafusion::datasource::file_format::FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }
    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn datafusion::datasource::file_format::FileFormatFactory>,
    ) -> DfResult<()> {
        self.inner.try_encode_file_format(buf, node)
    }
    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        match decode_scalar(name, buf) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udf(name, buf),
        }
    }
    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        encode_scalar(node, buf);
        Ok(())
    }
    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        match decode_function(name, buf, &None) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udaf(name, buf),
        }
    }
    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        encode_function(node, buf);
        Ok(())
    }
}

/// Ballista's physical codec, plus dpstat's functions; on an executor it carries the folds.
#[derive(Debug)]
pub struct PhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
    registry: Option<Arc<Registry>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} folds", self.decoders.len())
    }
}

impl PhysicalCodec {
    pub fn new(registry: Option<Arc<Registry>>) -> PhysicalCodec {
        PhysicalCodec {
            inner: Arc::new(ballista_core::serde::BallistaPhysicalExtensionCodec::default()),
            registry,
        }
    }
}

impl PhysicalExtensionCodec for PhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.inner.try_decode(buf, inputs, ctx, converter)
    }
    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        self.inner.try_encode(node, buf, converter)
    }
    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        match decode_scalar(name, buf) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udf(name, buf),
        }
    }
    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        encode_scalar(node, buf);
        Ok(())
    }
    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        match decode_function(name, buf, &self.registry) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udaf(name, buf),
        }
    }
    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        encode_function(node, buf);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::{InvalidPolicy, NumberCell};
    use crate::query::mean::{MeanFold, MeanSpec};
    use arrow_array::{Float64Array, UInt8Array};

    fn mean() -> MeanFold {
        let bounds =
            crate::numeric::grid::GridBounds { grid: crate::numeric::grid::Grid::UNIT, lower: 0, upper: 10 };
        MeanFold::new(
            MeanSpec::AddRemove { bounds, midpoint: 5 },
            NumberCell { index: 1, invalid: InvalidPolicy::Skip },
        )
    }

    fn plan_of(fold: &MeanFold, build: String) -> Plan {
        Plan {
            build,
            tag: std::any::type_name::<MeanFold>().into(),
            width: 2,
            columns: vec![1],
            fold: encode(fold).unwrap(),
        }
    }

    /// An executor folds a batch with the fold's own code, its state merges, and the client reads
    /// back what a local fold of the same values holds.
    #[test]
    fn a_shipped_fold_folds_merges_and_comes_back_equal() {
        let mut registry = Registry::default();
        registry.add::<MeanFold>();
        let plan = plan_of(&mean(), build());
        let values: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None, Some(12.0), Some(4.0)]));
        let rows: ArrayRef = Arc::new(UInt8Array::from(vec![0; 4]));
        let (mut one, mut two) = (registry.decode(&plan).unwrap(), registry.decode(&plan).unwrap());
        one.batch(&plan, &[rows.clone(), values.clone()]).unwrap();
        two.batch(&plan, &[rows, values]).unwrap();
        one.merge_bytes(&two.to_bytes().unwrap()).unwrap();
        let back: Folded<MeanFold> = decode(&one.result().unwrap()).unwrap();
        let mut local = mean();
        for x in [1.0f64, 12.0, 4.0, 1.0, 12.0, 4.0] {
            local.add(x.clamp(0.0, 10.0));
        }
        assert_eq!((back.rows, back.fold.total, back.fold.rows), (8, local.total, local.rows));
    }

    #[test]
    fn another_build_or_an_unknown_fold_is_refused() {
        let mut registry = Registry::default();
        registry.add::<MeanFold>();
        let other = plan_of(&mean(), "0.0.0 other".into());
        assert!(registry.decode(&other).err().unwrap().contains("this executor runs dpstat"));
        let mut unknown = plan_of(&mean(), build());
        unknown.tag = "some::Fold".into();
        assert!(registry.decode(&unknown).is_err());
    }
}
