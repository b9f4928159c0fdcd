//! The README's examples, run as written (issue 43): every command of every ```` ```sh ````
//! block of README.md, in order, in one working directory (holding a copy of `examples/`),
//! with the built `barrage` first on `PATH`. A new example is tested by being written.
//!
//! The rules, printed line by line as the test goes (`cargo test -p barrage --test it readme
//! -- --nocapture` shows what ran, as what, and what did not and why):
//!
//! - **Servers.** `barrage serve KIND ...` (with or without a trailing `&`) is a child of the
//!   test (killed by its handle at the end, `--exit-after` as a backstop), on the port written
//!   (or its default). redis (6379), memcached (11211) and mosquitto (1883) are started by the
//!   test the first time a command names their port; a command whose server is not installed
//!   is skipped (`tests/skip.rs`: a failure under `CI`).
//! - **Ports.** Every `127.0.0.1:PORT` of the README (and each `serve` default) is a free port
//!   of this machine instead, the same in every command, inside quoted `--spawn` commands and
//!   in the copies of `examples/*.toml`, so the test runs beside the others.
//! - **Bounds.** `-d`/`--duration` is 2s, and a run, `versus` or `demo` given neither `-d` nor
//!   `-n` gets `-d 2s` (in 1 s, 112 of 200 MQTT subscribers once came up on a busy machine,
//!   the rest still connecting); `-c` and `-n` at most 100; `--processes N` at most 2
//!   (`auto` stays); `--reps` 1; `--recovery 2s` with `--spawn` or `--monitor`; `find-max`
//!   steps of 2 s without warm-up, at most 2; a scenario file `--users 100 --arrive 200
//!   --hold 5s` (with 20 users a p99 is nearly their slowest delivery: one of 3.25 s, on a
//!   busy machine, failed chat-rooms.toml's own `broadcast.p99 < 200ms` once); a shell start time `$(date +%s) + N` is `+ 2`. A threshold `leak == no` is `leak !=
//!   yes`: a 2 s run cannot show there is no leak (inconclusive), only that none was found.
//! - **Not run** (printed with the reason): a command naming a host other than loopback (only
//!   loopback is ever loaded), `cargo` (this test is built and run by cargo), `sbatch` and
//!   `kubectl` (they submit to a cluster: `dist` and `slurm` run the scripts barrage writes),
//!   and a line run already above. The rest of such a line runs: `barrage dist slurm F >
//!   job.sbatch && sbatch job.sbatch` writes the script, which must not be empty.
//! - **Verdict.** Every command exits 0, or with a code a comment on its line names ("exit
//!   3": the README says so where a threshold or SLO decides, as latency limits on a shared
//!   machine do: `p99 < 20ms` once read 300 ms beside four builds); every file it names with `-o`, `--json`, `--report`, `--out`, `--write-proto` or `>`
//!   exists afterwards. A block with background jobs or shell variables (`&`, `wait`, `T=`)
//!   runs as one `bash -e` script; any other line on its own through `bash -c`.

use crate::common::*;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

/// Longest one README line may take under the bounds above (find-max and versus are the
/// longest: a few seconds each on a quiet machine).
const LINE_TIMEOUT: Duration = Duration::from_secs(120);

/// One logical line of a block: its code (continuations joined, comment cut) and comment.
#[derive(Debug)]
struct Line {
    at: usize,
    code: String,
    comment: String,
}

/// The ```` ```sh ```` blocks of `text`: (the line the block starts on, its lines).
fn sh_blocks(text: &str) -> Vec<(usize, Vec<Line>)> {
    let mut blocks = Vec::new();
    let mut cur: Option<(usize, Vec<Line>)> = None;
    let mut pending = String::new();
    let mut pending_at = 0;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        match &mut cur {
            None if raw.trim_end() == "```sh" => cur = Some((n, Vec::new())),
            None => {}
            Some(_) if raw.starts_with("```") => blocks.push(cur.take().expect("in a block")),
            Some((_, lines)) => {
                if pending.is_empty() {
                    pending_at = n;
                }
                match raw.trim_end().strip_suffix('\\') {
                    Some(head) => pending.push_str(head),
                    None => {
                        pending.push_str(raw);
                        let (code, comment) = cut_comment(&pending);
                        if !code.trim().is_empty() {
                            lines.push(Line {
                                at: pending_at,
                                code: code.trim().to_string(),
                                comment,
                            });
                        }
                        pending.clear();
                    }
                }
            }
        }
    }
    assert!(cur.is_none(), "README.md: a ```sh block is not closed");
    blocks
}

