//! Scraping the server's own metrics while a run goes (`--server-metrics URL`): one thread
//! GETs every URL each interval (plain HTTP/1.0, 2 s timeouts), parses the Prometheus text
//! format, OpenMetrics or a JSON document, and keeps what each selector picks on the run's
//! timeline: a gauge as scraped, a counter as its rate per second between two scrapes (a
//! counter that went down was reset: its new value is its increase since). One more scrape at
//! the end, so a counter's increase covers the whole run.

use crate::expo::{self, Selector};
use barrage_metrics::ServerMetric;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An `http://HOST:PORT/PATH` URL, split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub text: String,
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl Url {
    /// Parses an `http://` URL (no TLS, no user info).
    pub fn parse(s: &str) -> Result<Url, String> {
        let rest = s.strip_prefix("http://").ok_or_else(|| {
            format!("'{s}': give an http:// URL, e.g. http://127.0.0.1:9090/metrics")
        })?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') {
            // Said without the URL: it may hold a password.
            return Err("a URL with user info (user:password@) is not supported".into());
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("'{s}': an IPv6 host is written [::1]"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| format!("'{s}': bad port '{p}'"))?,
                None if after.is_empty() => 80,
                None => return Err(format!("'{s}': an IPv6 host is written [::1]:PORT")),
            };
            (h, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, p.parse().map_err(|_| format!("'{s}': bad port '{p}'"))?),
                None => (authority, 80),
            }
        };
        if host.is_empty() {
            return Err(format!("'{s}': the URL names no host"));
        }
        let path = match path.split('#').next().unwrap_or("") {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        Ok(Url {
            text: s.to_string(),
            host: host.to_string(),
            port,
            path,
        })
    }

    /// Whether every address the host resolves to is loopback.
    pub fn is_loopback(&self) -> bool {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map(|mut a| {
                let all: Vec<_> = a.by_ref().collect();
                !all.is_empty() && all.iter().all(|a| a.ip().is_loopback())
            })
            .unwrap_or(false)
    }
}

/// GETs the URL: the body of a 200 answer, within [`DEADLINE`] in all.
fn get(url: &Url) -> Result<String, String> {
    let deadline = Instant::now() + DEADLINE;
    let addr = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = TcpStream::connect_timeout(&addr, DEADLINE).map_err(|e| e.to_string())?;
    let _ = s.set_write_timeout(Some(DEADLINE));
    let host = if url.host.contains(':') {
        format!("[{}]", url.host)
    } else {
        url.host.clone()
    };
    write!(
        s,
        "GET {} HTTP/1.0\r\nHost: {host}:{}\r\nConnection: close\r\nAccept: text/plain;version=0.0.4, application/json;q=0.5, */*;q=0.1\r\nUser-Agent: barrage\r\n\r\n",
        url.path, url.port
    )
    .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("no whole answer in time".into());
        }
        let _ = s.set_read_timeout(Some(left));
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => return Err(e.to_string()),
        }
        if raw.len() > 64 << 20 {
            return Err("answer larger than 64 MiB".into());
        }
        // A server that keeps the connection open: stop at Content-Length.
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if len.is_some_and(|n| raw.len() >= at + 4 + n) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    let status = head.split(' ').nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("HTTP {status}"));
    }
    Ok(body.to_string())
}

/// The longest one scrape of one URL may take.
const DEADLINE: Duration = Duration::from_secs(2);

/// What one selector has gathered so far.
struct Track {
    metric: ServerMetric,
    /// The previous raw value of a counter and its time, for the rate.
    prev: Option<(f64, f64)>,
    increase: f64,
    counter: Option<bool>,
}

struct Gatherer {
    urls: Vec<Url>,
    selectors: Vec<Selector>,
    tracks: Vec<Track>,
    /// The newest value of each series (a rate for a counter), for live views.
    latest: Arc<Mutex<Vec<(String, f64)>>>,
}

impl Gatherer {
    fn scrape(&mut self, t: f64) {
        let mut jsons = Vec::new();
        let mut expos = Vec::new();
        let mut failed = false;
        for u in &self.urls {
            let Ok(body) = get(u) else {
                failed = true;
                continue;
            };
            let trimmed = body.trim_start();
            if trimmed.starts_with('{') || trimmed.starts_with('[') {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
                    jsons.push(v);
                }
            } else {
                expos.push(expo::parse(&body));
            }
        }
        self.take(t, &jsons, &expos, failed);
    }

    /// What the documents scraped at `t` hold for each selector (summed over every document
    /// that has it).
    /// `partial`: a URL could not be read, so a counter's sum would drop and read as a reset:
    /// counters skip such a scrape.
    fn take(
        &mut self,
        t: f64,
        jsons: &[serde_json::Value],
        expos: &[expo::Exposition],
        partial: bool,
    ) {
        for (sel, tr) in self.selectors.iter().zip(self.tracks.iter_mut()) {
            let picks = jsons
                .iter()
                .filter_map(|d| sel.pick_json(d))
                .chain(expos.iter().filter_map(|e| sel.pick(e)));
            let mut sum = None;
            let mut counter = false;
            for (v, c) in picks {
                *sum.get_or_insert(0.0) += v;
                counter |= c;
            }
            // A value that is no number (NaN, an infinity: a summary with no observations) is
            // not a sample.
            let Some(v) = sum.filter(|v| v.is_finite()) else {
                tr.metric.missed += 1;
                continue;
            };
            let counter = *tr.counter.get_or_insert(counter);
            if counter && partial {
                tr.metric.missed += 1;
                continue;
            }
            if !counter {
                tr.metric.samples.push([t, v]);
                continue;
            }
            if let Some((pv, pt)) = tr.prev {
                // A counter that went down was reset: it grew by its new value since.
                let grew = if v >= pv { v - pv } else { v };
                tr.increase += grew;
                if t > pt {
                    tr.metric.samples.push([t, grew / (t - pt)]);
                }
            }
            tr.prev = Some((v, t));
        }
        let newest: Vec<(String, f64)> = self
            .tracks
            .iter()
            .filter_map(|tr| Some((tr.metric.name.clone(), tr.metric.samples.last()?[1])))
            .collect();
        if let Ok(mut l) = self.latest.lock() {
            *l = newest;
        }
    }

    fn finish(self) -> Vec<ServerMetric> {
        self.tracks
            .into_iter()
            .map(|mut tr| {
                let counter = tr.counter == Some(true);
                tr.metric.kind = if counter { "rate" } else { "gauge" }.into();
                tr.metric.increase = (counter && tr.prev.is_some()).then_some(tr.increase);
                tr.metric
            })
            .collect()
    }
}

