//! One process (optionally with its descendants) as /proc shows it, as cumulative counters.
//!
//! Parsers are pure functions over the files' text; readers put them together into a
//! [`ProcReading`], and the sampler turns two readings into rates. Key decisions:
//! * a process is "gone" when its stat is unreadable, it is a zombie, or its start time changed
//!   (pid reuse): the sampler then stops sampling it;
//! * context switches are read per thread (`task/<tid>/status`): `/proc/<pid>/status` only counts
//!   the main thread's;
//! * with children, CPU is the sum over the live tree of `utime + cutime` (and `stime +
//!   cstime`): when a child exits and is reaped, its time moves into its parent's `cutime`, so
//!   the sum stays continuous instead of losing the child's last interval.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read};
use std::sync::OnceLock;

use crate::os::ProcReading;

/// The inode in a `/proc/<pid>/fd` link such as `socket:[12345]`.
pub(crate) fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Units of utime/stime in `/proc/<pid>/stat` (USER_HZ, 100 nearly everywhere).
pub(crate) fn clock_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if v > 0 {
            v as u64
        } else {
            100
        }
    })
}

/// Clock ticks as nanoseconds: exact (a tick is 10 ms at USER_HZ 100), so rates come out the
/// same as computed from the ticks themselves.
pub(crate) fn ticks_to_ns(ticks: u64) -> u64 {
    let ns = ticks as u128 * 1_000_000_000 / clock_ticks() as u128;
    ns.min(u64::MAX as u128) as u64
}

/// The fields of `/proc/<pid>/stat` the monitor uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stat {
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    pub pgrp: i32,
    /// Clock ticks, all threads (exited ones included).
    pub utime: u64,
    pub stime: u64,
    /// Clock ticks of children that exited and were waited for.
    pub cutime: u64,
    pub cstime: u64,
    pub num_threads: u64,
    /// Clock ticks after boot; with the pid, identifies the process.
    pub starttime: u64,
}

impl Stat {
    /// A zombie (or dead) process: exited, not yet reaped.
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses `/proc/<pid>/stat`. `comm` may hold spaces and parentheses, so it runs from the first
/// `(` to the last `)`; fields are counted after that.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    // fields[0] is field 3 of proc(5) (state); fields[n] is field n + 3.
    let mut fields = [""; 20];
    let mut it = text[close + 1..].split_ascii_whitespace();
    for slot in &mut fields {
        *slot = it.next()?;
    }
    let unsigned = |i: usize| fields[i].parse::<u64>().ok();
    // cutime/cstime are signed longs in the kernel; never negative in practice.
    let signed = |i: usize| fields[i].parse::<i64>().ok().map(|v| v.max(0) as u64);
    Some(Stat {
        comm: text[open + 1..close].to_string(),
        state: fields[0].chars().next()?,
        ppid: fields[1].parse().ok()?,
        pgrp: fields[2].parse().ok()?,
        utime: unsigned(11)?,
        stime: unsigned(12)?,
        cutime: signed(13)?,
        cstime: signed(14)?,
        num_threads: unsigned(17)?,
        starttime: unsigned(19)?,
    })
}

/// The fields of `/proc/<pid>/status` (or `task/<tid>/status`) the monitor uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Status {
    /// Absent for zombies and kernel threads.
    pub rss_bytes: Option<u64>,
    pub hwm_bytes: Option<u64>,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
}

pub(crate) fn parse_status(text: &str) -> Status {
    let kib = |v: &str| {
        let n: u64 = v.trim_end_matches("kB").trim().parse().ok()?;
        Some(n * 1024)
    };
    let mut s = Status::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "VmRSS" => s.rss_bytes = kib(value),
            "VmHWM" => s.hwm_bytes = kib(value),
            "voluntary_ctxt_switches" => s.ctx_voluntary = value.parse().unwrap_or(0),
            "nonvoluntary_ctxt_switches" => s.ctx_involuntary = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    s
}

