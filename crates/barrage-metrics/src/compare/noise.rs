//! What one run knows about its own noise, and the judgement of a difference against the
//! noise of two runs ([`judge`]), by the rules in [`RULES`](super::RULES).

use super::stats;
use crate::histogram::LatencyHistogram;
use crate::monitor::{combined_server, ProcSample};
use crate::result::RunResult;
use crate::timeline::Phase;
use crate::window::Window;

/// The smallest change (a fraction: 0.2 = 20 %) the per-second test calls significant by
/// default: none. The runs' own seconds decide; `--noise-floor` adds a floor for a user who
/// knows their machine drifts between runs by more than its seconds show.
pub const DEFAULT_NOISE_FLOOR: f64 = 0.0;

/// How [`compare_with`](super::compare_with) judges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// See [`DEFAULT_NOISE_FLOOR`].
    pub noise_floor: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            noise_floor: DEFAULT_NOISE_FLOOR,
        }
    }
}

/// What one run knows about its own noise.
pub(super) struct Noise<'a> {
    r: &'a RunResult,
    /// Per-second rates of the full measured seconds.
    rates: Vec<f64>,
    /// Per-second p50, p90, p99, p999 of the full measured seconds that timed enough
    /// exchanges for each ([`MIN_BEYOND`] beyond it).
    tick_pcts: [Vec<f64>; 4],
    latency: Option<LatencyHistogram>,
    cpu: Vec<f64>,
    rss: Vec<f64>,
    /// barrage's own CPU samples under load.
    generator_cpu: Vec<f64>,
    /// CPU time per exchange (µs) of each full second.
    server_per_req: PerRequest,
    generator_per_req: PerRequest,
    /// Busy % of all cores, host samples under load.
    machine: Vec<f64>,
}

/// A process's CPU per exchange, second by second (the value itself, over the whole
/// measured window, is the vocabulary's).
#[derive(Default)]
struct PerRequest {
    /// µs of CPU per completed exchange, one per full measured second with a sample.
    seconds: Vec<f64>,
}

impl PerRequest {
    pub(super) fn of<'s>(
        samples: impl Iterator<Item = &'s ProcSample>,
        full: &[&crate::Tick],
    ) -> Self {
        let samples: Vec<&ProcSample> = samples.collect();
        let seconds = samples
            .iter()
            .filter_map(|s| {
                let t = full
                    .iter()
                    .find(|t| (t.t - s.t).abs() <= 0.25 && t.requests > 0)?;
                Some(s.cpu_pct / 100.0 * 1e6 / t.rps)
            })
            .collect();
        PerRequest { seconds }
    }
}

impl<'a> Noise<'a> {
    pub(super) fn of(r: &'a RunResult) -> Self {
        let full: Vec<_> = r
            .timeseries
            .iter()
            .filter(|t| t.phase == Phase::Measured && t.dt >= 0.999)
            .collect();
        let (mut cpu, mut rss, mut machine) = (Vec::new(), Vec::new(), Vec::new());
        let mut generator_cpu = Vec::new();
        let (mut server_per_req, mut generator_per_req) = Default::default();
        if let (Some(m), Some(a)) = (
            crate::monitor::MonitorSeries::shown(r.monitor.as_ref()),
            &r.analysis,
        ) {
            let load = Window {
                from_s: 0.0,
                to_s: a.load_end_s,
            };
            let server = combined_server(m);
            for s in load.select(&server) {
                cpu.push(s.cpu_pct);
                rss.push(s.rss_bytes as f64);
            }
            generator_cpu.extend(load.select(&m.generator).map(|s| s.cpu_pct));
            let measured = Window {
                from_s: r.config.warmup_s,
                to_s: a.load_end_s,
            };
            if !m.processes.is_empty() {
                server_per_req = PerRequest::of(measured.select(&server), &full);
            }
            generator_per_req = PerRequest::of(measured.select(&m.generator), &full);
            machine.extend(
                m.host
                    .iter()
                    .filter(|h| measured.contains(h.t))
                    .map(|h| h.cpu_pct),
            );
        }
        Noise {
            r,
            rates: full.iter().map(|t| t.rps).collect(),
            tick_pcts: [0.5, 0.9, 0.99, 0.999].map(|q| per_second_quantile(&full, q)),
            latency: r.histograms.latency.decode().ok(),
            cpu,
            rss,
            generator_cpu,
            server_per_req,
            generator_per_req,
            machine,
        }
    }

