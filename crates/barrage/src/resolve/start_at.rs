//! `--start-at TIME`: the wall-clock instant a split run's shards share as time zero. Read
//! strictly (a real UTC date and time, or `@UNIX_SECONDS`), refused when it cannot be meant
//! (gone by, or further ahead than anyone waits), and waited for aloud: when the run starts,
//! then a countdown on stderr.
//!
//! Key decision: a shard that comes up a little late (a slow node) still starts, on the
//! common timeline, missing its first moments, as the engine has always done; a start gone by
//! longer than [`LATE`], or by the whole load, is a mistake and refused before anything runs.
//! The countdown is the binary's: the engine still waits the last fraction of a second to
//! the instant itself.

use crate::usage::Usage;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How late a shard may start and still run (missing its first moments).
pub const LATE: Duration = Duration::from_secs(5);

/// The furthest ahead a run waits for its start.
pub const MAX_AHEAD: Duration = Duration::from_secs(7 * 24 * 3600);

const HOW: &str = "give a UTC time like 2026-11-23T08:00:00Z, or @UNIX_SECONDS";

/// `TIME` as Unix seconds: `@SECONDS` (fractions allowed), or RFC 3339 UTC
/// (`2026-11-23T08:00:00Z`) naming a real date and time.
pub fn parse(v: &str) -> Result<f64, String> {
    let v = v.trim();
    let secs = match v.strip_prefix('@') {
        Some(n) => n.trim().parse::<f64>().ok(),
        // A date that reads back as written is a real one (no 2026-02-30, no 25:00).
        None => barrage_report::series::unix_seconds(v)
            .filter(|s| *s >= 0.0 && crate::sys::rfc3339(*s as u64) == v),
    };
    secs.filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| HOW.to_string())
}

/// Now, as Unix nanoseconds.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `--start-at TIME` of a run, checked against `now_ns`: as Unix nanoseconds. `load` is how
/// long the load lasts (warm-up and duration) when that is known: a start gone by that long
/// ago leaves nothing to run.
pub fn check(v: &str, now_ns: u64, load: Option<Duration>) -> Result<u64, Usage> {
    let bad = |why: String| Usage::value("--start-at", v, why);
    let secs = parse(v).map_err(bad)?;
    let now = now_ns as f64 / 1e9;
    let it_is = crate::sys::rfc3339(now_ns / 1_000_000_000);
    if secs - now > MAX_AHEAD.as_secs_f64() {
        return Err(bad(format!(
            "is more than 7 days from now (it is {it_is}), further than barrage waits: give a \
             nearer time, or start the command later (at, cron, systemd-run --on-calendar)"
        )));
    }
    let late = now - secs;
    let late_limit = load.map_or(LATE, |l| l.min(LATE)).as_secs_f64();
    if late > 0.0 && late >= late_limit {
        return Err(bad(format!(
            "was {} ago (it is {it_is}): the run would {}; give a time in the future, e.g. \
             @$(( $(date +%s) + 30 ))",
            span(Duration::from_secs_f64(late.min(1e12))),
            if load.is_some_and(|l| late >= l.as_secs_f64()) {
                "have nothing left to run"
            } else {
                "start that late, missing its first seconds"
            }
        )));
    }
    Ok((secs * 1e9) as u64)
}

/// `3 days 4h`, `2h05m`, `4m10s`, `12s`, `0.4s`.
pub fn span(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60) {
        (0, 0, 0, _) if s < 10 => format!("{:.1}s", d.as_secs_f64()),
        (0, 0, 0, sec) => format!("{sec}s"),
        (0, 0, m, sec) => format!("{m}m{sec:02}s"),
        (0, h, m, _) => format!("{h}h{m:02}m"),
        (days, h, _, _) => format!("{days} day{} {h}h", if days == 1 { "" } else { "s" }),
    }
}

/// When the countdown next speaks, `left` before the start: every second in the last ten,
/// then at round marks (every 10 s in the last minute, every minute in the last ten, every
/// 10 minutes in the last hour, then hourly), so that a log holds a few dozen lines at most.
pub fn next_mark(left: Duration) -> Duration {
    let s = left.as_secs_f64();
    let step = match s {
        s if s <= 10.0 => 1.0,
        s if s <= 60.0 => 10.0,
        s if s <= 600.0 => 60.0,
        s if s <= 3600.0 => 600.0,
        _ => 3600.0,
    };
    // The largest multiple of the step strictly below `left` (at least 1 s before the start).
    let k = ((s / step).ceil() - 1.0).max(0.0);
    Duration::from_secs_f64((k * step).max(1.0).min(s))
}

