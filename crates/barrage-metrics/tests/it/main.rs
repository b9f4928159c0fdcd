//! Integration tests of `barrage-metrics`: one test binary (`cargo test -p barrage-metrics --test it`).

// Deltas streamed as JSON from another process merge exactly.
mod delta_serde;
