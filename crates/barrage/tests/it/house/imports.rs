//! Reading a crate's module imports from its files' text (issue 44), for the house rules.
//!
//! A file's *code* is its text with comments, string and char literals, and the items under a
//! `#[cfg(test)]` attribute blanked out (line breaks kept): [`code_only`]. Its *imports* are the
//! paths in that code that start at `crate::`, `super::`, `self::` or the name of a module the
//! file declares (`mod x;` then `use x::Y` or `x::f()`), in `use` lines, `pub use` lines and
//! inline in code (`crate::sys::now()`), grouped or not (`use crate::{a::B, c::{self, D}}`):
//! [`imports`]. A path is resolved to the module file it names (`x.rs` or `x/mod.rs`, the deepest
//! module on the path) and through a module's named re-exports (`pub use inner::Thing;` in
//! `a/mod.rs` sends `crate::a::Thing` on to `a/inner.rs`): [`Crate::edges`].
//!
//! Not handled (plain text, no parser): glob re-exports (`pub use x::*;` leaves the import at the
//! module that re-exports), macros (a path built inside `macro_rules!` or `$crate::`), `#[path]`
//! attributes, `mod x;` declared inside an inline module, `use {crate::a, super::b};` (a group at
//! the root), a `#[cfg(test)]` spelled another way (`#[cfg(all(test, x))]`), and files under
//! `src/bin/`. Test-only files (`#[cfg(test)] mod tests;`) are not part of the crate's modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `text` with comments, string and char literals and the items under `#[cfg(test)]` turned
/// into spaces; line breaks are kept, so line numbers stay those of `text`.
pub fn code_only(text: &str) -> String {
    blank_test_items(&strip_literals(text))
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn strip_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let n = c.len();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, range: std::ops::Range<usize>| {
        for &ch in &c[range.start.min(n)..range.end.min(n)] {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
    };
    let mut i = 0;
    while i < n {
        let after_ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        let j = if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            let mut j = i;
            while j < n && c[j] != '\n' {
                j += 1;
            }
            j
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let (mut j, mut depth) = (i, 0);
            while j < n {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if !after_ident && (c[i] == 'r' || c[i] == 'b' && c.get(i + 1) == Some(&'r')) {
            // A raw string `r#"..."#` (or `br".."`), else just the letter.
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            while j < n && !(c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#'))) {
                j += 1;
            }
            j + 1 + hashes
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < n && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            let mut j = i + 3;
            while j < n && c[j] != '\'' {
                j += 1;
            }
            j + 1
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i + 3
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        blank(&mut out, i..j);
        i = j;
    }
    out
}

/// Blanks each `#[cfg(test)]` and the item it is on: up to its first `;` outside brackets, or to
/// the `}` that closes its first `{`.
fn blank_test_items(s: &str) -> String {
    let mut b = s.as_bytes().to_vec();
    let pat = b"#[cfg(test)]";
    let mut from = 0;
    while let Some(k) = b[from..].windows(pat.len()).position(|w| w == pat) {
        let start = from + k;
        let mut j = start + pat.len();
        let (mut braces, mut brackets) = (0i32, 0i32);
        while j < b.len() {
            match b[j] {
                b'(' | b'[' => brackets += 1,
                b')' | b']' => brackets -= 1,
                b'{' => braces += 1,
                b'}' => {
                    braces -= 1;
                    if braces == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if braces == 0 && brackets == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        for x in &mut b[start..j.min(s.len())] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
        from = j.min(s.len());
    }
    String::from_utf8(b).expect("only ASCII bytes were replaced")
}

/// The number of lines of `code` (from [`code_only`]) that hold anything.
pub fn code_lines(code: &str) -> usize {
    code.lines().filter(|l| !l.trim().is_empty()).count()
}

/// One path a file imports from its own crate.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// The segments as written: the first is `crate`, `super`, `self` or a child module's name.
    pub path: Vec<String>,
    /// `as NAME` after it, if any.
    pub alias: Option<String>,
    /// In a `pub use` (any visibility): the file re-exports the name.
    pub reexport: bool,
    /// The inline modules (`mod imp { .. }`) the path is inside, outermost first.
    pub scope: Vec<String>,
}

fn word(b: &[u8], i: usize) -> &str {
    let end = (i..b.len()).find(|&j| !is_ident(b[j])).unwrap_or(b.len());
    std::str::from_utf8(&b[i..end]).unwrap_or("")
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn is_sep(b: &[u8], i: usize) -> bool {
    b.get(i..i + 2) == Some(b"::")
}

/// Reads the path tree at `i` (after `prefix`), pushing each full path; returns where it ends.
fn tree(
    b: &[u8],
    mut i: usize,
    mut path: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b'{') => {
                i += 1;
                loop {
                    i = skip_ws(b, i);
                    match b.get(i) {
                        None => return i,
                        Some(b'}') => return i + 1,
                        Some(b',') => i += 1,
                        _ => {
                            let before = i;
                            i = tree(b, i, path.clone(), out);
                            if i == before {
                                i += 1;
                            }
                        }
                    }
                }
            }
            Some(b'*') => {
                path.push("*".into());
                out.push((path, None));
                return i + 1;
            }
            Some(&c) if is_ident(c) => {
                let w = word(b, i);
                i += w.len();
                path.push(w.to_string());
                let j = skip_ws(b, i);
                if is_sep(b, j) {
                    i = j + 2;
                    continue;
                }
                let mut alias = None;
                if word(b, j) == "as" {
                    let k = skip_ws(b, j + 2);
                    let a = word(b, k);
                    alias = Some(a.to_string());
                    i = k + a.len();
                }
                out.push((path, alias));
                return i;
            }
            _ => {
                if !path.is_empty() {
                    out.push((path, None));
                }
                return i;
            }
        }
    }
}

/// Whether the code before a path ends in `pub use` (with any visibility).
fn after_pub_use(before: &str) -> bool {
    let Some(r) = before.trim_end().strip_suffix("use") else {
        return false;
    };
    let r = r.trim_end();
    r.ends_with("pub")
        || r.ends_with(')')
            && r.rfind('(')
                .is_some_and(|o| r[..o].trim_end().ends_with("pub"))
}

/// Every path in `code` (from [`code_only`]) that starts at `crate`, `super`, `self` or one of
/// `children` (the modules the file declares) and goes on with `::`.
pub fn imports(code: &str, children: &[String]) -> Vec<Import> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut depth) = (0, 0usize);
    let mut scope: Vec<(String, usize)> = Vec::new();
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if scope.last().is_some_and(|s| s.1 == depth) {
                    scope.pop();
                }
            }
            c if is_ident(c) && (i == 0 || !is_ident(b[i - 1])) => {
                let w = word(b, i);
                let end = i + w.len();
                if w == "mod" {
                    let k = skip_ws(b, end);
                    let name = word(b, k);
                    if !name.is_empty() && b.get(skip_ws(b, k + name.len())) == Some(&b'{') {
                        scope.push((name.to_string(), depth));
                    }
                }
                let rooted =
                    matches!(w, "crate" | "super" | "self") || children.iter().any(|c| c == w);
                let inner = i >= 2 && is_sep(b, i - 2) || i >= 1 && b[i - 1] == b'$';
                if rooted && !inner && is_sep(b, skip_ws(b, end)) {
                    let mut paths = Vec::new();
                    let next = tree(b, i, Vec::new(), &mut paths);
                    let reexport = after_pub_use(&code[..i]);
                    let names: Vec<String> = scope.iter().map(|s| s.0.clone()).collect();
                    out.extend(paths.into_iter().map(|(path, alias)| Import {
                        path,
                        alias,
                        reexport,
                        scope: names.clone(),
                    }));
                    i = next.max(i + 1);
                    continue;
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The names of the modules `code` declares with `mod x;` (any visibility).
pub fn children(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("mod") {
        if i > 0 && is_ident(b[i - 1]) || b.get(i + 3).is_none_or(|&c| is_ident(c)) {
            continue;
        }
        let k = skip_ws(b, i + 3);
        let name = word(b, k);
        if !name.is_empty() && b.get(skip_ws(b, k + name.len())) == Some(&b';') {
            out.push(name.to_string());
        }
    }
    out
}

/// One file of a crate: its module path, code and imports.
pub struct File {
    pub path: PathBuf,
    pub module: Vec<String>,
    pub code: String,
    pub imports: Vec<Import>,
}

/// A crate's module files, from `src/lib.rs` (or `src/main.rs`) along its `mod x;` lines.
pub struct Crate {
    pub src: PathBuf,
    pub files: Vec<File>,
    by_module: BTreeMap<Vec<String>, usize>,
}

/// One resolved import: file `from` (index into [`Crate::files`]) uses module file `to`.
#[derive(Debug, Clone)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    /// The path as written, `::`-joined.
    pub via: String,
    /// A named `pub use` (not a glob): the file passes the name on.
    pub reexport: bool,
}

impl Crate {
    pub fn load(src: &Path) -> Crate {
        let root = ["lib.rs", "main.rs"]
            .iter()
            .map(|r| src.join(r))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("no lib.rs or main.rs in {}", src.display()));
        let mut krate = Crate {
            src: src.to_path_buf(),
            files: Vec::new(),
            by_module: BTreeMap::new(),
        };
        krate.walk(root, Vec::new(), src.to_path_buf());
        krate
    }

    fn walk(&mut self, path: PathBuf, module: Vec<String>, dir: PathBuf) {
        let code = code_only(&std::fs::read_to_string(&path).unwrap());
        let children = children(&code);
        let imports = imports(&code, &children);
        self.by_module.insert(module.clone(), self.files.len());
        self.files.push(File {
            path,
            module: module.clone(),
            code,
            imports,
        });
        for kid in children {
            let mut m = module.clone();
            m.push(kid.clone());
            let flat = dir.join(format!("{kid}.rs"));
            let folder = dir.join(&kid).join("mod.rs");
            if flat.is_file() {
                self.walk(flat, m, dir.join(&kid));
            } else if folder.is_file() {
                self.walk(folder, m, dir.join(&kid));
            }
        }
    }

    /// `path` relative to `src`, with `/`.
    pub fn name(&self, file: usize) -> String {
        let p = self.files[file].path.strip_prefix(&self.src).unwrap();
        p.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The file of the deepest module on `module` that is a file.
    fn file_of(&self, module: &[String]) -> usize {
        (0..=module.len())
            .rev()
            .find_map(|k| self.by_module.get(&module[..k]).copied())
            .unwrap()
    }

    /// Where `import` (in file `file`) leads: the module path it names, and the segments left
    /// after that module.
    fn resolve(&self, file: usize, import: &Import) -> (Vec<String>, Vec<String>) {
        let f = &self.files[file];
        let mut cur: Vec<String> = f.module.iter().chain(&import.scope).cloned().collect();
        let mut segs = import.path.iter().peekable();
        match segs.peek().map(|s| s.as_str()) {
            Some("crate") => {
                cur.clear();
                segs.next();
            }
            Some("super") | Some("self") => {}
            _ => cur.clone_from(&f.module),
        }
        let mut rest = Vec::new();
        while let Some(s) = segs.next() {
            match s.as_str() {
                "super" => {
                    cur.pop();
                }
                "self" => {}
                _ => {
                    let mut next = cur.clone();
                    next.push(s.clone());
                    if self.by_module.contains_key(&next) {
                        cur = next;
                    } else {
                        rest.push(s.clone());
                        rest.extend(segs.cloned());
                        break;
                    }
                }
            }
        }
        (cur, rest)
    }

    /// The module file each import of each file leads to (through named re-exports), leaving
    /// out imports of a file from itself.
    pub fn edges(&self) -> Vec<Edge> {
        let mut out = Vec::new();
        for (from, f) in self.files.iter().enumerate() {
            for import in &f.imports {
                let (mut module, mut rest) = self.resolve(from, import);
                let mut to = self.file_of(&module);
                for _ in 0..8 {
                    let Some(name) = rest.first() else { break };
                    let Some(re) = self.files[to]
                        .imports
                        .iter()
                        .find(|r| r.reexport && reexported_name(r) == Some(name.as_str()))
                    else {
                        break;
                    };
                    let (m, mut r) = self.resolve(to, re);
                    r.extend(rest.drain(1..));
                    (module, rest) = (m, r);
                    to = self.file_of(&module);
                }
                if to != from {
                    out.push(Edge {
                        from,
                        to,
                        via: import.path.join("::"),
                        reexport: import.reexport && reexported_name(import).is_some(),
                    });
                }
            }
        }
        out
    }
}

/// The name a `pub use` gives: its alias, or its last segment (`a::{self}` gives `a`).
fn reexported_name(import: &Import) -> Option<&str> {
    if let Some(a) = &import.alias {
        return Some(a);
    }
    let mut it = import.path.iter().rev();
    match it.next()?.as_str() {
        "*" => None,
        "self" => it.next().map(|s| s.as_str()),
        s => Some(s),
    }
}

/// The strongly connected components of the graph with `n` nodes and these edges that hold more
/// than one node (Tarjan), each sorted, in a sorted list: the import circles.
pub fn circles(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut next: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for &(a, b) in edges {
        next[a].insert(b);
    }
    struct T<'a> {
        next: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        count: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.index[v] = Some(t.count);
        t.low[v] = t.count;
        t.count += 1;
        t.stack.push(v);
        t.on[v] = true;
        for &w in t.next[v].iter() {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(i) if t.on[w] => t.low[v] = t.low[v].min(i),
                _ => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut scc = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        next: &next,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        count: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    let mut out = t.out;
    out.sort();
    out
}

fn paths(text: &str, children: &[&str]) -> Vec<String> {
    let kids: Vec<String> = children.iter().map(|s| s.to_string()).collect();
    imports(&code_only(text), &kids)
        .iter()
        .map(|i| {
            let mut s = i.path.join("::");
            if let Some(a) = &i.alias {
                s += &format!(" as {a}");
            }
            if i.reexport {
                s = format!("pub {s}");
            }
            if !i.scope.is_empty() {
                s = format!("{}: {s}", i.scope.join("::"));
            }
            s
        })
        .collect()
}

#[test]
fn imports_reads_grouped_and_nested_uses() {
    let t = "use crate::{cmd::X, sinks::{self, json::{J, K as L}}, units};\nuse std::io;";
    assert_eq!(
        paths(t, &[]),
        [
            "crate::cmd::X",
            "crate::sinks::self",
            "crate::sinks::json::J",
            "crate::sinks::json::K as L",
            "crate::units"
        ]
    );
}

#[test]
fn imports_reads_super_self_children_and_inline_paths() {
    let t =
        "mod worker;\nuse super::super::run::Plan;\nuse self::worker::W;\nuse worker::{V, *};\n\
             fn f() { let t = crate::sys::now(); worker::go(); std::worker::no(); }";
    assert_eq!(
        paths(t, &["worker"]),
        [
            "super::super::run::Plan",
            "self::worker::W",
            "worker::V",
            "worker::*",
            "crate::sys::now",
            "worker::go"
        ]
    );
}

#[test]
fn imports_marks_reexports_and_inline_modules() {
    let t = "pub use crate::a::B;\npub(crate) use super::c::D as E;\n\
             mod imp {\n    use super::F;\n}\nuse crate::g::H;";
    assert_eq!(
        paths(t, &[]),
        [
            "pub crate::a::B",
            "pub super::c::D as E",
            "imp: super::F",
            "crate::g::H"
        ]
    );
}

#[test]
fn imports_skips_strings_comments_macros_other_crates_and_test_items() {
    let t = "// use crate::a;\n/* crate::b /* crate::c */ */\nlet s = \"crate::d\";\n\
             let r = r#\"crate::e\"#; let c = '\"'; let x: &'static str = \"\";\n\
             use barrage_crate::f; $crate::g::h(); pub(crate) fn i() {}\n\
             #[cfg(test)]\nuse crate::j;\n#[cfg(test)]\nmod tests {\n    use crate::k;\n}\n\
             use crate::l;";
    assert_eq!(paths(t, &[]), ["crate::l"]);
}

#[test]
fn code_lines_count_neither_blanks_comments_nor_tests() {
    let t = "//! Doc.\n\nuse a::b;\n/// Doc.\nfn f() {\n    // note\n    g(\"{\");\n}\n\
             #[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
    assert_eq!(code_lines(&code_only(t)), 4);
}

#[test]
fn circles_are_the_strongly_connected_parts() {
    let edges = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 3), (5, 5)];
    assert_eq!(circles(6, &edges), vec![vec![0, 1, 2], vec![3, 4]]);
}
