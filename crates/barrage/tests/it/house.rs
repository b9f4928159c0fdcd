//! The shape of the house (issue 25), checked so it cannot drift back: the binary's folders
//! import only downward, no file of the binary is over 600 lines, ARCHITECTURE.md stays a map of
//! at most 160 lines, every crate's integration tests are one binary (`tests/it/`), and no
//! module outside test code imports its parent with `use super::*;` (issue 44).

use std::path::{Path, PathBuf};

/// The binary's layers, highest first: a file may import its own layer and those below it.
const LAYERS: [&[&str]; 6] = [
    &["cmd"],
    &["shard"],
    &["run"],
    &["resolve"],
    &["sinks"],
    &["sys", "usage", "units"],
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&name))
}

/// The first path segment after `crate::` at every use in `text`.
fn crate_paths(text: &str) -> Vec<String> {
    text.match_indices("crate::")
        .filter(|(i, _)| {
            // `barrage_report::`-like names end in `crate` only as `_crate`: skip those.
            *i == 0
                || !text.as_bytes()[i - 1].is_ascii_alphanumeric() && text.as_bytes()[i - 1] != b'_'
        })
        .map(|(i, m)| {
            text[i + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn the_binarys_folders_import_only_downward() {
    let src = root().join("crates/barrage/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let own = top.trim_end_matches(".rs");
        let Some(mine) = layer_of(own) else {
            assert_eq!(
                own,
                "main",
                "{} is in no layer: add it to LAYERS",
                rel.display()
            );
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for target in crate_paths(&text) {
            if let Some(theirs) = layer_of(&target) {
                if theirs < mine {
                    upward.push(format!("{} -> crate::{target}", rel.display()));
                }
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports up a layer:\n{}",
        upward.join("\n")
    );
    assert!(
        files.len() > 40,
        "found only {} files under {}",
        files.len(),
        src.display()
    );
}

#[test]
fn no_file_of_the_binary_is_over_600_lines() {
    let src = root().join("crates/barrage/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 600).then(|| format!("{}: {n} lines", f.strip_prefix(&src).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "split these:\n{}", long.join("\n"));
}

#[test]
fn architecture_md_is_a_map_of_at_most_160_lines() {
    let n = std::fs::read_to_string(root().join("ARCHITECTURE.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        n <= 160,
        "ARCHITECTURE.md has {n} lines: move detail to docs/"
    );
}

#[test]
fn each_crates_integration_tests_are_one_binary() {
    let mut loose = Vec::new();
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        let tests = krate.unwrap().path().join("tests");
        let Ok(entries) = std::fs::read_dir(&tests) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rs") {
                loose.push(p.display().to_string());
            }
        }
    }
    assert!(loose.is_empty(), "move into tests/it/: {loose:?}");
}

/// The 1-based numbers of the lines of `text` that glob-import the parent (`use super::*;`,
/// with any visibility) before its first `#[cfg(test)]` line: test code is what follows that
/// line (a file's test module is at its end).
fn parent_globs(text: &str) -> Vec<usize> {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            l == "use super::*;" || (l.starts_with("pub") && l.ends_with(" use super::*;"))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// No `use super::*;` in any crate's `src` outside test code: a module names what it takes from
/// its parent (`use super::{A, B}`) and takes the rest from where it lives (`use std::...`,
/// `use crate::x::Y`), so that each file says where its names come from. The rule is plain text:
/// test code is a file named `tests.rs`, or the lines of a file after its first `#[cfg(test)]`
/// line ([`parent_globs`]).
#[test]
fn no_module_outside_tests_imports_its_parent_with_a_glob() {
    let crates = root().join("crates");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let mut globs = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("tests.rs")) {
        let text = std::fs::read_to_string(f).unwrap();
        for line in parent_globs(&text) {
            globs.push(format!(
                "{}:{line}",
                f.strip_prefix(&crates).unwrap().display()
            ));
        }
    }
    globs.sort();
    assert!(
        globs.is_empty(),
        "name what these import (use super::{{A, B}}, or the name's own home) instead of \
         `use super::*;`:\n{}",
        globs.join("\n")
    );
    assert!(
        files.len() > 200,
        "found only {} files under {}",
        files.len(),
        crates.display()
    );
}

#[test]
fn parent_globs_stop_at_the_first_cfg_test() {
    let t = "use super::*;\nmod imp {\n    pub(crate) use super::*;\n}\n// use super::*;\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    assert_eq!(parent_globs(t), vec![1, 3]);
}

#[test]
fn crate_paths_reads_the_segment_after_crate() {
    let t = "use crate::run::Source;\nlet x = barrage_crate::y; crate::sys::now();";
    assert_eq!(crate_paths(t), vec!["run", "sys"]);
}