/// `/proc/<pid>/cmdline`: arguments separated (and terminated) by NUL, joined here by spaces.
pub(crate) fn parse_cmdline(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
    raw.split(|&b| b == 0)
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `/proc/<pid>/task/<tid>/children`: child pids separated by spaces.
pub(crate) fn parse_children(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.split_ascii_whitespace().filter_map(|p| p.parse().ok())
}

/// Reads a whole /proc file into a reused buffer.
pub(crate) fn read_into(path: &str, buf: &mut String) -> io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_string(buf).map(drop)
}

pub(crate) fn read_stat(pid: u32, buf: &mut String) -> io::Result<Stat> {
    read_into(&format!("/proc/{pid}/stat"), buf)?;
    parse_stat(buf).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad stat line"))
}

/// The command line as /proc shows it; `[comm]` for processes without one (kernel threads).
pub(crate) fn command(pid: u32) -> io::Result<String> {
    let cmd = parse_cmdline(&fs::read(format!("/proc/{pid}/cmdline"))?);
    if !cmd.is_empty() {
        return Ok(cmd);
    }
    Ok(format!("[{}]", read_stat(pid, &mut String::new())?.comm))
}

/// Numeric entries of a /proc directory (pids, tids).
pub(crate) fn numeric_entries(dir: &str) -> io::Result<impl Iterator<Item = u32>> {
    Ok(fs::read_dir(dir)?.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()))
}

/// Counts the open file descriptors of `pid` and, given a set, collects its socket inodes
/// (one `readlink` per fd: the costly part with many connections); the set needs the same
/// user (or root): the error is PermissionDenied otherwise.
///
/// The count is the size Linux ≥ 6.2 reports for `/proc/<pid>/fd` (one `stat`, where a listing
/// costs ~1 µs per fd, and taken before the listing so that the listing's own fd is not
/// counted); older kernels report 0 there, and the listing counts.
pub(crate) fn scan_fds(pid: u32, mut sockets: Option<&mut HashSet<u64>>) -> io::Result<u64> {
    let dir = format!("/proc/{pid}/fd");
    let size = fs::metadata(&dir)?.len();
    if sockets.is_none() && size > 0 {
        return Ok(size);
    }
    let mut n = 0;
    for entry in fs::read_dir(&dir)? {
        let Ok(entry) = entry else { continue };
        n += 1;
        let Some(sockets) = sockets.as_deref_mut() else {
            continue;
        };
        if let Ok(target) = fs::read_link(entry.path()) {
            if let Some(inode) = target.to_str().and_then(socket_inode) {
                sockets.insert(inode);
            }
        }
    }
    Ok(if size > 0 { size } else { n })
}

/// Whether this kernel has `/proc/<pid>/task/<tid>/children` (CONFIG_PROC_CHILDREN).
fn children_files() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| fs::metadata("/proc/thread-self/children").is_ok())
}

