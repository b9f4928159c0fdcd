//! The user's quantities (durations, rates, counts): one grammar for flags and scenario files,
//! defined in `barrage_scenario::units` and used here under its old name.

pub use barrage_scenario::units::*;
