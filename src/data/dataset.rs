//! A dataset of many files: the FILE arguments, directories and globs listed into parts in one
//! order, the format they share (CSV or Parquet), and hive-style partitions
//! (`year=2025/month=03/part-0.parquet`) as columns after the files' own.
//!
//! The listing is a function of the file system, which is data (a partition directory exists
//! because some row has its value): nothing here refuses a listing for what it holds beyond
//! its shape (formats mixed, partitions that differ), and an empty one is a dataset of no rows.

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::Result;

use crate::error::{bad_input, shown};

/// The value hive writes for a null partition value.
const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// What the files of a dataset hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Parquet,
}

/// One file of a dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub path: PathBuf,
    /// How messages and the fingerprint name it: its path as listed (under the directory or
    /// glob it was found by).
    pub shown: String,
    /// The part's value of each partition column (empty for a null), in [`Listing::partitions`]
    /// order.
    pub partition: Vec<Vec<u8>>,
}

impl Part {
    /// Adds the part's partition values to a fingerprint, each with its length (so that no two
    /// lists of values hash alike).
    pub fn hash_partition(&self, digest: &mut sha2::Sha256) {
        use sha2::Digest;
        for value in &self.partition {
            digest.update((value.len() as u64).to_le_bytes());
            digest.update(value);
        }
    }
}

/// The parts of a dataset, in the order their rows are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// How messages name the dataset: the argument, or the arguments joined.
    pub name: String,
    pub parts: Vec<Part>,
    /// The names of the partition columns, outermost first.
    pub partitions: Vec<String>,
    /// None for a listing of no files.
    pub format: Option<Format>,
}

/// Whether a path argument is a glob pattern (one the shell did not expand).
pub fn is_glob(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.contains(['*', '?', '[']))
}

/// Whether the file starts with Parquet's magic bytes.
pub fn is_parquet(path: &Path) -> Result<bool> {
    let mut head = [0u8; 4];
    let mut file = File::open(path).map_err(|e| bad_input(format!("cannot open {}: {e}", path.display())))?;
    let mut got = 0;
    while got < 4 {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(bad_input(format!("{}: reading: {e}", path.display()))),
        }
    }
    Ok(got == 4 && head == *b"PAR1")
}

/// Lists the parts of the FILE arguments: a file is one part; a directory is every file under
/// it, in path order, leaving out names that start with `.` or `_` (`_SUCCESS`, `.crc` files);
/// a glob is every path it matches, in path order, each listed so. Partitions are read from the
/// `name=value` folders between the directory (or the glob's folder before its first pattern)
/// and the file.
pub fn list(paths: &[PathBuf]) -> Result<Listing> {
    let name = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
    let mut found: Vec<(PathBuf, PathBuf)> = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut found)?;
        } else if path.exists() || !is_glob(path) {
            // A file, or one that does not exist: opening it says which.
            found.push((path.clone(), PathBuf::new()));
        } else {
            let pattern = path.to_str().unwrap_or_default();
            let entries = glob::glob(pattern)
                .map_err(|e| bad_input(format!("the pattern '{}': {e}", shown(pattern, 80))))?;
            let root = glob_root(path);
            let mut matched = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| bad_input(format!("{pattern}: {e}")))?;
                if entry.is_dir() {
                    walk(&entry, &mut matched)?;
                } else if !hidden(&entry) {
                    matched.push((entry, PathBuf::new()));
                }
            }
            for (file, _) in matched {
                let under = file.strip_prefix(&root).map(Path::to_path_buf).unwrap_or_default();
                found.push((file, under.parent().map(Path::to_path_buf).unwrap_or_default()));
            }
        }
    }
    let mut parts = Vec::with_capacity(found.len());
    let mut partitions: Option<Vec<String>> = None;
    let mut format = None;
    for (path, folders) in found {
        let (names, values) = hive(&folders);
        match &partitions {
            None => partitions = Some(names),
            Some(first) if *first != names => {
                return Err(bad_input(format!(
                    "{}: its partition folders ({}) differ from the first file's ({}); every file \
                     of a dataset must sit under the same name=value folders",
                    path.display(),
                    describe(&names),
                    describe(first)
                )))
            }
            Some(_) => {}
        }
        let this = if is_parquet(&path)? { Format::Parquet } else { Format::Csv };
        match format {
            None => format = Some(this),
            Some(f) if f != this => {
                return Err(bad_input(format!(
                    "{name}: mixes CSV and Parquet files ({} is {}); give the files of one format",
                    path.display(),
                    if this == Format::Parquet { "Parquet" } else { "CSV" }
                )))
            }
            Some(_) => {}
        }
        parts.push(Part { shown: path.display().to_string(), path, partition: values });
    }
    Ok(Listing { name, parts, partitions: partitions.unwrap_or_default(), format })
}