/// A running scraper.
pub struct Scraper {
    latest: Arc<Mutex<Vec<(String, f64)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Gatherer>>,
    base: Instant,
}

impl Scraper {
    /// Starts scraping now (a first scrape at once) and every `interval`; times are seconds
    /// since `base` (the run's time zero).
    pub fn start(
        urls: Vec<Url>,
        selectors: Vec<Selector>,
        interval: Duration,
        base: Instant,
    ) -> Scraper {
        let tracks = selectors
            .iter()
            .map(|s| Track {
                metric: ServerMetric {
                    name: s.alias.clone(),
                    selector: s.text.clone(),
                    ..ServerMetric::default()
                },
                prev: None,
                increase: 0.0,
                counter: None,
            })
            .collect();
        let latest = Arc::new(Mutex::new(Vec::new()));
        let mut g = Gatherer {
            urls,
            selectors,
            tracks,
            latest: Arc::clone(&latest),
        };
        // The first scrape before the load starts: the counters' starting point.
        g.scrape(Instant::now().saturating_duration_since(base).as_secs_f64());
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("barrage-scrape".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                while !flag.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if now >= next {
                        g.scrape(now.saturating_duration_since(base).as_secs_f64());
                        next += interval;
                        if next < now {
                            next = now + interval;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(20).min(interval));
                }
                g
            })
            .ok();
        Scraper {
            latest,
            stop,
            thread,
            base,
        }
    }

    /// The newest value of each series so far (a counter's latest rate), by name.
    pub fn latest(&self) -> Vec<(String, f64)> {
        self.latest.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// One last scrape (so a counter's increase covers the run), then the series.
    pub fn stop(mut self) -> Vec<ServerMetric> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(mut g) = self.thread.take().and_then(|t| t.join().ok()) else {
            return Vec::new();
        };
        g.scrape(self.base.elapsed().as_secs_f64());
        g.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_and_say_what_is_wrong() {
        let u = Url::parse("http://127.0.0.1:9090/metrics").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 9090, "/metrics")
        );
        let u = Url::parse("http://[::1]:8080").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 8080, "/")
        );
        assert!(u.is_loopback());
        let u = Url::parse("http://[::1]/metrics").unwrap();
        assert_eq!((u.port, u.path.as_str()), (80, "/metrics"));
        let u = Url::parse("http://127.0.0.1:9?x=1").unwrap();
        assert_eq!((u.port, u.path.as_str()), (9, "/?x=1"));
        let e = Url::parse("http://me:s3cret@127.0.0.1/").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(Url::parse("https://x/").unwrap_err().contains("http://"));
        assert!(Url::parse("http://x:y/").unwrap_err().contains("port"));
    }

    #[test]
    fn counters_become_rates_and_resets_count_from_zero() {
        let sel = Selector::parse("reqs_total").unwrap();
        let mut g = Gatherer {
            urls: Vec::new(),
            selectors: vec![sel],
            tracks: vec![Track {
                metric: ServerMetric::default(),
                prev: None,
                increase: 0.0,
                counter: None,
            }],
            latest: Default::default(),
        };
        let doc = |v: u64| expo::parse(&format!("# TYPE reqs counter\nreqs_total {v}\n"));
        for (t, v) in [(0.0, 100), (1.0, 150), (2.0, 30), (4.0, 70)] {
            g.take(t, &[], &[doc(v)], false);
        }
        g.take(5.0, &[], &[], false); // a scrape that found nothing
        g.take(6.0, &[], &[doc(90)], true); // a URL failed: no rate from a partial sum
        let nan = expo::parse("reqs_total NaN\n");
        g.take(7.0, &[], &[nan], false);
        let m = g.finish().remove(0);
        assert_eq!(m.kind, "rate");
        assert_eq!(m.samples, [[1.0, 50.0], [2.0, 30.0], [4.0, 20.0]]);
        assert_eq!(m.increase, Some(50.0 + 30.0 + 40.0));
        assert_eq!(m.missed, 3);
    }
}
