//! `--prometheus ADDR`: the run's figures as OpenMetrics on `http://ADDR/metrics` while it
//! goes, for a Prometheus server to scrape (and Grafana to draw).
//!
//! Series (prefix `barrage_`, every one labelled with `run` (the start time), `target` and
//! `shard`): counters of exchanges sent, completed and failed, errors by class, bytes,
//! connects; gauges of open connections, in flight and each second's latency percentiles;
//! the latency as a classic histogram (`barrage_latency_seconds`, buckets 100 µs .. 10 s);
//! per scenario step (`step` label) completed, failed and p99; broadcast deliveries, expected
//! deliveries and delivery p99; the monitored server's CPU and RSS. Counters move once a second,
//! when a second becomes final, so a counter's value is always the sum of whole seconds of the
//! run's own time series (what the test checks against a real Prometheus).
//!
//! Key decision: the encoding is `prometheus-client`'s (the OpenMetrics text format, maintained
//! by the Prometheus project); updates come from the coordinator thread (the engine's
//! `Observer`), scrapes are served by one thread of their own with short socket timeouts, so a
//! slow or stalled scraper never reaches the engine. Loopback unless `--listen-any`.

use crate::usage::Usage;
use barrage_metrics::{Delta, ErrorClass, Tick};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type Labels = Vec<(String, String)>;

/// Upper bounds of the latency histogram's buckets, in microseconds.
const BUCKETS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// The latency histogram, filled a second at a time from each second's merged histogram.
#[derive(Clone, Debug, Default)]
struct Latency(Arc<Mutex<LatencyState>>);

#[derive(Debug, Default)]
struct LatencyState {
    /// Per bucket (not cumulative), then the values above the last bound.
    buckets: [u64; BUCKETS_US.len() + 1],
    count: u64,
    sum_s: f64,
}

impl Latency {
    fn add(&self, h: &barrage_metrics::LatencyHistogram) {
        if h.is_empty() {
            return;
        }
        let mut s = self.0.lock().expect("latency lock");
        let mut below = 0;
        for (i, &b) in BUCKETS_US.iter().enumerate() {
            let upto = h.count_at_most(b);
            s.buckets[i] += upto - below;
            below = upto;
        }
        s.buckets[BUCKETS_US.len()] += h.count() - below;
        s.count += h.count();
        s.sum_s += h.sum_us() / 1e6;
    }
}

