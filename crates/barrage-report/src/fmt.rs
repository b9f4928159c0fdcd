//! Formatting of numbers, durations and byte counts for people.
//!
//! Every figure shows about three significant digits in a unit picked per value (µs below 1 ms,
//! ms below 1 s, then s; B, KiB, MiB, GiB), and counts get thousands separators. The unit is
//! picked after rounding, so 999.96 µs reads `1.00 ms`, never `1000 µs`.

/// The TLS line of a result: the setting says what was asked ("verified" means verification
/// on); a certificate was only verified if at least one handshake completed.
pub fn tls_setting(r: &barrage_metrics::RunResult) -> Option<String> {
    let asked = r.config.tls.as_deref()?;
    let handshakes = r.summary.tls_us.as_ref().map_or(0, |t| t.count);
    Some(if asked == "verified" && handshakes == 0 {
        "verification on; no handshake completed, nothing verified".into()
    } else {
        asked.to_string()
    })
}

/// `20012` -> `20,012`.
pub use barrage_metrics::thousands;

/// A rate or other non-negative real: whole with separators from 100 up, else 3 digits; a
/// plain `0` for nothing at all.
/// HTTP/2 and gRPC streams in flight per connection (`--streams`; 0: as the server allows).
pub fn streams(n: u32) -> String {
    match n {
        0 => "streams as the server allows".into(),
        1 => "1 stream per connection".into(),
        n => format!("{} streams per connection", thousands(u64::from(n))),
    }
}

pub fn real(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let x = x.max(0.0);
    if x == 0.0 {
        "0".into()
    } else if x >= 99.95 {
        thousands(x.round() as u64)
    } else {
        sig3(x)
    }
}

/// [`real`] for a value that may be negative (a server's gauge).
pub fn signed_real(x: f64) -> String {
    if x < 0.0 {
        format!("-{}", real(-x))
    } else {
        real(x)
    }
}

/// Three significant digits, no separators: 4.567 -> `4.57`, 45.67 -> `45.7`, 456.7 -> `457`.
fn sig3(x: f64) -> String {
    if x < 9.995 {
        format!("{x:.2}")
    } else if x < 99.95 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// A duration given in microseconds: `45.0 µs`, `3.18 ms`, `12.4 ms`, `1.20 s`.
///
/// Microseconds keep at most one decimal: the histograms resolve whole microseconds.
pub fn duration_us(us: f64) -> String {
    if !us.is_finite() {
        return "n/a".into();
    }
    let us = us.max(0.0);
    if us < 99.95 {
        format!("{us:.1} µs")
    } else if us < 999.5 {
        format!("{us:.0} µs")
    } else if us < 999_500.0 {
        format!("{} ms", sig3(us / 1e3))
    } else {
        format!("{} s", sig3(us / 1e6))
    }
}

/// A duration as a setting, trailing zeros dropped: `50 ms`, `2 s`, `2.5 s`, `250 µs`.
pub fn setting_us(us: f64) -> String {
    let s = duration_us(us);
    let (num, unit) = s.split_once(' ').unwrap_or((&s, ""));
    let num = if num.contains('.') {
        num.trim_end_matches('0').trim_end_matches('.')
    } else {
        num
    };
    format!("{num} {unit}")
}

/// Seconds as a setting: `setting_s(10.0)` -> `10 s`.
pub fn setting_s(s: f64) -> String {
    setting_us(s * 1e6)
}

/// A byte count, binary units: `512 B`, `1.50 KiB`, `6.11 MiB`, `1.17 GiB`.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if !n.is_finite() {
        return "n/a".into();
    }
    let mut x = n.max(0.0);
    if x < 1023.5 {
        return format!("{x:.0} B");
    }
    for (i, unit) in UNITS.iter().enumerate() {
        x /= 1024.0;
        if x < 1023.5 || i == UNITS.len() - 1 {
            return format!("{} {unit}", sig3(x));
        }
    }
    unreachable!("the last unit always returns")
}

/// How many rooms had each size: `1 of 2, 7 of 4 members`; with more than 8 sizes, their
/// range and the most common one.
/// A scenario step's figures as the summary and the reports both show them: sent, completed,
/// failed, not sent, then p50, p99 and max latency (`-` when none was timed).
pub fn step_figures(k: &barrage_metrics::steps::StepSummary) -> [String; 7] {
    let l = k.latency_us.as_ref();
    let us = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| duration_us(v as f64));
    [
        thousands(k.c.sent),
        thousands(k.c.completed),
        thousands(k.c.failed),
        thousands(k.c.not_sent),
        us(l.map(|l| l.p50)),
        us(l.map(|l| l.p99)),
        us(l.map(|l| l.max)),
    ]
}

/// A scenario step's failures by class: `timeout 3`, `reset 1`.
pub fn step_failures(k: &barrage_metrics::steps::StepSummary) -> Vec<String> {
    k.c.failed_by
        .nonzero()
        .map(|(c, n)| format!("{c} {}", thousands(n)))
        .collect()
}

