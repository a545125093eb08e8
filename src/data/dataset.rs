//! A dataset of many files: the FILE arguments, directories and globs listed into parts in one
//! order, the format they share (CSV or Parquet), and hive-style partitions
//! (`year=2025/month=03/part-0.parquet`) as columns after the files' own.
//!
//! The listing is a function of the file system, which is data (a partition directory exists
//! because some row has its value): nothing here refuses a listing for what it holds beyond
//! its shape (formats mixed, partitions that differ, a file listed twice), an empty one is a
//! dataset of no rows, a file of 0 bytes an empty part, and under a ledger a refusal names the
//! FILE arguments, never a path below them ([`Naming`]).

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::Result;

use crate::error::{bad_input, shown, shown_path};

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
    /// None for a listing of no files (or only files of 0 bytes).
    pub format: Option<Format>,
    /// How many files of 0 bytes were left out (empty parts).
    pub empty: usize,
}

/// Whether a path argument is a glob pattern (one the shell did not expand).
pub fn is_glob(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.contains(['*', '?', '[']))
}

/// Whether the file starts with Parquet's magic bytes; `shown` names it in messages.
pub fn is_parquet(path: &Path, shown: &str) -> Result<bool> {
    let mut head = [0u8; 4];
    let mut file = File::open(path).map_err(|e| bad_input(format!("cannot open {shown}: {e}")))?;
    let mut got = 0;
    while got < 4 {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(bad_input(format!("{shown}: reading: {e}"))),
        }
    }
    Ok(got == 4 && head == *b"PAR1")
}

/// How the refusals of a listing and of its files, before the charge, name a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// By its path: without a ledger, whoever runs dpstat may read the files anyway, and the
    /// path says which one to fix.
    Paths,
    /// By the FILE argument that listed it (`a file under DIR`, `a file matched by GLOB`, or the
    /// argument itself when it is the file): under a ledger, a path below a directory or a
    /// glob's folder names partition values and which files exist, which are data (DESIGN §10).
    Arguments,
}

/// How a file was found by its FILE argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    /// The argument is the file.
    Given,
    /// Under the argument, a directory.
    Under,
    /// By the argument, a glob.
    Matched,
}

/// A file found by a FILE argument.
struct Found {
    path: PathBuf,
    /// Its folders below the directory or the glob's folder: where its partitions are read.
    folders: PathBuf,
    /// The index of the FILE argument that listed it.
    argument: usize,
    how: How,
}

impl Found {
    /// How messages name the file (see [`Naming`]). A path found in a directory or by a glob
    /// is the data's own text, escaped as a cell would be (`error::shown`): a file's name can
    /// hold bytes that drive a terminal.
    fn shown(&self, arguments: &[PathBuf], naming: Naming) -> String {
        let argument = shown_path(&arguments[self.argument]);
        match (naming, self.how) {
            (Naming::Paths, _) | (_, How::Given) => shown_path(&self.path),
            (Naming::Arguments, How::Under) => format!("a file under {argument}"),
            (Naming::Arguments, How::Matched) => format!("a file matched by {argument}"),
        }
    }
}

/// Lists the parts of the FILE arguments: a file is one part; a directory is every file under
/// it, in path order, leaving out names that start with `.` or `_` (`_SUCCESS`, `.crc` files)
/// and descending into every folder; a glob is every path it matches, in path order, each
/// listed so. Partitions are read from the `name=value` folders between the directory (or the
/// glob's folder before its first pattern) and the file. A file of 0 bytes is an empty part
/// (writers leave one for a partition of no rows): it holds no row and no format, and is left
/// out. A file listed twice (the same path, a link, a file given and under a directory given)
/// is refused: its rows would be counted twice. Refusals name files as `naming` says.
pub fn list(paths: &[PathBuf], naming: Naming) -> Result<Listing> {
    let name = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
    let found = find(paths, naming)?;
    refuse_twice(&found, paths, naming)?;
    let mut parts = Vec::with_capacity(found.len());
    let mut partitions: Option<Vec<String>> = None;
    let mut format = None;
    let mut empty = 0;
    for file in found {
        let shown = file.shown(paths, naming);
        let (names, values) = hive(&file.folders);
        match &partitions {
            None => partitions = Some(names),
            Some(first) if *first != names => {
                return Err(bad_input(format!(
                    "{shown}: its partition folders ({}) differ from the first file's ({}); every file \
                     of a dataset must sit under the same name=value folders",
                    describe(&names),
                    describe(first)
                )))
            }
            Some(_) => {}
        }
        if std::fs::metadata(&file.path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            empty += 1;
            continue;
        }
        // A pipe, socket or device found in a folder or by a glob: opening a pipe that no one
        // writes would wait forever. One given by name is read (`<(…)` gives a pipe).
        if file.how != How::Given && std::fs::metadata(&file.path).is_ok_and(|m| !m.is_file()) {
            return Err(bad_input(format!(
                "{shown} is not a regular file (a pipe, a socket or a device): a dataset's parts are \
                 files; move it out or name the files"
            )));
        }
        let this = if is_parquet(&file.path, &shown)? { Format::Parquet } else { Format::Csv };
        match format {
            None => format = Some(this),
            Some(f) if f != this => {
                return Err(bad_input(format!(
                    "{name}: mixes CSV and Parquet files ({shown} is {}); give the files of one format",
                    if this == Format::Parquet { "Parquet" } else { "CSV" }
                )))
            }
            Some(_) => {}
        }
        parts.push(Part { shown, path: file.path, partition: values });
    }
    Ok(Listing { name, parts, partitions: partitions.unwrap_or_default(), format, empty })
}

