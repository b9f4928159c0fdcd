//! The protocols' verticals dispatched: [`VERTICALS`] holds one per row of the protocol table
//! (`tcp.rs`, `http.rs`, `grpc.rs`, `ws.rs`, `kv.rs`, `mqtt.rs`, each written against
//! `vertical.rs`); [`check_flags_fit`] and [`protocol`] run the target's.

pub(super) mod grpc;
mod http;
mod kv;
mod mqtt;
mod tcp;
mod ws;

use super::vertical::{Vertical, Words};
use crate::resolve::cli::RunArgs;
use crate::resolve::redact::Secrets;
use crate::resolve::url::{self, Scheme};
use crate::usage::Usage;
use barrage_engine::ProtocolSpec;
use barrage_scenario::protocol::ProtocolInfo;

/// One vertical per row of the protocol table, in the order their flags are checked.
pub(super) static VERTICALS: [&Vertical; 7] = [
    &tcp::VERTICAL,
    &http::VERTICAL,
    &grpc::VERTICAL,
    &ws::VERTICAL,
    &kv::REDIS,
    &kv::MEMCACHE,
    &mqtt::VERTICAL,
];

/// The target's vertical.
pub(super) fn vertical(scheme: Scheme) -> &'static Vertical {
    for_row(scheme.info)
}

/// The vertical of a row of the protocol table (every row has one: a test says so).
pub(super) fn for_row(row: &ProtocolInfo) -> &'static Vertical {
    VERTICALS
        .iter()
        .copied()
        .find(|v| v.rows.iter().any(|r| r.name == row.name))
        .unwrap_or(&tcp::VERTICAL)
}

/// `http(s)://`, `h2c://`, `mqtt:// and mqtts://`: how the rows are written, joined.
fn schemes(rows: &[&ProtocolInfo]) -> String {
    let each: Vec<String> = rows
        .iter()
        .map(|r| match r.tls_scheme {
            Some(t) if t == format!("{}s", r.name) => format!("{}(s)://", r.name),
            Some(t) => format!("{}:// and {t}://", r.name),
            None => format!("{}://", r.name),
        })
        .collect();
    match each.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The target's own checks first, then every flag of another protocol that the target's does
/// not take is a mistake, not silently ignored; so is a TLS flag on a plain target.
pub(super) fn check_flags_fit(a: &RunArgs, scheme: Scheme) -> Result<(), Usage> {
    let own = vertical(scheme);
    (own.check)(a, scheme)?;
    let takes = |v: &Vertical, name: &str| v.flags.iter().any(|f| f.name == name);
    for v in VERTICALS {
        for f in v.flags {
            if takes(own, f.name) || !(f.given)(a) {
                continue;
            }
            let owners: Vec<&ProtocolInfo> = VERTICALS
                .iter()
                .filter(|w| takes(w, f.name))
                .flat_map(|w| w.rows.iter().copied())
                .collect();
            let words = match own.own_words {
                Some(w) if f.message => format!("; {w}"),
                _ => String::new(),
            };
            return Err(Usage::says(
                f.name,
                format!(
                    "applies to {} targets, not {}://{words}",
                    schemes(&owners),
                    scheme.name()
                ),
            ));
        }
    }
    let t = &a.tls;
    let identity = t.cert.is_some() || t.servername.is_some();
    if !scheme.tls() && (t.insecure || t.cacert.is_some() || identity) {
        let tls: Vec<String> = barrage_scenario::protocol::PROTOCOLS
            .iter()
            .filter_map(|r| r.tls_scheme.map(|t| format!("{t}://")))
            .collect();
        let flags = if identity {
            "--cert, --key and --servername"
        } else {
            "--insecure and --cacert"
        };
        return Err(Usage::says(
            flags,
            format!(
                "apply to TLS targets ({}), not {}://",
                tls.join(", "),
                scheme.name()
            ),
        ));
    }
    Ok(())
}

/// What is spoken on the connection: the target's vertical builds the spec's words
/// (placeholders unfilled), checked here with the secrets filled in, so a bad request fails
/// before any load, against its flag.
pub(super) fn protocol(
    a: &RunArgs,
    url: &url::Url,
    words: &Words,
    secrets: &mut Secrets,
) -> Result<(ProtocolSpec, Option<String>), Usage> {
    let headers_filled = words
        .headers
        .iter()
        .map(|(n, v)| Ok((n.clone(), secrets.fill_str(v, "-H/--header")?)))
        .collect::<Result<Vec<_>, Usage>>()?;
    (vertical(url.scheme).spec)(a, url, words, &headers_filled, secrets)
}

#[cfg(test)]
mod tests {
    use super::{schemes, VERTICALS};
    use barrage_scenario::protocol::{self, PROTOCOLS};

    #[test]
    fn every_row_of_the_table_has_one_vertical() {
        for row in PROTOCOLS {
            let serving = VERTICALS
                .iter()
                .filter(|v| v.rows.iter().any(|r| r.name == row.name))
                .count();
            assert_eq!(serving, 1, "{}: {serving} verticals", row.name);
        }
        let rows: usize = VERTICALS.iter().map(|v| v.rows.len()).sum();
        assert_eq!(rows, PROTOCOLS.len());
    }

    #[test]
    fn owners_are_written_as_the_table_writes_their_schemes() {
        assert_eq!(schemes(&[&protocol::TCP]), "tcp://");
        assert_eq!(
            schemes(&[&protocol::HTTP, &protocol::H2, &protocol::WS]),
            "http(s)://, h2c:// and ws(s)://"
        );
    }
}