pub fn room_sizes(r: &barrage_metrics::Rooms) -> String {
    let members = |n: u64| if n == 1 { "member" } else { "members" };
    match r.sizes.as_slice() {
        [] => "-".into(),
        sizes if sizes.len() <= 8 => {
            let parts: Vec<String> = sizes
                .iter()
                .map(|z| format!("{} of {}", thousands(z.rooms), thousands(z.size)))
                .collect();
            let last = sizes[sizes.len() - 1].size;
            format!("{} {}", parts.join(", "), members(last))
        }
        sizes => {
            let most = sizes
                .iter()
                .max_by_key(|z| (z.rooms, z.size))
                .expect("sizes");
            format!(
                "{} to {} members; most often {} ({} rooms)",
                thousands(sizes[0].size),
                thousands(sizes[sizes.len() - 1].size),
                thousands(most.size),
                thousands(most.rooms)
            )
        }
    }
}

/// A byte rate, with the bit rate network figures are usually quoted in:
/// `byte_rate(18.75e6)` -> `17.9 MiB/s (150 Mbit/s)`.
pub fn byte_rate(bytes_per_s: f64) -> String {
    if !bytes_per_s.is_finite() {
        return "n/a".into();
    }
    format!(
        "{}/s ({} Mbit/s)",
        bytes(bytes_per_s),
        sig3(bytes_per_s.max(0.0) * 8.0 / 1e6)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_sizes_list_each_size_or_their_range() {
        use barrage_metrics::{RoomSize, Rooms};
        let rooms = |sizes: Vec<(u64, u64)>| Rooms {
            count: sizes.iter().map(|s| s.1).sum(),
            users: sizes.iter().map(|s| s.0 * s.1).sum(),
            sizes: sizes
                .into_iter()
                .map(|(size, rooms)| RoomSize { size, rooms })
                .collect(),
        };
        assert_eq!(
            room_sizes(&rooms(vec![(2, 1), (4, 7)])),
            "1 of 2, 7 of 4 members"
        );
        assert_eq!(room_sizes(&rooms(vec![(1, 3)])), "3 of 1 member");
        let many = rooms((1..=20).map(|s| (s, if s == 7 { 50 } else { 2 })).collect());
        assert_eq!(
            room_sizes(&many),
            "1 to 20 members; most often 7 (50 rooms)"
        );
    }

    #[test]
    fn byte_rates_show_bits_too() {
        assert_eq!(byte_rate(18.75e6), "17.9 MiB/s (150 Mbit/s)");
        assert_eq!(byte_rate(0.0), "0 B/s (0.00 Mbit/s)");
        assert_eq!(byte_rate(55.5e6), "52.9 MiB/s (444 Mbit/s)");
    }

    #[test]
    fn thousands_separates_groups_of_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(20_012), "20,012");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn reals_keep_three_digits_below_a_hundred() {
        assert_eq!(real(0.0), "0");
        assert_eq!(real(0.001), "0.00");
        assert_eq!(real(0.5), "0.50");
        assert_eq!(real(12.345), "12.3");
        assert_eq!(real(99.96), "100");
        assert_eq!(real(20_011.6), "20,012");
        assert_eq!(real(f64::NAN), "n/a");
        assert_eq!(real(-1.0), "0");
    }

    #[test]
    fn durations_pick_the_unit_per_value() {
        assert_eq!(duration_us(0.0), "0.0 µs");
        assert_eq!(duration_us(45.0), "45.0 µs");
        assert_eq!(duration_us(45.26), "45.3 µs");
        assert_eq!(duration_us(453.0), "453 µs");
        assert_eq!(duration_us(3_181.4), "3.18 ms");
        assert_eq!(duration_us(12_430.0), "12.4 ms");
        assert_eq!(duration_us(124_300.0), "124 ms");
        assert_eq!(duration_us(1_204_000.0), "1.20 s");
        assert_eq!(duration_us(3_600_000_000.0), "3600 s");
    }

    #[test]
    fn durations_switch_unit_after_rounding() {
        assert_eq!(duration_us(99.96), "100 µs");
        assert_eq!(duration_us(999.4), "999 µs");
        assert_eq!(duration_us(999.6), "1.00 ms");
        assert_eq!(duration_us(9_996.0), "10.0 ms");
        assert_eq!(duration_us(999_400.0), "999 ms");
        assert_eq!(duration_us(999_600.0), "1.00 s");
    }

    #[test]
    fn settings_drop_trailing_zeros() {
        assert_eq!(setting_us(50_000.0), "50 ms");
        assert_eq!(setting_us(250.0), "250 µs");
        assert_eq!(setting_us(1_500.0), "1.5 ms");
        assert_eq!(setting_s(10.0), "10 s");
        assert_eq!(setting_s(2.5), "2.5 s");
        assert_eq!(setting_s(0.1), "100 ms");
    }

    #[test]
    fn bytes_use_binary_units() {
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1023.0), "1023 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(bytes(6.11 * 1024.0 * 1024.0), "6.11 MiB");
        assert_eq!(bytes(1.17 * 1024.0 * 1024.0 * 1024.0), "1.17 GiB");
        assert_eq!(bytes(1024.0 * 1024.0 - 1.0), "1.00 MiB");
        assert_eq!(bytes(f64::INFINITY), "n/a");
    }
}