    /// The figure itself, by the one vocabulary.
    pub(super) fn value(&self, metric: &str) -> Option<f64> {
        crate::vocabulary::value(self.r, self.r.analysis.as_ref(), metric)
    }
}

/// A second's quantile q is a quantile (not its slowest exchange) when at least this many of
/// its exchanges lie beyond it: a second counts for p99 with 500 timed exchanges, for p999
/// with 5,000.
pub const MIN_BEYOND: f64 = 5.0;

/// The per-second values of quantile `q` of the seconds that timed enough exchanges for it.
/// Results written before seconds recorded their count (or their p999) count a second's
/// completed exchanges as timed (and have no per-second p999).
fn per_second_quantile(full: &[&crate::Tick], q: f64) -> Vec<f64> {
    // Rounded: 1 - 0.9 is not exactly 0.1 in floating point.
    let need = (MIN_BEYOND / (1.0 - q)).round();
    full.iter()
        .filter_map(|t| {
            let l = &t.latency_us;
            let timed = match (l.count, q >= 0.999) {
                (0, true) => 0,
                (0, false) if l.max > 0 => t.requests,
                (c, _) => c,
            };
            let v = match q {
                q if q <= 0.5 => l.p50,
                q if q <= 0.9 => l.p90,
                q if q <= 0.99 => l.p99,
                _ => l.p999,
            };
            (timed as f64 >= need).then_some(v as f64)
        })
        .collect()
}

/// Whether `vb − va` of `metric` is beyond the noise of runs `a` and `b`
/// ([`RULES`](super::RULES)).
/// A figure shown for information only, never judged nor gated: one observation
/// (`latency.max`), which identical runs differ in by chance (issue 42: `compare` flagged it
/// between identical runs).
pub(super) fn informational(metric: &str) -> bool {
    crate::vocabulary::find(metric)
        .and_then(|f| f.compared.as_ref())
        .is_some_and(|c| matches!(c.noise, crate::vocabulary::Noise::Max))
}

pub(super) fn judge(
    metric: &str,
    a: &Noise,
    va: f64,
    b: &Noise,
    vb: f64,
    o: &Options,
) -> Option<bool> {
    let f = o.noise_floor;
    let noise = crate::vocabulary::find(metric)?.compared.as_ref()?.noise;
    if let N::Quantile(q, i) = noise {
        // The seconds decide, and there must be enough of them; the histograms' own bands
        // must also be apart (a difference their sampling alone explains is none).
        let per_second = stats::between_runs(&a.tick_pcts[i], &b.tick_pcts[i], f)?;
        let (ha, hb) = (a.latency.as_ref()?, b.latency.as_ref()?);
        let apart = stats::disjoint(stats::quantile_band(ha, q)?, stats::quantile_band(hb, q)?);
        return Some(per_second && apart);
    }
    use crate::vocabulary::Noise as N;
    match noise {
        N::Rates => stats::between_runs(&a.rates, &b.rates, f),
        N::Peak => stats::single_observations(va, &a.rates, vb, &b.rates),
        // One exchange: information only ([`informational`]), never judged.
        N::Max => None,
        N::Proportion => {
            let count = |r: &RunResult| {
                let e = r.summary.failed_requests.total();
                (e, r.summary.requests + e)
            };
            let ((ea, na), (eb, nb)) = (count(a.r), count(b.r));
            stats::proportions(ea, na, eb, nb)
        }
        N::Exact => Some(va != vb),
        N::ServerCpu => stats::between_runs(&a.cpu, &b.cpu, f),
        N::GeneratorCpu => stats::between_runs(&a.generator_cpu, &b.generator_cpu, f),
        N::ServerRss => stats::single_observations(va, &a.rss, vb, &b.rss),
        N::ServerPerRequest => {
            stats::between_runs(&a.server_per_req.seconds, &b.server_per_req.seconds, f)
        }
        N::GeneratorPerRequest => stats::between_runs(
            &a.generator_per_req.seconds,
            &b.generator_per_req.seconds,
            f,
        ),
        N::MachineCpu => stats::between_runs(&a.machine, &b.machine, f),
        N::Quantile(..) => None,
    }
}
