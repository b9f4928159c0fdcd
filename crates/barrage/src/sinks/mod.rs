//! Where a run's figures go while it runs and when it ends: the terminal (a live line or the
//! dashboard), files written as the run goes, `/metrics`, the live page, and the final results.

pub mod baseline;
pub mod httpd;
pub mod influx;
pub mod live;
pub mod otlp;
pub mod outfile;
pub mod output;
pub mod prom;
pub mod push;
pub mod recorders;
pub mod second;
pub mod statsd;
pub mod tui;
pub mod web;