/// Waits until about a second before `at_ns` (the engine waits the rest to the instant),
/// saying on stderr when the run starts and counting down, unless `quiet` (then one line, and
/// only for a wait longer than [`LATE`]). Returns early when `stop` is set.
pub fn wait(at_ns: u64, stop: &AtomicBool, quiet: bool) {
    let left = |now: u64| Duration::from_nanos(at_ns.saturating_sub(now));
    let first = left(now_ns());
    let when = crate::sys::rfc3339(at_ns / 1_000_000_000);
    if first.is_zero() {
        let late = Duration::from_nanos(now_ns().saturating_sub(at_ns));
        if !quiet && late >= Duration::from_millis(100) {
            crate::sys::err_line(format_args!(
                "barrage: --start-at {when} passed {} ago: this shard starts late, missing its \
                 first {}",
                span(late),
                span(late)
            ));
        }
        return;
    }
    if quiet && first <= LATE {
        return;
    }
    if first > Duration::from_secs(1) || !quiet {
        crate::sys::err_line(format_args!(
            "barrage: the run starts at {when} (in {}); waiting (Ctrl-C to cancel)",
            span(first)
        ));
    }
    if quiet {
        return;
    }
    let mut mark = next_mark(first);
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let l = left(now_ns());
        if l <= Duration::from_secs(1) {
            return;
        }
        if l <= mark {
            crate::sys::err_line(format_args!("barrage: starts in {}", span(l)));
            mark = next_mark(l);
            continue;
        }
        std::thread::sleep((l - mark).min(Duration::from_millis(100)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_795_420_800 * 1_000_000_000; // 2026-11-23T08:00:00Z

    #[test]
    fn start_times_are_read_strictly() {
        assert_eq!(parse("2026-11-23T08:00:00Z"), Ok(1_795_420_800.0));
        assert_eq!(parse("@1795420800.5"), Ok(1_795_420_800.5));
        for bad in [
            "2026-02-30T08:00:00Z",
            "2026-13-01T08:00:00Z",
            "2026-11-23T25:00:00Z",
            "2026-11-23T08:61:00Z",
            "2026-11-23 08:00:00Z",
            "@-5",
            "@inf",
            "@NaN",
            "@0",
            "tomorrow",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn impossible_starts_are_refused_naming_the_flag() {
        let s = Duration::from_secs;
        let e = |v: &str, load| check(v, NOW, load).unwrap_err().to_string();
        // Far ahead, absurdly far (once a u64 overflow), gone by, gone by the whole load.
        let far = e("@99999999999999999999", None);
        assert!(
            far.starts_with("--start-at @99999999999999999999: is "),
            "{far}"
        );
        assert!(far.contains("more than 7 days from now"), "{far}");
        assert!(e("2026-11-30T08:00:01Z", None).contains("more than 7 days"));
        let past = e("2026-11-23T07:59:00Z", None);
        assert!(
            past.contains("was 1m00s ago (it is 2026-11-23T08:00:00Z)"),
            "{past}"
        );
        assert!(past.contains("missing its first seconds"), "{past}");
        let over = e("2026-11-23T07:59:57Z", Some(s(3)));
        assert!(over.contains("nothing left to run"), "{over}");
        assert!(e("2026-02-30T08:00:00Z", None).contains("give a UTC time"));
        // Within reach: ahead up to 7 days, or a shard a moment late.
        assert_eq!(
            check("@1795420810", NOW, None).unwrap(),
            NOW + 10_000_000_000
        );
        assert!(check("2026-11-30T08:00:00Z", NOW, None).is_ok());
        assert!(check("2026-11-23T07:59:58Z", NOW, Some(s(60))).is_ok());
    }

    #[test]
    fn the_countdown_speaks_at_round_marks() {
        let s = Duration::from_secs;
        let marks = |mut left: Duration| {
            let mut out = Vec::new();
            while left > s(1) {
                left = next_mark(left);
                out.push(left.as_secs());
            }
            out
        };
        assert_eq!(marks(s(5)), [4, 3, 2, 1]);
        assert_eq!(marks(s(35)), [30, 20, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(
            marks(Duration::from_millis(125_500)),
            [120, 60, 50, 40, 30, 20, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]
        );
        assert_eq!(marks(s(7200)).len(), 1 + 5 + 9 + 5 + 9);
        assert_eq!(span(s(3 * 86_400 + 4 * 3600)), "3 days 4h");
        assert_eq!(span(s(7500)), "2h05m");
        assert_eq!(span(s(250)), "4m10s");
        assert_eq!(span(Duration::from_millis(400)), "0.4s");
    }
}