fn describe(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        shown(&names.join(", "), 80)
    }
}

/// Names starting with `.` or `_` are the writers' bookkeeping, not data.
fn hidden(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(['.', '_']))
}

/// Every file under `dir`, in path order, with its folder below `dir`.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, PathBuf)>) -> Result<()> {
    fn go(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, PathBuf)>) -> Result<()> {
        let read =
            std::fs::read_dir(dir).map_err(|e| bad_input(format!("cannot list {}: {e}", dir.display())))?;
        let mut entries: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for entry in entries {
            if hidden(&entry) {
                continue;
            }
            if entry.is_dir() {
                go(root, &entry, out)?;
            } else {
                let under = entry.strip_prefix(root).ok().and_then(Path::parent).map(Path::to_path_buf);
                out.push((entry.clone(), under.unwrap_or_default()));
            }
        }
        Ok(())
    }
    go(dir, dir, out)
}

/// The folder a glob's matches are listed under: its components before the first pattern.
fn glob_root(pattern: &Path) -> PathBuf {
    let mut root = PathBuf::new();
    for component in pattern.components() {
        if component.as_os_str().to_str().is_some_and(|c| c.contains(['*', '?', '['])) {
            break;
        }
        root.push(component);
    }
    root
}

/// The partition columns and values of the `name=value` folders of `folders` (other folders
/// are left out); values are percent-decoded as hive writes them, and hive's null is empty.
fn hive(folders: &Path) -> (Vec<String>, Vec<Vec<u8>>) {
    let mut names = Vec::new();
    let mut values = Vec::new();
    for component in folders.components() {
        let Component::Normal(part) = component else { continue };
        let Some((name, value)) = part.to_str().and_then(|p| p.split_once('=')) else { continue };
        if name.is_empty() {
            continue;
        }
        names.push(String::from_utf8_lossy(&percent_decoded(name.as_bytes())).into_owned());
        values.push(if value == HIVE_NULL { Vec::new() } else { percent_decoded(value.as_bytes()) });
    }
    (names, values)
}

fn percent_decoded(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (text[i], text.get(i + 1).and_then(|&b| hex(b)), text.get(i + 2).and_then(|&b| hex(b))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_folders_are_columns() {
        let (names, values) = hive(Path::new("year=2025/x/month=03%2F1/"));
        assert_eq!(names, ["year", "month"]);
        assert_eq!(values, [b"2025".to_vec(), b"03/1".to_vec()]);
        let (_, values) = hive(Path::new("k=__HIVE_DEFAULT_PARTITION__"));
        assert_eq!(values, [Vec::<u8>::new()]);
    }

    #[test]
    fn glob_roots_stop_at_the_first_pattern() {
        assert_eq!(glob_root(Path::new("data/sales/*/part-*.parquet")), PathBuf::from("data/sales"));
        assert_eq!(glob_root(Path::new("*.csv")), PathBuf::new());
    }

    #[test]
    fn directories_list_in_order_without_bookkeeping_files() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b=2/p.csv", "b=1/q.csv", "b=1/p.csv", "b=1/_SUCCESS", "b=1/.p.csv.crc"] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x\n1\n").unwrap();
        }
        let listing = list(&[dir.path().to_path_buf()]).unwrap();
        let names: Vec<_> =
            listing.parts.iter().map(|p| p.path.strip_prefix(dir.path()).unwrap().to_path_buf()).collect();
        assert_eq!(names, ["b=1/p.csv", "b=1/q.csv", "b=2/p.csv"].map(PathBuf::from));
        assert_eq!(listing.partitions, ["b"]);
        assert_eq!(listing.parts[2].partition, [b"2".to_vec()]);
        assert_eq!(listing.format, Some(Format::Csv));
        let pattern = dir.path().join("b=*/p.csv");
        let globbed = list(&[pattern]).unwrap();
        assert_eq!(globbed.parts.len(), 2);
        assert_eq!(globbed.partitions, ["b"]);
        let empty = list(&[dir.path().join("c=*/*.csv")]).unwrap();
        assert!(empty.parts.is_empty() && empty.format.is_none());
    }

    #[test]
    fn partitions_that_differ_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b=1/p.csv", "q.csv"] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x\n1\n").unwrap();
        }
        let err = list(&[dir.path().to_path_buf()]).unwrap_err().to_string();
        assert!(err.contains("partition folders"), "{err}");
    }
}
