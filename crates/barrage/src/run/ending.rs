//! How a run ended, as the result's status and message and the exit code: decided here, once,
//! for every source of a run.

use barrage_metrics::failure::plainly_failed;
use barrage_metrics::{Outcome, Status};

/// How a source's load ended.
pub enum SourceEnd {
    /// It ran its course.
    Completed,
    /// The stop flag ended it: a signal, or `q` in the dashboard.
    Interrupted,
    /// Nothing could connect: why.
    Unreachable(String),
    /// Parts of a split run failed: which (`shard 1 exited with 1`).
    Failed(String),
    /// A split run's shards lack something to make a whole run: what, as the merge says it.
    Incomplete(String),
}

/// The result's status and message, and the exit code (before thresholds and the baseline).
pub struct Ending {
    pub status: Status,
    pub message: Option<String>,
    pub code: i32,
}

/// What else than the source's end decides the ending.
pub struct Seen<'a> {
    /// The dashboard's `q` stopped the run (and no signal came).
    pub user_stop: bool,
    /// `--out` could not write a second, and stopped the load.
    pub out_failed: bool,
    /// Said after the message ("2 processes merged").
    pub note: Option<&'a str>,
    pub target: &'a str,
    /// Say a failure to connect or a silent server on stderr.
    pub say: bool,
    /// `--lenient-exit`: a run that ran its course is not failed for its requests' failures.
    pub lenient: bool,
}

impl Ending {
    pub fn of(end: SourceEnd, outcome: &Outcome, seen: Seen<'_>) -> Ending {
        let noted = |m: String| match seen.note {
            Some(n) => format!("{m}; {n}"),
            None => m,
        };
        let failed = |m: String| Ending {
            status: Status::Failed,
            message: Some(noted(m)),
            code: 1,
        };
        if seen.out_failed {
            return failed("--out: a second could not be written; the load was stopped".into());
        }
        let t = &outcome.summary.totals;
        // Requests went out and not one byte came back: the server accepted and never
        // answered. Nothing was measured, and saying so beats a summary of zeros with exit 0.
        // (Scenario runs may send without awaiting anything: their steps are judged instead.)
        let silent = t.sent > 0
            && t.completed == 0
            && t.bytes_read == 0
            && outcome.summary.steps.is_empty()
            && outcome.summary.broadcast.is_none();
        match end {
            SourceEnd::Failed(why) => failed(why),
            SourceEnd::Completed if silent => {
                let msg = format!(
                    "{} never answered: {} requests sent, not a byte came back",
                    seen.target, t.sent
                );
                if seen.say {
                    crate::sys::err_line(format_args!("error: {msg}"));
                }
                failed(msg)
            }
            SourceEnd::Completed if !seen.lenient && plainly_failed(&outcome.summary).is_some() => {
                say_failed(&seen, plainly_failed(&outcome.summary).unwrap_or_default())
            }
            SourceEnd::Completed => Ending {
                status: Status::Completed,
                message: seen.note.map(str::to_string),
                code: 0,
            },
            SourceEnd::Incomplete(why) => Ending {
                status: Status::Incomplete,
                message: Some(why),
                code: 0,
            },
            // `q` in the dashboard: a normal end, by the usual exit rules.
            SourceEnd::Interrupted
                if seen.user_stop
                    && !seen.lenient
                    && plainly_failed(&outcome.summary).is_some() =>
            {
                say_failed(&seen, plainly_failed(&outcome.summary).unwrap_or_default())
            }
            SourceEnd::Interrupted if seen.user_stop => {
                let at = barrage_metrics::figures::load_end(&outcome.timeseries);
                Ending {
                    status: Status::Stopped,
                    message: Some(noted(format!("stopped by the user at {at:.1} s"))),
                    code: 0,
                }
            }
            SourceEnd::Interrupted => Ending {
                status: Status::Interrupted,
                message: Some(noted("interrupted by a signal".to_string())),
                code: 130,
            },
            SourceEnd::Unreachable(why) => {
                let msg = format!("cannot connect to {}: {why}", seen.target);
                if seen.say {
                    crate::sys::err_line(format_args!("error: {msg}"));
                }
                failed(msg)
            }
        }
    }
}

/// A run whose requests (nearly) all failed: said on stderr with the target, as a failed
/// ending (exit 1).
fn say_failed(seen: &Seen<'_>, why: String) -> Ending {
    let msg = format!("{}: {why}", seen.target);
    if seen.say {
        crate::sys::err_line(format_args!("error: {msg}"));
    }
    Ending {
        status: Status::Failed,
        message: Some(match seen.note {
            Some(n) => format!("{msg}; {n}"),
            None => msg,
        }),
        code: 1,
    }
}
