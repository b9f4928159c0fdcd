//! Everything the engine asks of the operating system that differs between Linux, other Unixes
//! and Windows, one module per concern; no `cfg` for a platform appears outside this folder.
//!
//! * [`alarm`]: the monotonic clock and the precise wake-up of an event loop (a timerfd on
//!   Linux; on Windows a 1 ms system timer period and waits rounded up to the millisecond,
//!   because a wait there is millisecond-granular).
//! * [`net`]: what a connect's error codes mean (in progress, address in use, out of ports or
//!   descriptors) and binding a source address without choosing its port.
//! * [`env_bytes`]: an environment variable's raw bytes (`{secret:NAME}`).

pub mod alarm;
pub mod net;

/// An environment variable's value as bytes: exactly as set on Unix; on Windows its UTF-16
/// as UTF-8 (unpaired surrogates become U+FFFD).
pub fn env_bytes(name: &str) -> Option<Vec<u8>> {
    let v = std::env::var_os(name)?;
    #[cfg(unix)]
    {
        Some(std::os::unix::ffi::OsStringExt::into_vec(v))
    }
    #[cfg(not(unix))]
    {
        Some(v.to_string_lossy().into_owned().into_bytes())
    }
}
