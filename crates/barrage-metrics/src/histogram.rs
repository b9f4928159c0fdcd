//! Latency histograms: HdrHistogram in microseconds, 1 µs .. 1 h, 3 significant digits.
//!
//! Values above the range are recorded at the top of the range and counted in `overflow`, so
//! nothing is lost and the loss of precision is visible. Histograms merge exactly and serialize
//! to the compressed HdrHistogram V2 format in base64, so saved runs can be merged and re-rendered.
//! The same encoding is their serde form (`{"v2": base64, "overflow": n}`), so a delta can cross
//! a process boundary and merge on the other side exactly as if it had never left.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest trackable value: one hour in microseconds.
pub const MAX_US: u64 = 3_600_000_000;
const SIGFIG: u8 = 3;

#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram is not a valid HdrHistogram V2 encoding: {0}")]
    Decode(String),
}

/// A latency histogram in whole microseconds. Equal when every bucket count and the overflow
/// are equal.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
    overflow: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        let h = Histogram::new_with_bounds(1, MAX_US, SIGFIG).expect("static histogram bounds");
        Self { h, overflow: 0 }
    }

    /// Record one value given in nanoseconds (rounded to the nearest microsecond).
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.record_us(Self::us_of_ns(ns))
    }

    /// Nanoseconds to the microseconds a histogram keeps (rounded to the nearest).
    #[inline]
    pub fn us_of_ns(ns: u64) -> u64 {
        (ns + 500) / 1000
    }

    #[inline]
    pub fn record_us(&mut self, us: u64) {
        self.record_us_n(us, 1);
    }

    /// Record `n` equal values (microseconds).
    #[inline]
    pub fn record_us_n(&mut self, us: u64, n: u64) {
        if us > MAX_US {
            self.overflow += n;
        }
        self.h.saturating_record_n(us.min(MAX_US), n);
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both sides share bounds unless one was deserialized from a foreign file with other
        // bounds; `add` then re-records value by value, which is still exact.
        self.h
            .add(&other.h)
            .expect("histograms with auto-resize off and equal bounds merge");
        self.overflow += other.overflow;
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// How many values are at most `us` microseconds (within the histogram's precision:
    /// a value counts by its bucket's range).
    pub fn count_at_most(&self, us: u64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.count_between(0, us.min(MAX_US))
        }
    }

    /// The sum of the values in microseconds (the mean times the count).
    pub fn sum_us(&self) -> f64 {
        if self.h.is_empty() {
            0.0
        } else {
            self.h.mean() * self.h.len() as f64
        }
    }

    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    pub fn reset(&mut self) {
        self.h.reset();
        self.overflow = 0;
    }

    /// Value at quantile `q` in [0, 1], in microseconds (0 when empty).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.value_at_quantile(q)
        }
    }

    pub fn stats(&self) -> LatencyStats {
        if self.h.is_empty() {
            return LatencyStats::default();
        }
        let h = &self.h;
        LatencyStats {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            stdev: h.stdev(),
            p50: h.value_at_quantile(0.50),
            p75: h.value_at_quantile(0.75),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
            overflow: self.overflow,
        }
    }

    /// Percentile spectrum points (percentile, value µs) for reports: quantiles
    /// 1 - 10^-k/2 steps, as HdrHistogram's percentile distribution does.
    pub fn spectrum(&self) -> Vec<(f64, u64)> {
        let mut out = Vec::new();
        if self.h.is_empty() {
            return out;
        }
        for v in self.h.iter_quantiles(2) {
            let p = v.quantile_iterated_to() * 100.0;
            if out.last().map(|(lp, _)| *lp < p).unwrap_or(true) {
                out.push((p, v.value_iterated_to()));
            }
        }
        out
    }

    /// HdrHistogram V2 compressed (deflate) encoding, base64 (standard alphabet, padded): the
    /// form HdrHistogram's own tools and libraries (Java, Python `hdrh`, Go) read.
    pub fn to_base64(&self) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.h, &mut buf)
            .expect("serializing to a Vec cannot fail");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// Decode what `to_base64` wrote. `overflow` is not part of the V2 format; pass it along.
    pub fn from_base64(s: &str, overflow: u64) -> Result<Self, HistogramError> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(s.trim())?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        let mut out = Self::new();
        out.h
            .add(&decoded)
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        out.overflow = overflow;
        Ok(out)
    }
}

