//! With `--features cluster`: `DPSTAT_SOURCE_HASH`, a hash of the sources and the lock file. A
//! client and its executors must run the same build (a fold's bytes mean the same only to the
//! same code), and the version number alone does not change between commits.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_CLUSTER").is_none() {
        println!("cargo:rustc-env=DPSTAT_SOURCE_HASH=");
        return;
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.lock");
    let mut paths = vec![PathBuf::from("Cargo.lock")];
    files(Path::new("src"), &mut paths);
    paths.sort();
    let mut hasher = DefaultHasher::new();
    for path in paths {
        path.hash(&mut hasher);
        std::fs::read(&path).unwrap_or_default().hash(&mut hasher);
    }
    println!("cargo:rustc-env=DPSTAT_SOURCE_HASH={:016x}", hasher.finish());
}
