//! The run's stop flags, and the recovery window they can cut.

use crate::resolve::watch::Watch;
use crate::sinks::output::Live;
use crate::sys;
use barrage_metrics::{MonitorSeries, SpawnRecord};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The run's stop flags. `stop` is set by a stop signal ([`sys::stop_on_signals`]) and by the
/// dashboard's `q`; `signalled` by the signals only (a `q` is a user stop, not an interrupt).
pub(crate) struct Signals {
    pub stop: Arc<AtomicBool>,
    signalled: Arc<AtomicBool>,
}

impl Signals {
    pub(crate) fn install() -> Signals {
        let flags = sys::stop_on_signals();
        Signals {
            stop: flags.stop,
            signalled: flags.signalled,
        }
    }

    pub(crate) fn signalled(&self) -> bool {
        self.signalled.load(Ordering::Relaxed)
    }
}

/// The recovery window, then the monitor's series. It runs after a user stop too; a signal,
/// Ctrl-C or one more `q` cuts it.
pub(crate) fn recover(
    w: Watch,
    live: &Live,
    signals: &Signals,
) -> (MonitorSeries, Option<SpawnRecord>) {
    let keys = live.keys();
    let quits_before = keys.as_ref().map_or(0, |k| k.quits());
    let cut = || {
        signals.signalled()
            || match &keys {
                Some(k) => k.skip_recovery(quits_before),
                None => signals.stop.load(Ordering::Relaxed),
            }
    };
    live.recovering();
    w.finish(cut, live.silent())
}
