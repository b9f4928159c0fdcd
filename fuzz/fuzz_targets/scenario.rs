//! Arbitrary text as a scenario file, TOML and YAML: loading and checking must never panic,
//! an error must name the file, and a file that checks must compile into users (for a raw
//! TCP and an HTTP target) without panicking either.
#![no_main]

use barrage_engine::users::{compile, compile::Context};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A directory with no files: a `users.data` CSV the text names is simply missing.
    let dir = Path::new("/nonexistent-barrage-fuzz");
    for format in [barrage_scenario::Format::Toml, barrage_scenario::Format::Yaml] {
        match barrage_scenario::load_str("fuzz.scenario", text, format, dir) {
            Err(e) => {
                let line = e.to_string();
                assert!(line.contains("fuzz.scenario"), "{line}");
            }
            Ok(checked) => {
                for http in [false, true] {
                    let cx = Context {
                        dir,
                        host_header: "127.0.0.1",
                        headers: &[],
                        http,
                        no_replies: false,
                        timeout: Duration::from_secs(1),
                        // Every `{secret:NAME}` has a value here (the run refuses unset ones).
                        secret: &|_| Some(b"s3cret".to_vec()),
                        rpc: &[],
                        mqtt: None,
                    };
                    let _ = compile(&checked, &cx);
                }
            }
        }
    }
});
