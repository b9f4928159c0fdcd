//! The monitor against processes whose behaviour is known: memory growth, flat memory, a CPU
//! share, an fd leak, children, an exit, and the monitor's own overhead.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::{monitor, Py, MIB};
use barrage_monitor::{Monitor, MonitorConfig};

/// The CPU-share test runs alone (the machine may have two cores); the others share.
static CPU: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    CPU.read().unwrap_or_else(|e| e.into_inner())
}

fn exclusive() -> RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|e| e.into_inner())
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn rss_of_a_memory_grower_rises_by_exactly_what_it_wrote() {
    let _g = shared();
    // 1 MiB written (so resident) every 100 ms, 30 times; it reports its own RSS before and
    // after. The monitor must see the growth, never a fall, and end where the process says.
    // (How fast it grows is a property of the clock: the analysis fits slopes on synthetic
    // series in its unit tests.)
    let mut py = Py::start(
        "import time\n\
         def rss():\n\
         \x20   return int(open('/proc/self/statm').read().split()[1]) * 4096\n\
         keep = []\n\
         print('ready', rss(), flush=True)\n\
         t0 = time.monotonic()\n\
         for i in range(30):\n\
         \x20   keep.append(b'x' * (1 << 20))\n\
         \x20   time.sleep(max(0, t0 + 0.1 * (i + 1) - time.monotonic()))\n\
         print('done', rss(), flush=True)\n\
         time.sleep(60)\n",
    );
    let before: f64 = py.line()[6..].parse().unwrap();
    let m = monitor(vec![py.pid()], 100 * MS, Instant::now());
    let after: f64 = py.line()[5..].parse().unwrap();
    wait_for_sample_after(&m, 0.25);
    let series = m.stop();
    let s = &series.processes[0].samples;
    let rss: Vec<f64> = s.iter().map(|x| x.rss_bytes as f64).collect();
    println!(
        "memory grower: {:.1} -> {:.1} MiB (process: {:.1} -> {:.1}) over {} samples",
        rss[0] / MIB,
        rss[rss.len() - 1] / MIB,
        before / MIB,
        after / MIB,
        rss.len()
    );
    assert!((after - before) / MIB >= 29.0, "the process wrote 30 MiB");
    for w in rss.windows(2) {
        assert!(w[1] + MIB >= w[0], "RSS fell while it only grew: {rss:?}");
    }
    let last = s.last().unwrap();
    assert!(
        (last.rss_bytes as f64 - after).abs() < 2.0 * MIB,
        "monitor {} vs process {after}",
        last.rss_bytes
    );
    assert!(last.rss_peak_bytes >= last.rss_bytes);
}

/// Wait until the monitor has a sample taken `secs` after now (sampling is on its own thread).
fn wait_for_sample_after(m: &Monitor, secs: f64) {
    let now = m.latest().map_or(0.0, |l| l.t);
    let give_up = Instant::now() + Duration::from_secs(30);
    while m.latest().is_none_or(|l| l.t < now + secs) && Instant::now() < give_up {
        sleep(20 * MS);
    }
}

#[test]
fn rss_of_a_steady_process_stays_flat() {
    let _g = shared();
    let mut py = Py::start(
        "import time\nx = b'x' * (20 << 20)\nprint('ready', flush=True)\ntime.sleep(60)\n",
    );
    py.line();
    let m = monitor(vec![py.pid()], 100 * MS, Instant::now());
    sleep(2500 * MS);
    let series = m.stop();
    let rss: Vec<u64> = series.processes[0]
        .samples
        .iter()
        .filter(|x| x.t >= 1.0)
        .map(|x| x.rss_bytes)
        .collect();
    let (min, max) = (*rss.iter().min().unwrap(), *rss.iter().max().unwrap());
    println!(
        "steady: RSS {:.1}..{:.1} MiB over {} samples",
        min as f64 / MIB,
        max as f64 / MIB,
        rss.len()
    );
    assert!(rss.len() >= 10);
    assert!(min as f64 / MIB > 20.0, "the 20 MiB are resident");
    assert!(max - min < 2 << 20, "flat within 2 MiB: {min}..{max}");
}