/// Every descendant of `root` (not `root` itself), sorted.
pub(crate) fn descendants(root: u32, buf: &mut String) -> Vec<u32> {
    let mut out = Vec::new();
    if children_files() {
        let mut queue = vec![root];
        while let Some(pid) = queue.pop() {
            let Ok(tids) = numeric_entries(&format!("/proc/{pid}/task")) else {
                continue;
            };
            for tid in tids {
                if read_into(&format!("/proc/{pid}/task/{tid}/children"), buf).is_ok() {
                    let kids: Vec<u32> = parse_children(buf).collect();
                    out.extend_from_slice(&kids);
                    queue.extend(kids);
                }
            }
        }
    } else {
        // Without children files: one pass over every process's ppid.
        let mut by_parent: HashMap<u32, Vec<u32>> = HashMap::new();
        if let Ok(pids) = numeric_entries("/proc") {
            for pid in pids {
                if let Ok(stat) = read_stat(pid, buf) {
                    by_parent.entry(stat.ppid).or_default().push(pid);
                }
            }
        }
        let mut queue = vec![root];
        while let Some(pid) = queue.pop() {
            if let Some(kids) = by_parent.get(&pid) {
                out.extend_from_slice(kids);
                queue.extend_from_slice(kids);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out.retain(|&p| p != root);
    out
}

/// Reads `pid` (started at `starttime`, to tell it from a reused pid) and, with
/// `include_children`, all its descendants. `None`: the process is gone.
pub(crate) fn read_process(
    pid: u32,
    starttime: u64,
    include_children: bool,
    with_sockets: bool,
    buf: &mut String,
) -> Option<ProcReading> {
    let stat = read_stat(pid, buf).ok()?;
    if stat.exited() || stat.starttime != starttime {
        return None;
    }
    let mut r = ProcReading {
        fds_readable: true,
        ..ProcReading::default()
    };
    let mut ticks = Ticks::default();
    let has_memory = add_member(
        pid,
        &stat,
        include_children,
        true,
        with_sockets,
        (&mut r, &mut ticks),
        buf,
    );
    // No memory line: it exited while being read; a half reading would show a false drop.
    if !has_memory && !read_stat(pid, buf).is_ok_and(|s| !s.exited() && s.starttime == starttime) {
        return None;
    }
    if include_children {
        for child in descendants(pid, buf) {
            if let Ok(stat) = read_stat(child, buf) {
                r.children += 1;
                add_member(
                    child,
                    &stat,
                    true,
                    false,
                    with_sockets,
                    (&mut r, &mut ticks),
                    buf,
                );
            }
        }
    }
    r.user_ns = ticks_to_ns(ticks.user);
    r.sys_ns = ticks_to_ns(ticks.sys);
    Some(r)
}

/// CPU clock ticks of a reading, summed before they become nanoseconds.
#[derive(Default)]
struct Ticks {
    user: u64,
    sys: u64,
}

/// Adds one process to a reading. `with_reaped`: count the time of its reaped children too
/// (tree mode, see the module doc). Returns whether its memory could be read.
fn add_member(
    pid: u32,
    stat: &Stat,
    with_reaped: bool,
    is_root: bool,
    with_sockets: bool,
    (r, ticks): (&mut ProcReading, &mut Ticks),
    buf: &mut String,
) -> bool {
    ticks.user += stat.utime + if with_reaped { stat.cutime } else { 0 };
    ticks.sys += stat.stime + if with_reaped { stat.cstime } else { 0 };
    r.threads += stat.num_threads;
    match scan_fds(pid, with_sockets.then_some(&mut r.sockets)) {
        Ok(n) => r.fds += n,
        // A child that exited meanwhile is not a visibility problem.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(_) => r.fds_readable = false,
    }
    // Memory is per process (every thread shows the same); switches are per thread.
    let mut memory: Option<Status> = None;
    if let Ok(tids) = numeric_entries(&format!("/proc/{pid}/task")) {
        for tid in tids {
            if read_into(&format!("/proc/{pid}/task/{tid}/status"), buf).is_err() {
                continue;
            }
            let s = parse_status(buf);
            r.ctx.insert(tid, (s.ctx_voluntary, s.ctx_involuntary));
            if memory.is_none() && s.rss_bytes.is_some() {
                memory = Some(s);
            }
        }
    }
    let Some(m) = memory else {
        return false;
    };
    r.rss_bytes += m.rss_bytes.unwrap_or(0);
    if is_root {
        r.hwm_bytes = m.hwm_bytes.unwrap_or(0);
    }
    true
}

/// Whether a live (non-zombie) process has process group `pgid` (one pass over /proc; true if
/// /proc cannot be listed).
pub(crate) fn live_member(pgid: u32) -> bool {
    let Ok(pids) = numeric_entries("/proc") else {
        return true;
    };
    let mut buf = String::new();
    pids.filter_map(|pid| read_stat(pid, &mut buf).ok())
        .any(|s| s.pgrp == pgid as i32 && !s.exited())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (my (odd) server) S 1 4242 4242 0 -1 4194560 1234 0 5 0 \
        250 75 12 3 20 0 8 0 123456 987654321 2560 18446744073709551615 1 1 0 0 0 0 0 \
        4096 0 0 0 0 17 1 0 0 0 0 0\n";

    #[test]
    fn stat_with_spaces_and_parentheses_in_comm() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(s.comm, "my (odd) server");
        assert_eq!(s.state, 'S');
        assert_eq!((s.ppid, s.pgrp), (1, 4242));
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (250, 75, 12, 3));
        assert_eq!(s.num_threads, 8);
        assert_eq!(s.starttime, 123456);
        assert!(!s.exited());
    }

    #[test]
    fn stat_of_a_zombie_and_junk() {
        let z = STAT.replace(") S ", ") Z ");
        assert!(parse_stat(&z).unwrap().exited());
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("12 (x) S 1 2"), None, "truncated");
        assert_eq!(parse_stat("12 )x( S"), None);
        let negative = STAT.replace(" 12 3 20 ", " -1 3 20 ");
        assert_eq!(parse_stat(&negative).unwrap().cutime, 0);
    }

    #[test]
    fn status_fields() {
        let text = "Name:\tpython3\nState:\tS (sleeping)\nVmPeak:\t  30000 kB\n\
            VmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t1\n\
            voluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t3\n";
        let s = parse_status(text);
        assert_eq!(s.rss_bytes, Some(10240 * 1024));
        assert_eq!(s.hwm_bytes, Some(20480 * 1024));
        assert_eq!((s.ctx_voluntary, s.ctx_involuntary), (17, 3));
        // A zombie's status has no memory lines.
        let z = parse_status("Name:\tx\nState:\tZ (zombie)\nvoluntary_ctxt_switches:\t1\n");
        assert_eq!((z.rss_bytes, z.ctx_voluntary), (None, 1));
    }

    #[test]
    fn cmdline_and_children() {
        assert_eq!(
            parse_cmdline(b"python3\0-m\0http.server\0"),
            "python3 -m http.server"
        );
        assert_eq!(
            parse_cmdline(b"nginx: worker process"),
            "nginx: worker process"
        );
        assert_eq!(parse_cmdline(b""), "");
        let kids: Vec<u32> = parse_children("12 13 99 ").collect();
        assert_eq!(kids, [12, 13, 99]);
    }

    #[test]
    fn the_fd_count_without_a_listing_equals_the_listing() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // `sleep`'s loader opens and closes files as it starts (seen failing as (6, 5)
        // against a listing of 6): count once it sleeps (state S) with a listing that held
        // still for 20 ms.
        let pid = child.id();
        let list = || fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count() as u64;
        let sleeping = || {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('S'))
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let before = list();
            std::thread::sleep(std::time::Duration::from_millis(20));
            if sleeping() && list() == before {
                break;
            }
            assert!(std::time::Instant::now() < until, "sleep never settled");
        }
        let listed = list();
        let counted = scan_fds(pid, None).unwrap();
        let mut sockets = HashSet::new();
        let scanned = scan_fds(pid, Some(&mut sockets)).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(listed >= 3, "{listed}");
        assert_eq!((counted, scanned), (listed, listed));
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        let mut buf = String::new();
        let stat = read_stat(me, &mut buf).unwrap();
        let r = read_process(me, stat.starttime, false, true, &mut buf).unwrap();
        assert!(r.threads >= 1 && r.fds >= 3 && r.rss_bytes > 0 && r.fds_readable);
        assert!(r.ctx.contains_key(&me));
        assert!(
            read_process(me, stat.starttime + 1, false, true, &mut buf).is_none(),
            "pid reuse"
        );
        assert!(!command(me).unwrap().is_empty());
    }
}
