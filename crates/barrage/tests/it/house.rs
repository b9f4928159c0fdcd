//! The shape of the house (issue 25), checked so it cannot drift back: the binary's folders
//! import only downward, no module file of any crate is over 600 code lines and no crate has an
//! import circle (but for the ratchet lists [`LONG`] and [`CIRCLES`], which only shrink; issue
//! 44), ARCHITECTURE.md stays a map of at most 160 lines, every crate's integration tests are one
//! binary (`tests/it/`), and no module outside test code imports its parent with `use super::*;`.
//! The imports are read from the files' text by [`imports`].

mod imports;

use imports::{circles, code_lines, Crate};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The binary's layers, highest first: a file may import its own layer and those below it.
const LAYERS: [&[&str]; 7] = [
    &["cmd"],
    &["shard"],
    &["run"],
    &["resolve"],
    &["probe"],
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

/// Every crate under `crates/`, by folder name, with its module files.
fn crates() -> Vec<(String, Crate)> {
    let mut out: Vec<(String, Crate)> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, Crate::load(&p.join("src")))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A file of the binary imports from its own layer and those below only. The imports are read
/// by [`imports::imports`]: `use crate::..` lines (grouped or not), `super::` paths, paths inline
/// in code, `pub use`, each resolved to the module file it names; test code does not count.
#[test]
fn the_binarys_folders_import_only_downward() {
    let krate = Crate::load(&root().join("crates/barrage/src"));
    let top = |f: usize| krate.files[f].module.first().cloned();
    for f in 0..krate.files.len() {
        if let Some(t) = top(f) {
            assert!(
                layer_of(&t).is_some(),
                "{} is in no layer: add {t} to LAYERS",
                krate.name(f)
            );
        }
    }
    let mut upward: Vec<String> = krate
        .edges()
        .into_iter()
        .filter(|e| {
            let (Some(a), Some(b)) = (top(e.from), top(e.to)) else {
                return false;
            };
            layer_of(&b) < layer_of(&a)
        })
        .map(|e| format!("{} -> {} ({})", krate.name(e.from), krate.name(e.to), e.via))
        .collect();
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports up a layer:\n{}",
        upward.join("\n")
    );
    assert!(
        krate.files.len() > 40,
        "found only {} files under crates/barrage/src",
        krate.files.len()
    );
}

/// Files over 600 code lines today, with their count: a ratchet. A listed file may not grow, a
/// file not listed may not go over 600, and an entry goes once its file is back under (the list
/// only shrinks). One entry per line, `crate/src/path.rs`.
const LONG: &[(&str, usize)] = &[
    ("barrage-metrics/src/aggregate.rs", 643),
    ("barrage-report/src/text.rs", 886),
    ("barrage-servers/src/chat.rs", 987),
];