/// Every file the FILE arguments list, in their order and each in path order.
fn find(paths: &[PathBuf], naming: Naming) -> Result<Vec<Found>> {
    let mut found: Vec<Found> = Vec::new();
    for (argument, path) in paths.iter().enumerate() {
        let mut add =
            |path: PathBuf, folders: PathBuf, how: How| found.push(Found { path, folders, argument, how });
        if path.is_dir() {
            for (file, folders) in walk(path, naming)? {
                add(file, folders, How::Under);
            }
        } else if path.exists() || !is_glob(path) {
            // A file, or one that does not exist: opening it says which.
            add(path.clone(), PathBuf::new(), How::Given);
        } else {
            let root = glob_root(path);
            for file in glob_files(path, naming)? {
                let under = file.strip_prefix(&root).map(Path::to_path_buf).unwrap_or_default();
                let folders = under.parent().map(Path::to_path_buf).unwrap_or_default();
                add(file, folders, How::Matched);
            }
        }
    }
    Ok(found)
}

/// Refuses a file that two paths of the listing name (the same path twice, a link to another,
/// a file given and found under a directory given): every row of it would be read twice.
/// Files are the same when they are one file system object (device and inode), else one
/// canonical path; a path that cannot be examined is left to fail when it is opened.
fn refuse_twice(found: &[Found], arguments: &[PathBuf], naming: Naming) -> Result<()> {
    let mut seen = std::collections::HashMap::new();
    for (i, file) in found.iter().enumerate() {
        let Some(key) = identity(&file.path) else { continue };
        if let Some(&first) = seen.get(&key) {
            let (first, again): (&Found, &Found) = (&found[first], file);
            let (a, b) = (first.shown(arguments, naming), again.shown(arguments, naming));
            let also = if a == b { String::new() } else { format!(" (also as {a})") };
            return Err(bad_input(format!(
                "{b}: listed twice{also}; its rows would be counted twice: give each file once"
            )));
        }
        seen.insert(key, i);
    }
    Ok(())
}

/// What makes two paths the same file.
#[cfg(unix)]
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// What makes two paths the same file.
#[cfg(not(unix))]
fn identity(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// The files a glob matches, in path order: every file under a folder it matches, and every
/// file it matches but those whose name starts with `.` or `_`.
fn glob_files(pattern: &Path, naming: Naming) -> Result<Vec<PathBuf>> {
    let text = pattern.to_str().unwrap_or_default();
    let entries =
        glob::glob(text).map_err(|e| bad_input(format!("the pattern '{}': {e}", shown(text, 80))))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| match naming {
            Naming::Paths => bad_input(format!("{text}: {e}")),
            Naming::Arguments => {
                bad_input(format!("{text}: a folder it matches cannot be read: {}", e.error()))
            }
        })?;
        if entry.is_dir() {
            files.extend(walk_as(&entry, pattern, naming)?.into_iter().map(|(file, _)| file));
        } else if !hidden(&entry) {
            files.push(entry);
        }
    }
    Ok(files)
}

