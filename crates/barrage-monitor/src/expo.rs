//! The server's own metrics (`--server-metrics URL --server-metric SELECTOR`): the Prometheus
//! text exposition format (and OpenMetrics, its successor) and JSON stats documents, parsed
//! into samples; selectors that pick series out of them.
//!
//! A selector is `NAME`, `NAME{label="v",other!="w"}` (PromQL's equality matchers) or, for a
//! JSON document, a JSON pointer (`/chat/deliveries_out`); `ALIAS=SELECTOR` names it. The
//! series a selector matches are summed (PromQL's `sum(...)`). A counter (`# TYPE x counter`,
//! or a name ending in `_total`) is turned into a rate per second between scrapes by the
//! sampler; a gauge is kept as it is.
//!
//! Pure functions over text, tested on fixed documents.

/// One sample of the exposition.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// A parsed exposition: the samples and which metric families are counters, and which are
/// summaries or histograms (whose `_count`, `_sum` and `_bucket` series are cumulative too).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    pub counters: Vec<String>,
    pub cumulative: Vec<String>,
}

/// How a selector matches one label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Matcher {
    Eq(String, String),
    Ne(String, String),
}

/// What `--server-metric` picks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// The name it is reported and judged by (`server.metric.NAME.max`).
    pub alias: String,
    pub what: Pick,
    /// As given.
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pick {
    Series {
        name: String,
        matchers: Vec<Matcher>,
    },
    /// A JSON pointer into a JSON document.
    Json(String),
}