/// `s` split at its first `#` that starts a word outside quotes: (code, comment).
fn cut_comment(s: &str) -> (String, String) {
    let (mut q, mut prev) = (None, ' ');
    for (i, c) in s.char_indices() {
        match (q, c) {
            (None, '\'' | '"') => q = Some(c),
            (Some(o), _) if c == o => q = None,
            (None, '#') if prev.is_whitespace() => {
                return (s[..i].to_string(), s[i + 1..].trim().to_string())
            }
            _ => {}
        }
        prev = c;
    }
    (s.to_string(), String::new())
}

/// `code`'s simple commands and the operator after each (`&&`, `||`, `;`, `&`, `|`, or ""),
/// split outside quotes and `$(...)`.
fn simple_commands(code: &str) -> Vec<(String, String)> {
    let b = code.as_bytes();
    let (mut out, mut start, mut q, mut depth, mut i) = (Vec::new(), 0, 0u8, 0, 0);
    while i < b.len() {
        let c = b[i];
        if q != 0 {
            if c == q {
                q = 0;
            }
        } else if c == b'\'' || c == b'"' {
            q = c;
        } else if c == b'(' {
            depth += 1;
        } else if c == b')' {
            depth -= 1;
        } else if depth == 0 && matches!(c, b'&' | b'|' | b';') && !code[..i].ends_with('>') {
            let two = i + 1 < b.len() && b[i + 1] == c && c != b';';
            let op = &code[i..i + if two { 2 } else { 1 }];
            out.push((code[start..i].trim().to_string(), op.to_string()));
            i += op.len();
            start = i;
            continue;
        }
        i += 1;
    }
    if !code[start..].trim().is_empty() {
        out.push((code[start..].trim().to_string(), String::new()));
    }
    out
}