/// How a message that names `part` names `first`, another part: by its own name, or as
/// `another file under DIR` when both are named by the same argument (under a ledger).
pub fn other(first: &Part, part: &Part) -> String {
    match first.shown == part.shown {
        true => format!("another {}", first.shown.strip_prefix("a ").unwrap_or(&first.shown)),
        false => first.shown.clone(),
    }
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
fn walk(dir: &Path, naming: Naming) -> Result<Vec<(PathBuf, PathBuf)>> {
    walk_as(dir, dir, naming)
}

/// [`walk`], for a directory that `argument` (itself, or a glob that matched it) listed.
fn walk_as(dir: &Path, argument: &Path, naming: Naming) -> Result<Vec<(PathBuf, PathBuf)>> {
    /// `above`: the folders `dir` is in, as their real paths. A folder linked back to one of them
    /// is a loop, refused: two such links made the walk branch without end.
    fn go(
        root: &Path,
        dir: &Path,
        say: &dyn Fn(&Path) -> String,
        above: &mut Vec<PathBuf>,
        out: &mut Vec<(PathBuf, PathBuf)>,
    ) -> Result<()> {
        let real =
            std::fs::canonicalize(dir).map_err(|e| bad_input(format!("cannot list {}: {e}", say(dir))))?;
        if above.contains(&real) {
            return Err(bad_input(format!(
                "{} is a link back to a folder above it (a loop of symbolic links): remove the link",
                say(dir)
            )));
        }
        above.push(real);
        let read = std::fs::read_dir(dir).map_err(|e| bad_input(format!("cannot list {}: {e}", say(dir))))?;
        let mut entries: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for entry in entries {
            if hidden(&entry) {
                continue;
            }
            if entry.is_dir() {
                go(root, &entry, say, above, out)?;
            } else {
                let under = entry.strip_prefix(root).ok().and_then(Path::parent).map(Path::to_path_buf);
                out.push((entry.clone(), under.unwrap_or_default()));
            }
        }
        above.pop();
        Ok(())
    }
    // Under a ledger a folder below the argument is named by the argument only.
    let say = |folder: &Path| match naming {
        Naming::Arguments if folder != argument => format!("a folder under {}", shown_path(argument)),
        _ => shown_path(folder),
    };
    let mut out = Vec::new();
    go(dir, dir, &say, &mut Vec::new(), &mut out)?;
    Ok(out)
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
        let listing = list(&[dir.path().to_path_buf()], Naming::Paths).unwrap();
        let names: Vec<_> =
            listing.parts.iter().map(|p| p.path.strip_prefix(dir.path()).unwrap().to_path_buf()).collect();
        assert_eq!(names, ["b=1/p.csv", "b=1/q.csv", "b=2/p.csv"].map(PathBuf::from));
        assert_eq!(listing.partitions, ["b"]);
        assert_eq!(listing.parts[2].partition, [b"2".to_vec()]);
        assert_eq!(listing.format, Some(Format::Csv));
        let pattern = dir.path().join("b=*/p.csv");
        let globbed = list(&[pattern], Naming::Paths).unwrap();
        assert_eq!(globbed.parts.len(), 2);
        assert_eq!(globbed.partitions, ["b"]);
        let empty = list(&[dir.path().join("c=*/*.csv")], Naming::Paths).unwrap();
        assert!(empty.parts.is_empty() && empty.format.is_none());
    }

    /// Under a ledger a part is named by its argument; a file of 0 bytes is left out, counted.
    #[test]
    fn parts_are_named_by_their_argument_and_empty_files_left_out() {
        let dir = tempfile::tempdir().unwrap();
        for (f, bytes) in [("k=v1/p.csv", "x\n1\n"), ("k=v2/p.csv", ""), ("k=v3/p.csv", "x\n2\n")] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let listing = list(&[dir.path().to_path_buf()], Naming::Arguments).unwrap();
        let under = format!("a file under {}", dir.path().display());
        assert_eq!(listing.parts.iter().map(|p| p.shown.as_str()).collect::<Vec<_>>(), [&under, &under]);
        assert_eq!(listing.parts[1].partition, [b"v3".to_vec()]);
        assert_eq!(listing.empty, 1);
        let pattern = dir.path().join("k=*/p.csv");
        let globbed = list(std::slice::from_ref(&pattern), Naming::Arguments).unwrap();
        assert_eq!(globbed.parts[0].shown, format!("a file matched by {}", pattern.display()));
        let file = dir.path().join("k=v1/p.csv");
        let given = list(std::slice::from_ref(&file), Naming::Arguments).unwrap();
        assert_eq!(given.parts[0].shown, file.display().to_string());
        let twice = list(&[pattern, file], Naming::Arguments).unwrap_err().to_string();
        assert!(twice.contains("p.csv: listed twice (also as a file matched by"), "{twice}");
    }

    #[test]
    fn partitions_that_differ_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b=1/p.csv", "q.csv"] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x\n1\n").unwrap();
        }
        let err = list(&[dir.path().to_path_buf()], Naming::Paths).unwrap_err().to_string();
        assert!(err.contains("partition folders"), "{err}");
    }
}
