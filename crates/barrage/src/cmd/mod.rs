//! The subcommands: each turns its arguments into work and returns the exit code.

pub mod compare;
pub mod demo;
pub mod find_max;
pub mod merge;
pub mod report;
pub mod run;
pub mod serve;
pub mod validate;
pub mod versus;