#[test]
fn cpu_samples_add_up_to_the_cpu_time_the_process_used() {
    let _g = exclusive();
    // (Its loop asks the kernel for its CPU time, so the time splits between user and system.)
    // The burner starts once the monitor has its first reading (a file appears), burns 0.6 s
    // of its own CPU time, and says how much it used. However busy the machine (it may take
    // longer in wall time), the CPU the samples show adds up to that.
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let mut py = Py::start(&format!(
        "import time, os\n\
         print('ready', flush=True)\n\
         while not os.path.exists({go:?}):\n\
         \x20   time.sleep(0.005)\n\
         c0 = time.process_time()\n\
         while time.process_time() - c0 < 0.6:\n\
         \x20   pass\n\
         print('done', time.process_time() - c0, flush=True)\n\
         time.sleep(60)\n"
    ));
    py.line();
    let interval = 100 * MS;
    let m = monitor(vec![py.pid()], interval, Instant::now());
    wait_for_sample_after(&m, 0.0);
    std::fs::write(&go, b"").unwrap();
    let burned: f64 = py.line()[5..].parse().unwrap();
    wait_for_sample_after(&m, 0.25);
    let series = m.stop();
    let s = &series.processes[0].samples;
    let mut used = 0.0;
    let mut prev_t = None;
    for x in s {
        let dt = prev_t.map_or(interval.as_secs_f64(), |p| x.t - p);
        used += x.cpu_pct / 100.0 * dt;
        prev_t = Some(x.t);
    }
    println!("burner: process says {burned:.3} s of CPU, samples add up to {used:.3} s");
    // Clock ticks are 10 ms; the polling before the burn costs a little more.
    assert!(
        (used - burned).abs() < 0.1,
        "samples {used:.3} s vs process {burned:.3} s"
    );
    let cores = std::thread::available_parallelism().unwrap().get() as f64;
    for x in s {
        assert!((x.cpu_user_pct + x.cpu_sys_pct - x.cpu_pct).abs() < 1e-9);
        // The machine's share divides by all online cores (at least the ones we may use).
        assert!(x.cpu_machine_pct <= x.cpu_pct / cores + 1e-9);
    }
}

#[test]
fn fds_of_a_leaker_grow_by_exactly_what_it_opened() {
    let _g = shared();
    let mut py = Py::start(
        "import time, os\n\
         fs = []\n\
         print('ready', len(os.listdir('/proc/self/fd')) - 1, flush=True)\n\
         t0 = time.monotonic()\n\
         for i in range(40):\n\
         \x20   fs.append(open('/dev/null'))\n\
         \x20   time.sleep(max(0, t0 + 0.05 * (i + 1) - time.monotonic()))\n\
         print('done', flush=True)\n\
         time.sleep(60)\n",
    );
    let before: u64 = py.line()[6..].parse().unwrap();
    let m = monitor(vec![py.pid()], 100 * MS, Instant::now());
    py.line();
    wait_for_sample_after(&m, 0.25);
    let series = m.stop();
    let s = &series.processes[0].samples;
    let fds: Vec<u64> = s.iter().map(|x| x.fds).collect();
    println!("fd leaker: {before} at start, samples {fds:?}");
    assert!(fds.windows(2).all(|w| w[1] >= w[0]), "{fds:?}");
    assert_eq!(*fds.last().unwrap(), before + 40, "{fds:?}");
    assert_eq!(s[0].threads, 1);
}