impl EncodeMetric for Latency {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let s = self.0.lock().expect("latency lock");
        let mut buckets: Vec<(f64, u64)> = BUCKETS_US
            .iter()
            .zip(s.buckets.iter())
            .map(|(&b, &n)| (b as f64 / 1e6, n))
            .collect();
        buckets.push((f64::INFINITY, s.buckets[BUCKETS_US.len()]));
        encoder.encode_histogram::<NoLabelSet>(s.sum_s, s.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// A gauge of a float (seconds, ratios).
#[derive(Clone, Debug, Default)]
struct FloatGauge(Arc<AtomicU64>);

impl FloatGauge {
    fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }
}

impl EncodeMetric for FloatGauge {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&f64::from_bits(self.0.load(Ordering::Relaxed)))
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// Every series, as handles (the registry holds clones of the same atomics).
struct Series {
    sent: Counter,
    requests: Counter,
    failed: Counter,
    not_sent: Counter,
    errors: Family<Labels, Counter>,
    bytes_read: Counter,
    bytes_written: Counter,
    connects: Counter,
    connect_failures: Counter,
    open: Gauge,
    in_flight: Gauge,
    p50: FloatGauge,
    p99: FloatGauge,
    latency: Latency,
    step_completed: Family<Labels, Counter>,
    step_failed: Family<Labels, Counter>,
    step_p99: Family<Labels, Gauge<f64, AtomicU64>>,
    deliveries: Counter,
    deliveries_expected: Counter,
    delivery_p99: FloatGauge,
    server_cpu: FloatGauge,
    server_rss: Gauge,
    server_metric: Family<Labels, Gauge<f64, AtomicU64>>,
    seconds: Counter,
}

/// What the exporter needs to label its series.
pub struct RunLabels {
    pub run: String,
    pub target: String,
    pub shard: String,
    pub steps: Vec<String>,
}

/// The running exporter: its series and the thread serving `/metrics`.
pub struct Exporter {
    series: Series,
    steps: Vec<String>,
    server: crate::sinks::httpd::Server,
}

/// `--prometheus`'s value: `PORT`, `HOST:PORT` or `[V6]:PORT`; loopback unless `any`.
pub fn parse_addr(v: &str, any: bool) -> Result<SocketAddr, Usage> {
    crate::sinks::httpd::parse_addr("--prometheus", v, any)
}

impl Exporter {
    /// Binds `addr` (a usage error naming the flag if it cannot) and starts serving.
    pub fn start(addr: SocketAddr, labels: RunLabels) -> Result<Exporter, Usage> {
        let mut registry = Registry::with_prefix_and_labels(
            "barrage",
            [
                ("run".into(), labels.run.into()),
                ("target".into(), labels.target.into()),
                ("shard".into(), labels.shard.into()),
            ]
            .into_iter(),
        );
        let series = Series {
            sent: Counter::default(),
            requests: Counter::default(),
            failed: Counter::default(),
            not_sent: Counter::default(),
            errors: Family::default(),
            bytes_read: Counter::default(),
            bytes_written: Counter::default(),
            connects: Counter::default(),
            connect_failures: Counter::default(),
            open: Gauge::default(),
            in_flight: Gauge::default(),
            p50: FloatGauge::default(),
            p99: FloatGauge::default(),
            latency: Latency::default(),
            step_completed: Family::default(),
            step_failed: Family::default(),
            step_p99: Family::default(),
            deliveries: Counter::default(),
            deliveries_expected: Counter::default(),
            delivery_p99: FloatGauge::default(),
            server_cpu: FloatGauge::default(),
            server_rss: Gauge::default(),
            server_metric: Family::default(),
            seconds: Counter::default(),
        };
        let s = &series;
        let r = &mut registry;
        r.register("sent", "Exchanges sent", s.sent.clone());
        r.register("requests", "Exchanges completed", s.requests.clone());
        r.register("failed", "Exchanges sent and then failed", s.failed.clone());
        r.register(
            "not_sent",
            "Exchanges due and never sent",
            s.not_sent.clone(),
        );
        r.register("errors", "Errors by class", s.errors.clone());
        r.register_with_unit("read", "Bytes read", Unit::Bytes, s.bytes_read.clone());
        r.register_with_unit(
            "written",
            "Bytes written",
            Unit::Bytes,
            s.bytes_written.clone(),
        );
        r.register("connects", "Connections established", s.connects.clone());
        r.register(
            "connect_failures",
            "Connection attempts that failed",
            s.connect_failures.clone(),
        );
        r.register("connections_open", "Connections open", s.open.clone());
        r.register(
            "in_flight",
            "Exchanges awaiting their reply",
            s.in_flight.clone(),
        );
        r.register_with_unit(
            "latency_p50",
            "Median latency of the last second",
            Unit::Seconds,
            s.p50.clone(),
        );
        r.register_with_unit(
            "latency_p99",
            "99th percentile latency of the last second",
            Unit::Seconds,
            s.p99.clone(),
        );
        r.register_with_unit(
            "latency",
            "Latency of completed exchanges",
            Unit::Seconds,
            s.latency.clone(),
        );
        r.register(
            "step_requests",
            "Exchanges completed per scenario step",
            s.step_completed.clone(),
        );
        r.register(
            "step_failed",
            "Exchanges failed per scenario step",
            s.step_failed.clone(),
        );
        r.register_with_unit(
            "step_latency_p99",
            "99th percentile latency per step, last second",
            Unit::Seconds,
            s.step_p99.clone(),
        );
        r.register(
            "broadcast_deliveries",
            "Broadcast deliveries received (distinct stamps)",
            s.deliveries.clone(),
        );
        r.register(
            "broadcast_expected",
            "Broadcast deliveries expected",
            s.deliveries_expected.clone(),
        );
        r.register_with_unit(
            "broadcast_delivery_p99",
            "99th percentile delivery latency to others, last second",
            Unit::Seconds,
            s.delivery_p99.clone(),
        );
        r.register(
            "server_cpu_cores",
            "The monitored server's CPU, in cores",
            s.server_cpu.clone(),
        );
        r.register_with_unit(
            "server_rss",
            "The monitored server's resident memory",
            Unit::Bytes,
            s.server_rss.clone(),
        );
        r.register(
            "server_metric",
            "The server's own metrics (--server-metrics), newest value; a counter as its rate",
            s.server_metric.clone(),
        );
        r.register(
            "seconds",
            "Seconds of the run recorded so far",
            s.seconds.clone(),
        );
        // Every series exists from the start, at zero: a rate() over a counter's first
        // increment needs the zero before it, and a dashboard panel has data from the start.
        for c in ErrorClass::ALL {
            let _ = s
                .errors
                .get_or_create(&vec![("class".to_string(), c.as_str().to_string())]);
        }
        for name in &labels.steps {
            let l = vec![("step".to_string(), name.clone())];
            let _ = s.step_completed.get_or_create(&l);
            let _ = s.step_failed.get_or_create(&l);
            let _ = s.step_p99.get_or_create(&l);
        }
        let registry = Arc::new(registry);
        let route = move |path: &str, _query: &str| {
            if path != "/metrics" {
                return crate::sinks::httpd::Response::not_found("/metrics");
            }
            let mut body = String::new();
            match prometheus_client::encoding::text::encode(&mut body, &registry) {
                Ok(()) => crate::sinks::httpd::Response::Full {
                    status: 200,
                    content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    body: body.into_bytes(),
                },
                Err(_) => crate::sinks::httpd::Response::Full {
                    status: 500,
                    content_type: "text/plain",
                    body: b"cannot encode the metrics\n".to_vec(),
                },
            }
        };
        let server = crate::sinks::httpd::Server::start("--prometheus", addr, Arc::new(route))?;
        Ok(Exporter {
            series,
            steps: labels.steps,
            server,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// One second of the run.
    pub fn tick(&self, t: &Tick, server: Option<(Option<f64>, Option<u64>)>) {
        let s = &self.series;
        s.sent.inc_by(t.sent);
        s.requests.inc_by(t.requests);
        s.failed.inc_by(t.failed);
        s.not_sent.inc_by(t.errors.get(ErrorClass::NotSent));
        for c in ErrorClass::ALL {
            let n = t.errors.get(c);
            if n > 0 {
                s.errors
                    .get_or_create(&vec![("class".to_string(), c.as_str().to_string())])
                    .inc_by(n);
            }
        }
        s.bytes_read.inc_by(t.bytes_read);
        s.bytes_written.inc_by(t.bytes_written);
        s.connects.inc_by(t.connects);
        s.connect_failures.inc_by(t.connect_failures);
        s.open.set(t.open as i64);
        s.in_flight.set(t.in_flight as i64);
        s.p50.set(t.latency_us.p50 as f64 / 1e6);
        s.p99.set(t.latency_us.p99 as f64 / 1e6);
        for (i, st) in t.steps.iter().enumerate() {
            let name = self
                .steps
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("step {}", i + 1));
            let l = vec![("step".to_string(), name)];
            s.step_completed.get_or_create(&l).inc_by(st.completed);
            s.step_failed.get_or_create(&l).inc_by(st.failed);
            s.step_p99.get_or_create(&l).set(st.p99 as f64 / 1e6);
        }
        s.deliveries.inc_by(t.deliveries);
        s.deliveries_expected.inc_by(t.deliveries_expected);
        s.delivery_p99.set(t.delivery_p99_us as f64 / 1e6);
        if let Some((cpu_pct, rss)) = server {
            if let Some(c) = cpu_pct {
                s.server_cpu.set(c / 100.0);
            }
            if let Some(r) = rss {
                s.server_rss.set(r as i64);
            }
        }
        s.seconds.inc();
    }

    /// The newest values of the server's own metrics.
    pub fn server_metrics(&self, latest: &[(String, f64)]) {
        for (name, v) in latest {
            self.series
                .server_metric
                .get_or_create(&vec![("name".to_string(), name.clone())])
                .set(*v);
        }
    }

    /// One second's merged delta: its latency into the histogram.
    pub fn segment(&self, merged: &Delta) {
        self.series.latency.add(&merged.latency);
    }

    /// Stops serving (the run is over).
    pub fn stop(self) {
        self.server.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback_and_others_need_a_flag() {
        assert_eq!(
            parse_addr("9464", false).unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr("[::1]:9", false).unwrap(),
            "[::1]:9".parse().unwrap()
        );
        let e = parse_addr("0.0.0.0:9464", false).unwrap_err().to_string();
        assert!(
            e.starts_with("--prometheus 0.0.0.0:9464: ") && e.contains("--listen-any"),
            "{e}"
        );
        assert!(parse_addr("0.0.0.0:9464", true).is_ok());
        let e = parse_addr("localhost:x", false).unwrap_err().to_string();
        assert!(e.contains("PORT or HOST:PORT"), "{e}");
    }

    #[test]
    fn the_latency_histogram_buckets_each_value_once() {
        let l = Latency::default();
        let mut h = barrage_metrics::LatencyHistogram::new();
        for us in [50, 100, 101, 2_000, 20_000_000] {
            h.record_us(us);
        }
        l.add(&h);
        l.add(&h);
        let s = l.0.lock().unwrap();
        assert_eq!(s.count, 10);
        assert_eq!(s.buckets.iter().sum::<u64>(), 10);
        assert_eq!(s.buckets[0], 4, "50 and 100 µs, twice");
        assert_eq!(s.buckets[BUCKETS_US.len()], 2, "above 10 s");
    }
}
