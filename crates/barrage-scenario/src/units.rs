//! Parsing of the user's quantities: durations, rates, counts; one grammar for the CLI's flags
//! and scenario files. Each parser returns a message that clap prints after the flag's name,
//! so errors read "invalid value '0' for '-c': ...", and a scenario file after its key.

use std::time::Duration;

/// `10s`, `50ms`, `250us`, `2m`, `1h`, `1.5s`; a bare number means seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!(
            "'{s}' is negative; write a duration like 10s, 50ms, 250us"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration; write e.g. 10s, 50ms, 250us, 2m"))?;
    let mult = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("unknown unit '{u}'; use ns, us, ms, s, m or h")),
    };
    let secs = v * mult;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("'{s}' is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration that must be greater than zero.
pub fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = duration(s)?;
    if d.is_zero() {
        return Err("must be greater than zero, e.g. 10s or 50ms".into());
    }
    Ok(d)
}

/// The highest rate barrage accepts, messages (or connects) per second in total: far above
/// what one machine can send, and low enough that every schedule index, intended time and
/// count stays exact in the engine's arithmetic (a period of at least 10 ns).
pub const MAX_RATE: f64 = 1e8;

/// A rate per second, greater than zero and at most [`MAX_RATE`] (`1000`, `1.5k`, `2M`).
pub fn rate(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/s");
    if t.starts_with('-') {
        return Err("must be greater than zero".into());
    }
    let (num, mult) = match t.chars().last() {
        Some('k') | Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a rate; write e.g. 1000 or 2.5k (per second)"))?;
    let r = v * mult;
    if !r.is_finite() || r <= 0.0 {
        return Err("must be greater than zero".into());
    }
    if r > MAX_RATE {
        return Err(format!(
            "'{s}' is more than the 100M per second barrage can schedule; \
             give a rate up to 100M"
        ));
    }
    Ok(r)
}

/// A rate that may be zero (a point of a ramp: `0`, `0/s`, or a [`rate`]).
pub fn rate_or_zero(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/s");
    if t.parse::<f64>().is_ok_and(|v| v == 0.0) {
        return Ok(0.0);
    }
    rate(s)
}

/// A count of at least 1 (`1000`, `10k`, `1M`, `1_000`).
pub fn count(s: &str) -> Result<u64, String> {
    let t: String = s.trim().chars().filter(|&c| c != '_' && c != ',').collect();
    let (num, mult) = match t.chars().last() {
        Some('k') | Some('K') => (&t[..t.len() - 1], 1_000u64),
        Some('M') => (&t[..t.len() - 1], 1_000_000),
        _ => (t.as_str(), 1),
    };
    if num.starts_with('-') {
        return Err("must be at least 1".into());
    }
    let v: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    let n = v
        .checked_mul(mult)
        .ok_or_else(|| format!("'{s}' is too large"))?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

/// A size of at least 1 byte: `1000`, `64KiB`, `16MiB`, `1GiB` (`K`, `M`, `G` too, as
/// binary multiples; a trailing `B` optional).
pub fn bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err("must be at least 1 byte, e.g. 65536, 64KiB, 16MiB".into());
    }
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M') => (&t[..t.len() - 1], 20),
        Some('G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let v: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size, e.g. 65536, 64KiB, 16MiB"))?;
    let n = v
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("'{s}' is too large"))?;
    if n == 0 {
        return Err("must be at least 1 byte".into());
    }
    Ok(n)
}

/// A name (of a header, a parameter): not empty, no spaces around it.
pub fn name(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("the name is empty; give e.g. X-Api-Token".into());
    }
    Ok(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ms = Duration::from_millis;
        for (s, d) in [
            ("10s", ms(10_000)),
            ("50ms", ms(50)),
            ("1.5s", ms(1500)),
            ("2m", ms(120_000)),
            ("3", ms(3000)),
            ("250us", Duration::from_micros(250)),
            ("0", ms(0)),
        ] {
            assert_eq!(duration(s).unwrap(), d, "{s}");
        }
        for bad in ["", "abc", "10x", "-5s", "1e999s", "s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert!(positive_duration("0s").is_err());
        assert!(positive_duration("1ms").is_ok());
    }

    #[test]
    fn rates_and_counts() {
        assert_eq!(rate("1000").unwrap(), 1000.0);
        assert_eq!(rate("2.5k").unwrap(), 2500.0);
        assert_eq!(rate("1M/s").unwrap(), 1e6);
        assert_eq!(rate("100M").unwrap(), 1e8);
        for bad in ["1e19", "1e16", "100000001", "1e999", "inf", "NaN"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
        for bad in ["0", "-1", "x", ""] {
            assert!(rate(bad).is_err(), "{bad}");
        }
        assert_eq!(count("10k").unwrap(), 10_000);
        assert_eq!(count("1_000").unwrap(), 1000);
        for bad in ["0", "-3", "1.5", "k", "99999999999999999999"] {
            assert!(count(bad).is_err(), "{bad}");
        }
    }
}
