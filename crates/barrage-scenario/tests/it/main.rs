//! Integration tests of `barrage-scenario`: one test binary (`cargo test -p barrage-scenario --test it`).

// Every scenario in `examples/` is valid.
mod examples;
// Scenario files, good and bad: one line naming the file, the line and the fix.
mod files;
// The crate depends on no other barrage crate.
mod floor;
// `docs/scenario.schema.json` is generated from the model and up to date.
mod schema;