/// The wire form: the lossless V2 deflate encoding plus the overflow count it does not carry.
#[derive(Serialize, Deserialize)]
struct Wire {
    v2: String,
    #[serde(default)]
    overflow: u64,
}

impl Serialize for LatencyHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            v2: self.to_base64(),
            overflow: self.overflow,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        Self::from_base64(&w.v2, w.overflow).map_err(serde::de::Error::custom)
    }
}

/// Descriptive statistics of a latency histogram, all in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
    /// Values above the histogram's range (1 h), recorded at its top.
    pub overflow: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_reports_percentiles() {
        let mut h = LatencyHistogram::new();
        for us in 1..=1000 {
            h.record_us(us);
        }
        let s = h.stats();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 1);
        assert_eq!(s.max, 1000);
        assert_eq!(s.p50, 500);
        assert_eq!(s.p99, 990);
        assert!((s.mean - 500.5).abs() < 0.5);
    }

    #[test]
    fn nanoseconds_round_to_microseconds() {
        let mut h = LatencyHistogram::new();
        h.record_ns(1_499);
        h.record_ns(1_500);
        assert_eq!(h.stats().min, 1);
        assert_eq!(h.stats().max, 2);
    }

    #[test]
    fn out_of_range_values_are_counted_not_lost() {
        let mut h = LatencyHistogram::new();
        h.record_us(MAX_US * 10);
        h.record_us(5);
        assert_eq!(h.count(), 2);
        assert_eq!(h.overflow(), 1);
        assert!(h.stats().max >= MAX_US);
    }

    #[test]
    fn merge_equals_recording_into_one() {
        let (mut a, mut b, mut all) = (
            LatencyHistogram::new(),
            LatencyHistogram::new(),
            LatencyHistogram::new(),
        );
        for v in [3u64, 70, 900, 12_000, 61_000_000] {
            a.record_us(v);
            all.record_us(v);
        }
        for v in [1u64, 44, 44, 5_000_000] {
            b.record_us(v);
            all.record_us(v);
        }
        a.merge(&b);
        assert_eq!(a.stats(), all.stats());
    }

    #[test]
    fn base64_round_trip_is_exact() {
        let mut h = LatencyHistogram::new();
        for v in [1u64, 2, 3, 1000, 123_456, 59_000_000] {
            h.record_us(v);
        }
        let s = h.to_base64();
        let back = LatencyHistogram::from_base64(&s, 0).unwrap();
        assert_eq!(back.stats(), h.stats());
        assert!(LatencyHistogram::from_base64("not base64!", 0).is_err());
        assert!(LatencyHistogram::from_base64("AAAA", 0).is_err());
    }

    #[test]
    fn serde_round_trip_gives_an_equal_histogram() {
        let mut h = LatencyHistogram::new();
        for v in [1u64, 7, 7, 999, 1001, 65_432, MAX_US * 2] {
            h.record_us(v);
        }
        let json = serde_json::to_string(&h).unwrap();
        let back: LatencyHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.overflow(), 1);
        assert_eq!(back.spectrum(), h.spectrum());
        let empty: LatencyHistogram =
            serde_json::from_str(&serde_json::to_string(&LatencyHistogram::new()).unwrap())
                .unwrap();
        assert!(empty.is_empty());
        let none: OptHistogram = serde_json::from_str("null").unwrap();
        assert!(none.get().is_none());
        assert!(serde_json::from_str::<LatencyHistogram>(r#"{"v2":"AAAA"}"#).is_err());
    }

    #[test]
    fn empty_histogram_has_zero_stats_and_spectrum() {
        let h = LatencyHistogram::new();
        assert_eq!(h.stats(), LatencyStats::default());
        assert!(h.spectrum().is_empty());
    }
}

/// A histogram that costs nothing until its first value: for measurements only some protocols
/// make (TLS handshakes, time to first byte). Serialized as the histogram or `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OptHistogram(Option<LatencyHistogram>);

impl OptHistogram {
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.0
            .get_or_insert_with(LatencyHistogram::new)
            .record_ns(ns)
    }

    pub fn merge(&mut self, o: &OptHistogram) {
        if let Some(h) = &o.0 {
            self.0.get_or_insert_with(LatencyHistogram::new).merge(h);
        }
    }

    pub fn get(&self) -> Option<&LatencyHistogram> {
        self.0.as_ref()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn stats(&self) -> Option<LatencyStats> {
        self.0.as_ref().map(LatencyHistogram::stats)
    }
}