/// Shell words of `s`, as written (quotes kept).
fn words(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut q) = (Vec::new(), String::new(), None);
    for c in s.chars() {
        match (q, c) {
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                continue;
            }
            (None, '\'' | '"') => q = Some(c),
            (Some(o), _) if c == o => q = None,
            _ => {}
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A word without its quotes (the README's server lines hold no escapes or expansions).
fn unquote(w: &str) -> String {
    w.chars().filter(|c| !matches!(c, '\'' | '"')).collect()
}

/// Every port of `127.0.0.1:PORT` in `s`.
fn ports_in(s: &str) -> Vec<u16> {
    s.match_indices("127.0.0.1:")
        .filter_map(|(i, m)| {
            let rest = &s[i + m.len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..end].parse().ok()
        })
        .collect()
}

/// `s` with every `127.0.0.1:PORT` of the map on its free port.
fn remap(s: &str, ports: &BTreeMap<u16, u16>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("127.0.0.1:") {
        let (head, tail) = rest.split_at(i + "127.0.0.1:".len());
        out.push_str(head);
        let end = tail
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(tail.len());
        match tail[..end].parse::<u16>().ok().and_then(|p| ports.get(&p)) {
            Some(p) => out.push_str(&p.to_string()),
            None => out.push_str(&tail[..end]),
        }
        rest = &tail[end..];
    }
    out + rest
}

/// The port `barrage serve KIND` listens on without `--listen`.
fn serve_default(kind: &str) -> u16 {
    match kind {
        "echo" => 7000,
        "http" => 8080,
        "h2" => 8443,
        "grpc" => 50051,
        "ws" => 9000,
        "chat" => 7100,
        "frames" => 7200,
        other => panic!("README.md: barrage serve {other}: no default port known to this test"),
    }
}

/// The first host of a URL word that is not loopback, if any.
fn remote_host(ws: &[String]) -> Option<String> {
    ws.iter().find_map(|w| {
        let w = unquote(w);
        let (_, rest) = w.split_once("://")?;
        let host = rest.split(['/', '?']).next()?;
        let host = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next()?.to_string(),
            None => host.rsplit_once(':').map_or(host, |(h, _)| h).to_string(),
        };
        (!matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1")).then_some(host)
    })
}

fn set_or_add(ws: &mut Vec<String>, names: &[&str], value: impl Fn(&str) -> String, add: bool) {
    match ws.iter().position(|w| names.contains(&w.as_str())) {
        Some(i) if i + 1 < ws.len() => ws[i + 1] = value(&ws[i + 1]),
        _ if add => ws.extend([names[0].to_string(), value("")]),
        _ => {}
    }
}

fn at_most(max: u64) -> impl Fn(&str) -> String {
    move |v: &str| {
        let n = v.to_lowercase().strip_suffix('k').map_or_else(
            || v.parse().ok(),
            |k| k.parse::<u64>().ok().map(|k| k * 1000),
        );
        match n {
            Some(n) => n.min(max).to_string(),
            None if v.is_empty() => max.to_string(),
            None => v.to_string(),
        }
    }
}

/// A `barrage ...` command's words under the bounds of the module's doc.
fn bound(mut ws: Vec<String>) -> Vec<String> {
    let has = |ws: &[String], f: &[&str]| ws.iter().any(|w| f.contains(&w.as_str()));
    let sub = ws.get(1).map(|s| unquote(s)).unwrap_or_default();
    let scenario = sub == "run"
        && ws
            .get(2)
            .is_some_and(|f| f.ends_with(".toml") || f.ends_with(".yaml"));
    let load = sub.contains("://") || sub == "run" || sub == "versus" || sub == "demo";
    let one = |_: &str| "2s".to_string();
    set_or_add(&mut ws, &["-c", "--connections"], at_most(100), false);
    set_or_add(&mut ws, &["-n", "--requests"], at_most(100), false);
    set_or_add(
        &mut ws,
        &["--processes"],
        |v| if v == "auto" { v.into() } else { at_most(2)(v) },
        false,
    );
    set_or_add(&mut ws, &["--reps"], |_| "1".into(), false);
    if scenario {
        set_or_add(&mut ws, &["--users"], at_most(100), true);
        set_or_add(&mut ws, &["--arrive"], |_| "200".into(), true);
        set_or_add(&mut ws, &["--hold"], |_| "5s".into(), true);
    } else if load {
        let add = !has(&ws, &["-n", "--requests"]);
        set_or_add(&mut ws, &["-d", "--duration"], one, add);
    }
    if has(&ws, &["--spawn", "--monitor"]) {
        set_or_add(&mut ws, &["--recovery"], one, true);
    }
    // A leak needs a long run to be judged: after a 2 s one it is inconclusive.
    for w in ws.iter_mut() {
        if unquote(w) == "leak == no" {
            *w = "'leak != yes'".into();
        }
    }
    if sub == "find-max" {
        set_or_add(&mut ws, &["--step-warmup"], |_| "0s".into(), true);
        set_or_add(&mut ws, &["--step-duration"], one, true);
        set_or_add(&mut ws, &["--max-steps"], |_| "2".into(), true);
    }
    ws
}

/// Whether a simple command sets a shell variable (`T=...`).
fn assigns(cmd: &str) -> bool {
    cmd.split_once('=').is_some_and(|(v, _)| {
        !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The files a command says it writes.
fn outputs(ws: &[String]) -> Vec<String> {
    let flags = [
        "-o",
        "--output",
        "--json",
        "--report",
        "--out",
        "--write-proto",
        ">",
    ];
    ws.windows(2)
        .filter(|p| flags.contains(&p[0].as_str()) && p[1] != "-")
        .map(|p| unquote(&p[1]))
        .collect()
}

/// A server the test owns for the whole README.
struct Servers {
    /// By port: a later `serve` on a port replaces the server there, as a user stops one
    /// server before starting another on its port.
    running: BTreeMap<u16, Guard>,
    _dirs: Vec<tempfile::TempDir>,
}

impl Servers {
    /// `barrage serve ...` (its words, ports mapped) in `cwd`, waiting until it listens.
    fn serve(&mut self, ws: &[String], ports: &BTreeMap<u16, u16>, cwd: &Path) {
        let mut args: Vec<String> = ws[1..].iter().map(|w| unquote(w)).collect();
        args.retain(|a| a != "&");
        let kind = args[1].clone();
        if !args.iter().any(|a| a == "--listen") {
            args.extend([
                "--listen".into(),
                format!("127.0.0.1:{}", ports[&serve_default(&kind)]),
            ]);
        }
        let listen = args
            .iter()
            .position(|a| a == "--listen")
            .map(|i| args[i + 1].clone());
        let port: u16 = listen
            .as_deref()
            .and_then(|l| ports_in(l).first().copied())
            .expect("a loopback --listen");
        if let Some(mut old) = self.running.remove(&port) {
            send_signal(old.0.id(), "TERM");
            if wait_at_most(&mut old.0, Duration::from_secs(10)).is_none() {
                panic!("the server on {port} did not stop within 10 s of SIGTERM");
            }
        }
        let mut a = bound(std::iter::once("barrage".to_string()).chain(args).collect());
        a.extend(["--exit-after".into(), "900s".into()]);
        println!("    server: {}", a.join(" "));
        let child = StdCommand::new(bin())
            .args(&a[1..])
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn barrage serve");
        self.wait(child, port, &a.join(" "));
    }

    fn wait(&mut self, mut child: std::process::Child, port: u16, what: &str) {
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("README.md: `{what}` exited with {st} before listening");
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "`{what}` not listening after 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.running.insert(port, Guard(child));
    }

    /// The third-party server a README port names, started once; false when not installed.
    fn third_party(&mut self, readme_port: u16, port: u16) -> bool {
        if self.running.contains_key(&port) {
            return true;
        }
        let root = std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0")));
        let (name, args): (&str, Vec<String>) = match readme_port {
            6379 => (
                "redis-server",
                [
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ]
                .map(String::from)
                .to_vec(),
            ),
            11211 => {
                let mut a = ["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"]
                    .map(String::from)
                    .to_vec();
                if root {
                    a.extend(["-u".into(), "nobody".into()]);
                }
                ("memcached", a)
            }
            1883 => {
                let dir = tempfile::tempdir().expect("tempdir");
                let conf = dir.path().join("mosquitto.conf");
                std::fs::write(
                    &conf,
                    format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"),
                )
                .unwrap();
                let _ = StdCommand::new("chmod")
                    .args(["-R", "a+rX"])
                    .arg(dir.path())
                    .status();
                let a = vec!["-c".to_string(), conf.display().to_string()];
                self._dirs.push(dir);
                ("mosquitto", a)
            }
            _ => return true,
        };
        if !available(name, on_path(name)) {
            return false;
        }
        let child = StdCommand::new(name)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        println!("    server: {name} on 127.0.0.1:{port}");
        self.wait(child, port, name);
        true
    }
}

/// Runs `script` with bash in `cwd` (`barrage` first on `path`); its exit code.
fn bash(script: &str, cwd: &Path, path: &str) -> i32 {
    let mut child = StdCommand::new("bash")
        .args(["-c", script])
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("CI_BARRAGE_README")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bash");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let st = wait_at_most(&mut child, LINE_TIMEOUT);
    if st.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (o, e) = (o.join().unwrap(), e.join().unwrap());
    let code = st.map_or(-1, |s| s.code().unwrap_or(-1));
    if code != 0 {
        let tail = |s: &str| {
            s.lines()
                .rev()
                .take(25)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        };
        println!(
            "      exit {code}; stdout ends:\n{}\n      stderr ends:\n{}",
            tail(&o),
            tail(&e)
        );
    }
    code
}

fn copy_dir(from: &Path, to: &Path, ports: &BTreeMap<u16, u16>) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest, ports);
        } else {
            match std::fs::read_to_string(e.path()) {
                Ok(text) => std::fs::write(&dest, remap(&text, ports)).unwrap(),
                Err(_) => {
                    std::fs::copy(e.path(), &dest).unwrap();
                }
            }
        }
    }
}

#[test]
fn every_readme_example_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let blocks = sh_blocks(&readme);
    assert!(
        blocks.len() >= 10,
        "README.md has {} ```sh blocks",
        blocks.len()
    );

    // Every loopback port the README names, and each serve's default, on a free port.
    let mut ports = BTreeMap::new();
    for (_, lines) in &blocks {
        for l in lines {
            let ws = words(&l.code);
            let mut named = ports_in(&l.code);
            if ws.get(1).map(String::as_str) == Some("serve") && !ws.iter().any(|w| w == "--listen")
            {
                named.push(serve_default(&ws[2]));
            }
            for p in named {
                ports.entry(p).or_insert_with(free_port);
            }
        }
    }
    for f in ["chat-rooms.toml", "chat-100k.toml", "chat.toml"] {
        let text = std::fs::read_to_string(root.join("examples").join(f)).unwrap();
        for p in ports_in(&text) {
            ports.entry(p).or_insert_with(free_port);
        }
    }
    println!("ports (README -> here): {ports:?}");

    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path().join("work");
    copy_dir(&root.join("examples"), &cwd.join("examples"), &ports);
    let bindir = dir.path().join("bin");
    std::fs::create_dir_all(&bindir).unwrap();
    std::os::unix::fs::symlink(bin(), bindir.join("barrage")).unwrap();
    let path = format!(
        "{}:{}",
        bindir.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let mut servers = Servers {
        running: BTreeMap::new(),
        _dirs: Vec::new(),
    };
    let (mut ran, mut not_run, mut failures) = (0, Vec::new(), Vec::new());
    let mut seen = HashSet::new();
    let started = Instant::now();
    for (at, lines) in &blocks {
        println!("block at README.md:{at}");
        let script_mode = lines.iter().any(|l| {
            let ops = simple_commands(&l.code);
            let serve = words(&l.code).get(1).map(String::as_str) == Some("serve");
            (!serve && ops.iter().any(|(_, op)| op == "&"))
                || ops.iter().any(|(c, _)| c == "wait" || assigns(c))
        });
        let mut script = Vec::new();
        let mut files = Vec::new();
        for l in lines {
            let ws = words(&l.code);
            if ws.first().map(String::as_str) == Some("barrage")
                && ws.get(1).map(String::as_str) == Some("serve")
            {
                let mapped: Vec<String> = ws.iter().map(|w| remap(w, &ports)).collect();
                servers.serve(&mapped, &ports, &cwd);
                continue;
            }
            if let Some(host) = remote_host(&ws) {
                not_run.push(format!(
                    "README.md:{}: {} (host {host} is not loopback)",
                    l.at, l.code
                ));
                continue;
            }
            // The line's simple commands: barrage's bounded, the rest kept or dropped.
            let mut kept = String::new();
            let mut dropped = Vec::new();
            let mut missing = None;
            for (cmd, op) in simple_commands(&l.code) {
                let ws = words(&cmd);
                match ws.first().map(String::as_str) {
                    Some("cargo") => dropped.push("cargo (this test is built and run by cargo)"),
                    Some("sbatch" | "kubectl") => {
                        dropped.push("sbatch/kubectl (they submit to a cluster)")
                    }
                    Some("barrage") => {
                        for p in ports_in(&cmd) {
                            if !servers.third_party(p, ports[&p]) {
                                missing = Some(p);
                            }
                        }
                        let ws = bound(ws.iter().map(|w| remap(w, &ports)).collect());
                        files.extend(outputs(&ws));
                        kept.push_str(&format!("{} {op} ", ws.join(" ")));
                    }
                    _ => {
                        let mut c = cmd.clone();
                        if c.contains("$(date +%s) +") {
                            let i = c.find("$(date +%s) +").unwrap() + "$(date +%s) +".len();
                            let end = c[i..].find("))").map_or(c.len(), |e| i + e);
                            c.replace_range(i..end, " 2 ");
                        }
                        files.extend(outputs(&words(&c)));
                        kept.push_str(&format!("{c} {op} "));
                    }
                }
            }
            let kept = kept.trim().trim_end_matches("&&").trim().to_string();
            for why in &dropped {
                not_run.push(format!("README.md:{}: the {why} part of: {}", l.at, l.code));
            }
            if let Some(p) = missing {
                not_run.push(format!(
                    "README.md:{}: {} (the server on port {p} is not installed)",
                    l.at, l.code
                ));
                continue;
            }
            if kept.is_empty() {
                continue;
            }
            if !seen.insert(kept.clone()) {
                not_run.push(format!("README.md:{}: {} (run above)", l.at, l.code));
                continue;
            }
            assert!(
                !kept.contains("..."),
                "README.md:{}: `{}` is not a command: write its flags out",
                l.at,
                l.code
            );
            if script_mode {
                script.push(kept);
                continue;
            }
            let mut ok = vec![0];
            if let Some(i) = l.comment.find("exit ") {
                ok.extend(
                    l.comment[i + 5..]
                        .split(|c: char| !c.is_ascii_digit())
                        .next()
                        .and_then(|n| n.parse::<i32>().ok()),
                );
            }
            let t = Instant::now();
            println!("  README.md:{}: {kept}", l.at);
            let code = bash(&kept, &cwd, &path);
            println!("    exit {code} in {:.1} s", t.elapsed().as_secs_f64());
            ran += 1;
            if !ok.contains(&code) {
                failures.push(format!(
                    "README.md:{}: `{}` exited {code} (expected {ok:?})",
                    l.at, l.code
                ));
            }
        }
        if !script.is_empty() {
            let text = format!("set -e\n{}\n", script.join("\n"));
            println!("  README.md:{at} as one script:\n{text}");
            let code = bash(&text, &cwd, &path);
            ran += script.len();
            if code != 0 {
                failures.push(format!("README.md:{at}: the block exited {code}"));
            }
        }
        for f in files {
            let p: PathBuf = cwd.join(&f);
            if !p.exists() || (p.is_file() && std::fs::metadata(&p).map_or(0, |m| m.len()) == 0) {
                failures.push(format!("README.md block at line {at}: {f} was not written"));
            }
        }
    }
    println!(
        "\n{ran} commands run in {:.0} s; not run:",
        started.elapsed().as_secs_f64()
    );
    for n in &not_run {
        println!("  {n}");
    }
    drop(servers);
    assert!(
        failures.is_empty(),
        "README examples that failed:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_parser_reads_the_readmes_shapes() {
    let text = "x\n```sh\nbarrage a -m 'x # y' \\\n  -c 5   # the comment, exit 3\nT=@$(( $(date +%s) + 10 ))\n```\n";
    let b = sh_blocks(text);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].1[0].code, "barrage a -m 'x # y'   -c 5");
    assert_eq!(b[0].1[0].comment, "the comment, exit 3");
    assert_eq!(b[0].1[0].at, 3);
    assert_eq!(
        simple_commands("a > f && b; wait; c &"),
        [("a > f", "&&"), ("b", ";"), ("wait", ";"), ("c", "&")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(simple_commands("T=@$(( $(date +%s) + 10 ))").len(), 1);
    let ports = BTreeMap::from([(7000, 23456)]);
    assert_eq!(
        remap("tcp://127.0.0.1:7000 127.0.0.1:70001", &ports),
        "tcp://127.0.0.1:23456 127.0.0.1:70001"
    );
    let w = |s: &str| words(s);
    assert_eq!(
        bound(w("barrage tcp://h:1 -c 60000 -d 10m")),
        w("barrage tcp://h:1 -c 100 -d 2s")
    );
    assert_eq!(
        bound(w("barrage tcp://h:1 -c 20k")),
        w("barrage tcp://h:1 -c 100 -d 2s")
    );
    assert_eq!(
        bound(w("barrage grpc://h:1/a/b -n 10000")),
        w("barrage grpc://h:1/a/b -n 100")
    );
    assert_eq!(
        bound(w("barrage run x.toml --hold 12h")),
        w("barrage run x.toml --hold 5s --users 100 --arrive 200")
    );
    assert_eq!(
        remote_host(&w("barrage https://example.test/ -c 1")),
        Some("example.test".into())
    );
    assert_eq!(remote_host(&w("barrage grpc://127.0.0.1:50051/x")), None);
}