fn name_ok(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

impl Selector {
    /// Parses `[ALIAS=]NAME{...}` or `[ALIAS=]/json/pointer`; the error says what is wrong.
    pub fn parse(s: &str) -> Result<Selector, String> {
        let s = s.trim();
        // An alias is a plain name before the first `=` that is not inside braces.
        let (alias, rest) = match s.split_once('=') {
            Some((a, r)) if name_ok(a.trim()) && !a.contains('{') => (Some(a.trim()), r.trim()),
            _ => (None, s),
        };
        if let Some(pointer) = rest.strip_prefix('/') {
            let alias = alias.map_or_else(|| pointer.replace('/', "_"), str::to_string);
            if pointer.is_empty() || !name_ok(&alias) {
                return Err(format!(
                    "'{s}': a JSON pointer names a value, e.g. /stats/queue_depth (and ALIAS= names it)"
                ));
            }
            return Ok(Selector {
                alias,
                what: Pick::Json(rest.to_string()),
                text: s.to_string(),
            });
        }
        let (name, matchers) = match rest.split_once('{') {
            None => (rest, Vec::new()),
            Some((name, m)) => {
                let Some(m) = m.strip_suffix('}') else {
                    return Err(format!("'{s}': the label matchers end with '}}'"));
                };
                (name, parse_matchers(m).map_err(|e| format!("'{s}': {e}"))?)
            }
        };
        let name = name.trim();
        if !name_ok(name) {
            return Err(format!(
                "'{s}': give a metric name (letters, digits, _ and :), e.g. queue_depth or http_requests_total{{code=\"500\"}}"
            ));
        }
        Ok(Selector {
            alias: alias.unwrap_or(name).to_string(),
            what: Pick::Series {
                name: name.to_string(),
                matchers,
            },
            text: s.to_string(),
        })
    }

    /// The sum of what the selector matches in `e`, and whether it is a counter; `None` when
    /// nothing matches.
    pub fn pick(&self, e: &Exposition) -> Option<(f64, bool)> {
        let Pick::Series { name, matchers } = &self.what else {
            return None;
        };
        let mut sum = None;
        for s in &e.samples {
            if &s.name != name {
                continue;
            }
            let label = |k: &str| s.labels.iter().find(|(n, _)| n == k).map_or("", |(_, v)| v);
            let ok = matchers.iter().all(|m| match m {
                Matcher::Eq(k, v) => label(k) == v,
                Matcher::Ne(k, v) => label(k) != v,
            });
            if ok {
                *sum.get_or_insert(0.0) += s.value;
            }
        }
        let part_of_cumulative = ["_count", "_sum", "_bucket"]
            .iter()
            .filter_map(|suffix| name.strip_suffix(suffix))
            .any(|f| e.cumulative.iter().any(|c| c == f));
        let counter = name.ends_with("_total")
            || part_of_cumulative
            || e.counters
                .iter()
                .any(|c| c == name || name.strip_suffix("_total") == Some(c));
        sum.map(|v| (v, counter))
    }

    /// The value at the JSON pointer (a number, or a bool as 0/1); counters are not told
    /// apart in JSON: a name ending in `_total` or a selector alias ending in `_total` is one.
    pub fn pick_json(&self, doc: &serde_json::Value) -> Option<(f64, bool)> {
        let Pick::Json(p) = &self.what else {
            return None;
        };
        let v = doc.pointer(p)?;
        let n = v
            .as_f64()
            .or_else(|| v.as_bool().map(|b| f64::from(u8::from(b))))?;
        Some((n, self.alias.ends_with("_total") || p.ends_with("_total")))
    }
}

fn parse_matchers(m: &str) -> Result<Vec<Matcher>, String> {
    let mut out = Vec::new();
    let mut rest = m.trim();
    while !rest.is_empty() {
        let op_at = rest
            .find(['=', '!'])
            .ok_or_else(|| "a matcher is label=\"value\" or label!=\"value\"".to_string())?;
        let key = rest[..op_at].trim().to_string();
        let (ne, after) = if rest[op_at..].starts_with("!=") {
            (true, &rest[op_at + 2..])
        } else if rest[op_at..].starts_with("=~") || rest[op_at..].starts_with("!~") {
            return Err(
                "regular-expression matchers (=~, !~) are not supported: use = or !=".into(),
            );
        } else {
            (false, &rest[op_at + 1..])
        };
        let after = after.trim_start();
        let Some(body) = after.strip_prefix('"') else {
            return Err(format!("the value of {key} is quoted: {key}=\"...\""));
        };
        let (value, tail) = read_quoted(body).ok_or("a quoted value is not closed")?;
        if !name_ok(&key) {
            return Err(format!("'{key}' is not a label name"));
        }
        out.push(if ne {
            Matcher::Ne(key, value)
        } else {
            Matcher::Eq(key, value)
        });
        rest = tail.trim_start().trim_start_matches(',').trim_start();
    }
    Ok(out)
}

/// The text up to the closing quote (escapes `\"`, `\\`, `\n`), and what follows it.
fn read_quoted(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    None
}

/// Parses the Prometheus text format (0.0.4) or OpenMetrics text: `# TYPE` lines and samples;
/// other comments, exemplars and timestamps are skipped; a line that cannot be read is
/// skipped, not fatal (one odd series should not end the scraping).
pub fn parse(text: &str) -> Exposition {
    let mut e = Exposition::default();
    for line in text.lines() {
        let line = line.trim();
        if let Some(c) = line.strip_prefix('#') {
            let mut w = c.split_whitespace();
            if w.next() == Some("TYPE") {
                match (w.next(), w.next()) {
                    (Some(name), Some("counter")) => e.counters.push(name.to_string()),
                    (Some(name), Some("summary" | "histogram" | "gaugehistogram")) => {
                        e.cumulative.push(name.to_string())
                    }
                    _ => {}
                }
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if let Some(s) = sample(line) {
            e.samples.push(s);
        }
    }
    e
}

fn sample(line: &str) -> Option<Sample> {
    let (name, labels, rest) = match line.find(['{', ' ']) {
        Some(i) if line.as_bytes()[i] == b'{' => {
            let mut labels = Vec::new();
            let mut rest = &line[i + 1..];
            loop {
                rest = rest.trim_start().trim_start_matches(',').trim_start();
                if let Some(r) = rest.strip_prefix('}') {
                    rest = r;
                    break;
                }
                let eq = rest.find('=')?;
                let key = rest[..eq].trim().to_string();
                let (value, tail) = read_quoted(rest[eq + 1..].trim_start().strip_prefix('"')?)?;
                labels.push((key, value));
                rest = tail;
            }
            (&line[..i], labels, rest)
        }
        Some(i) => (&line[..i], Vec::new(), &line[i..]),
        None => return None,
    };
    // The value is the first field; a timestamp or an exemplar (`# {...}`) may follow.
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.trim().to_string(),
        labels,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000
http_requests_total{method="get",code="200",path="a \"quoted\" \\ path"} 10
# TYPE queue_depth gauge
queue_depth 42.5
# TYPE chat_deliveries counter
chat_deliveries_total 900 # {trace_id="abc"} 1.0
# TYPE scrape_seconds summary
scrape_seconds_count 12
weird line without a value
go_gc_duration_seconds{quantile="1"} +Inf
# EOF
"#;

    #[test]
    fn the_text_format_parses_with_labels_escapes_and_types() {
        let e = parse(DOC);
        assert_eq!(e.samples.len(), 7);
        assert_eq!(e.samples[2].labels[2].1, "a \"quoted\" \\ path");
        assert_eq!(
            e.samples[3],
            Sample {
                name: "queue_depth".into(),
                labels: vec![],
                value: 42.5
            }
        );
        assert!(e.samples[6].value.is_infinite());
        assert_eq!(e.cumulative, ["scrape_seconds"]);
        assert_eq!(e.counters, ["http_requests_total", "chat_deliveries"]);
    }

    #[test]
    fn selectors_sum_what_they_match() {
        let e = parse(DOC);
        let pick = |s: &str| Selector::parse(s).unwrap().pick(&e);
        assert_eq!(pick("http_requests_total"), Some((1040.0, true)));
        assert_eq!(
            pick(r#"http_requests_total{code="200"}"#),
            Some((1037.0, true))
        );
        assert_eq!(
            pick(r#"http_requests_total{code!="200", method="post"}"#),
            Some((3.0, true))
        );
        assert_eq!(pick("queue_depth"), Some((42.5, false)));
        assert_eq!(pick("chat_deliveries_total"), Some((900.0, true)));
        assert_eq!(
            pick("scrape_seconds_count"),
            Some((12.0, true)),
            "a summary's count"
        );
        assert_eq!(pick("missing"), None);
        let s = Selector::parse(r#"errors=http_requests_total{code="400"}"#).unwrap();
        assert_eq!(s.alias, "errors");
        assert_eq!(s.pick(&e), Some((3.0, true)));
    }

    #[test]
    fn json_pointers_pick_numbers() {
        let doc: serde_json::Value =
            serde_json::from_str(r#"{"chat":{"deliveries_out":7,"open":true}}"#).unwrap();
        let s = Selector::parse("/chat/deliveries_out").unwrap();
        assert_eq!(s.alias, "chat_deliveries_out");
        assert_eq!(s.pick_json(&doc), Some((7.0, false)));
        let s = Selector::parse("out_total=/chat/deliveries_out").unwrap();
        assert_eq!(s.pick_json(&doc), Some((7.0, true)));
        assert_eq!(
            Selector::parse("/chat/open").unwrap().pick_json(&doc),
            Some((1.0, false))
        );
    }

    #[test]
    fn bad_selectors_say_what_is_wrong() {
        for (s, want) in [
            ("", "metric name"),
            ("9lives", "metric name"),
            ("x{code=200}", "quoted"),
            ("x{code=\"200\"", "end with"),
            ("x{code=~\"2..\"}", "not supported"),
            ("/", "JSON pointer"),
        ] {
            let e = Selector::parse(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}