/// No module file of any crate has over 600 code lines, except the [`LONG`] ones (which may not
/// grow). Code lines are those of [`imports::code_only`] that hold anything: comments (doc
/// comments too) and blank lines do not count, nor any item under `#[cfg(test)]` (the tests
/// module); a file only the tests declare (`#[cfg(test)] mod tests;`) is not counted at all.
#[test]
fn no_file_is_over_600_code_lines() {
    let mut found = Vec::new();
    for (name, krate) in crates() {
        for (i, f) in krate.files.iter().enumerate() {
            let n = code_lines(&f.code);
            if n > 600 {
                found.push((format!("{name}/src/{}", krate.name(i)), n));
            }
        }
    }
    let mut wrong = Vec::new();
    for (file, n) in &found {
        match LONG.iter().find(|l| l.0 == file) {
            None => wrong.push(format!("{file}: {n} code lines (over 600): split it")),
            Some(&(_, was)) if *n > was => wrong.push(format!(
                "{file}: {n} code lines, up from {was}: it may only shrink"
            )),
            _ => {}
        }
    }
    for (file, was) in LONG {
        if !found.iter().any(|f| f.0 == *file) {
            wrong.push(format!(
                "{file} (listed at {was}) is at most 600 code lines now: drop it from LONG"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Today's import circles, a ratchet: `crate: file file ..` (paths under the crate's `src`),
/// one circle per line. A circle is a strongly connected part (Tarjan) of a crate's module
/// import graph: files that reach each other through imports, a parent module and its child
/// files included. The graph's edges are the imports [`Crate::edges`] reads outside test code,
/// but for named `pub use` lines: those only pass a name on (an import of the name is followed
/// to the file that defines it), so a facade that re-exports is not in a circle by that alone.
/// A circle not inside a listed one fails the test (a new circle, or a listed one grown); a
/// listed circle that is gone must be removed (one that shrank may stay, or be narrowed).
const CIRCLES: &[&str] = &[];

/// Each crate's import circles, as `crate: file file ..` lines.
fn circles_now() -> Vec<String> {
    let mut out = Vec::new();
    for (name, krate) in crates() {
        let edges: Vec<(usize, usize)> = krate
            .edges()
            .iter()
            .filter(|e| !e.reexport)
            .map(|e| (e.from, e.to))
            .collect();
        for c in circles(krate.files.len(), &edges) {
            let mut files: Vec<String> = c.iter().map(|&f| krate.name(f)).collect();
            files.sort();
            out.push(format!("{name}: {}", files.join(" ")));
        }
    }
    out
}

fn circle_files(line: &str) -> (&str, BTreeSet<&str>) {
    let (krate, files) = line.split_once(": ").unwrap_or(("", line));
    (krate, files.split_whitespace().collect())
}

/// No import circle in any crate beyond the [`CIRCLES`] listed (issue 44).
#[test]
fn no_new_import_circles() {
    let now = circles_now();
    let inside = |c: &str, l: &str| {
        let ((ck, cf), (lk, lf)) = (circle_files(c), circle_files(l));
        ck == lk && cf.is_subset(&lf)
    };
    let meets = |c: &str, l: &str| {
        let ((ck, cf), (lk, lf)) = (circle_files(c), circle_files(l));
        ck == lk && cf.intersection(&lf).count() > 1
    };
    let mut wrong = Vec::new();
    for c in &now {
        if CIRCLES.iter().any(|l| inside(c, l)) {
            continue;
        }
        match CIRCLES.iter().find(|l| meets(c, l)) {
            Some(l) => wrong.push(format!(
                "a listed import circle grew:\n  was {l}\n  now {c}"
            )),
            None => wrong.push(format!("a new import circle: {c}")),
        }
    }
    for l in CIRCLES {
        if !now.iter().any(|c| meets(c, l)) {
            wrong.push(format!("gone, remove it from CIRCLES: {l}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\nthe circles today:\n{}",
        wrong.join("\n"),
        now.join("\n")
    );
}

/// Prints each crate's import circles and the imports that make them (`cargo test -p barrage
/// --test it house::print_the_circles -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_the_circles() {
    for (name, krate) in crates() {
        let edges: Vec<_> = krate.edges().into_iter().filter(|e| !e.reexport).collect();
        let pairs: Vec<(usize, usize)> = edges.iter().map(|e| (e.from, e.to)).collect();
        for c in circles(krate.files.len(), &pairs) {
            println!("{name}: {} files", c.len());
            let mut by_pair: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
            for e in edges
                .iter()
                .filter(|e| c.contains(&e.from) && c.contains(&e.to))
            {
                let pair = (krate.name(e.from), krate.name(e.to));
                by_pair.entry(pair).or_default().insert(e.via.clone());
            }
            for ((a, b), via) in by_pair {
                let via: Vec<String> = via.into_iter().collect();
                println!("  {a} -> {b} ({})", via.join(", "));
            }
        }
    }
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

/// `resolve/` turns the user's words into a run and opens no socket (issue 44, item 5): the
/// clients that talk to the target before the load, and the bind that asks whether an address
/// is this machine's, are `probe/`'s.
#[test]
fn resolve_opens_no_socket() {
    let dir = root().join("crates/barrage/src/resolve");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut found = Vec::new();
    for f in &files {
        let code = imports::code_only(&std::fs::read_to_string(f).unwrap());
        for word in [
            "TcpStream",
            "TcpListener",
            "UdpSocket",
            "mio::net",
            "socket2",
        ] {
            if code.contains(word) {
                found.push(format!(
                    "{}: {word}",
                    f.strip_prefix(&dir).unwrap().display()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a socket in resolve/ (move it to probe/):\n{}",
        found.join("\n")
    );
    assert!(files.len() > 20, "found only {} files", files.len());
}

#[test]
fn parent_globs_stop_at_the_first_cfg_test() {
    let t = "use super::*;\nmod imp {\n    pub(crate) use super::*;\n}\n// use super::*;\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    assert_eq!(parent_globs(t), vec![1, 3]);
}