#[test]
fn children_are_summed_in_when_asked() {
    let _g = shared();
    // A parent that starts a child holding 30 MiB, then both sleep.
    let mut py = Py::start(
        "import subprocess, sys, time\n\
         c = subprocess.Popen([sys.executable, '-c', \
             'import time, sys; x = b\"x\" * (30 << 20); print(1, flush=True); time.sleep(60)'], \
             stdout=subprocess.PIPE)\n\
         c.stdout.readline()\n\
         print(c.pid, flush=True)\n\
         time.sleep(60)\n",
    );
    let child: i32 = py.line().parse().unwrap();
    let start = |include_children| {
        Monitor::start(MonitorConfig {
            pids: vec![py.pid()],
            include_children,
            interval: 100 * MS,
            base: Instant::now(),
            include_self: false,
            self_children: false,
            sockets: true,
        })
        .unwrap()
    };
    let (alone, tree) = (start(false), start(true));
    sleep(400 * MS);
    let (alone, tree) = (alone.stop(), tree.stop());
    let a = alone.processes[0].samples.last().unwrap();
    let t = tree.processes[0].samples.last().unwrap();
    println!(
        "children: RSS alone {:.1} MiB, with children {:.1} MiB; fds {} vs {}",
        a.rss_bytes as f64 / MIB,
        t.rss_bytes as f64 / MIB,
        a.fds,
        t.fds
    );
    assert!(t.rss_bytes as f64 - a.rss_bytes as f64 > 29.0 * MIB);
    assert!(t.threads > a.threads && t.fds > a.fds);
    assert!(tree.processes[0].command.contains("subprocess"));
    // How many were summed, and what the summary calls it (issue 43: not "the server").
    assert_eq!((a.children, t.children), (0, 1));
    let pid = py.pid();
    assert_eq!(alone.processes[0].who(), format!("PID {pid}"));
    assert_eq!(
        tree.processes[0].who(),
        format!("PID {pid} and 1 child process")
    );
    // SAFETY: kill has no memory-safety preconditions. The parent's own death would orphan it.
    unsafe { libc::kill(child, libc::SIGKILL) };
}

#[test]
fn a_process_that_exits_keeps_its_samples_and_gets_no_more() {
    let _g = shared();
    let mut py = Py::start("import time\nprint('ready', flush=True)\ntime.sleep(0.5)\n");
    py.line();
    let m = monitor(vec![py.pid()], 50 * MS, Instant::now());
    // Not reaped yet when it exits: a zombie, which must read as gone.
    sleep(1000 * MS);
    let latest = m.latest().unwrap();
    assert!(!latest.processes[0].running, "{latest:?}");
    assert!(latest.processes[0].sample.is_some());
    assert!(latest.host.is_some());
    py.wait();
    sleep(200 * MS);
    let series = m.stop();
    let s = &series.processes[0].samples;
    println!(
        "exiting process: {} samples, last at t={:.2}",
        s.len(),
        s.last().unwrap().t
    );
    assert!((3..=12).contains(&s.len()), "{} samples", s.len());
    assert!(s.last().unwrap().t < 0.7);
    assert!(series.host.len() >= 20, "the host is still sampled");
}

#[test]
fn monitoring_overhead_is_below_1_pct_of_a_core_at_1_s() {
    let _g = shared();
    // A listening socket, so that each sample also lists the TCP sockets (sock_diag).
    let mut py = Py::start(
        "import socket, time\n\
         s = socket.socket()\n\
         s.bind(('127.0.0.1', 0))\n\
         s.listen(8)\n\
         print('ready', flush=True)\n\
         time.sleep(60)\n",
    );
    py.line();
    let m = monitor(vec![py.pid()], 100 * MS, Instant::now());
    sleep(3000 * MS);
    let tid = m.sampler_tid().expect("the sampler runs");
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    let cpu = m.sampler_cpu_time();
    let series = m.stop();
    assert_eq!(series.processes[0].samples[0].tcp.listen, 1);
    let samples = series.processes[0].samples.len();
    assert!(samples >= 25, "{samples} samples in 3 s");
    let per_sample = cpu / samples as u32;
    // One sample per second at a 1 s interval.
    let pct_at_1s = per_sample.as_secs_f64() * 100.0;
    println!(
        "monitor overhead: {samples} samples (1 process + host) used {:.2} ms of CPU \
         (/proc/self/task/{tid}/stat: {ticks} ticks); {:.3} ms per sample = {pct_at_1s:.3} % \
         of a core at a 1 s interval ({:.2} % at 100 ms)",
        cpu.as_secs_f64() * 1e3,
        per_sample.as_secs_f64() * 1e3,
        pct_at_1s * 10.0
    );
    assert!(cpu > Duration::ZERO);
    assert!(pct_at_1s < 1.0, "{pct_at_1s} % of a core");
}
