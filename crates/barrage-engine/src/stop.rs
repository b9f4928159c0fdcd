//! The process's stop state, below everything that heeds it: a second signal hurries every
//! run ([`hurry`]), and the workers and a script's watch read it ([`hurried`]).

use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a stopped run should not wait for what is in flight: the drain ends at once.
static HURRY: AtomicBool = AtomicBool::new(false);

/// Cut the drain short (a second signal): workers stop waiting for replies in flight, which
/// end as in flight at the end; nothing measured is dropped. For the process's runs from now
/// on, so call it only once the run was told to stop.
pub fn hurry() {
    HURRY.store(true, Ordering::Relaxed);
}

pub(crate) fn hurried() -> bool {
    HURRY.load(Ordering::Relaxed)
}
