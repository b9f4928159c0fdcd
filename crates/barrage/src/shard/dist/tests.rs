//! What dist writes, piece by piece.

use super::configmap::*;
use super::k8s::*;
use super::prepare::*;
use super::slurm::*;
use super::yaml::*;
use crate::sys::rfc3339;

#[test]
fn sh_words_are_quoted_when_they_must_be() {
    assert_eq!(sh_quote("tcp://127.0.0.1:7000"), "tcp://127.0.0.1:7000");
    assert_eq!(sh_quote("-c"), "-c");
    assert_eq!(sh_quote("a b"), "'a b'");
    assert_eq!(sh_quote("it's"), "'it'\\''s'");
    assert_eq!(sh_quote(""), "''");
    assert_eq!(sh_quote("$HOME"), "'$HOME'");
    assert_eq!(sh_quote("p99 < 20ms"), "'p99 < 20ms'");
}

#[test]
fn yaml_scalars_never_change_type() {
    for s in [
        "yes", "No", "true", "null", "2", "1.5", "500m", "-c", "", "a: b", "#x",
    ] {
        assert!(scalar(s).starts_with('"'), "{s}: {}", scalar(s));
    }
    for s in [
        "barrage",
        "batch/v1",
        "/bin/sh",
        "app.kubernetes.io/name",
        "Never",
    ] {
        assert_eq!(scalar(s), s);
    }
    assert_eq!(literal_block("a\n  b\n", 4).unwrap(), "|\n    a\n      b\n");
    assert_eq!(literal_block("a\n\nb", 2).unwrap(), "|-\n  a\n\n  b\n");
    assert_eq!(literal_block("a\nb\n\n", 2).unwrap(), "|+\n  a\n  b\n\n");
    assert!(literal_block(" a\nb\n", 2).is_none());
    assert!(literal_block("a\r\nb\n", 2).is_none());
    assert!(literal_block("one line", 2).is_none());
}

#[test]
fn kubernetes_would_expand_nothing_of_the_users_words() {
    // Kubernetes reads `$$` as `$` and leaves `$` before anything else: `$$$ ` is `$$ `.
    assert_eq!(k8s_escape("a $(X) $$ $y"), "a $$(X) $$$ $y");
    assert_eq!(k8s_escape("$$("), "$$$$(");
    let entry = k8s_entry(1_800_000_000);
    assert!(!entry.contains("$(") && !entry.contains("$$"), "{entry}");
}

#[test]
fn times_and_names() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_795_420_800), "2026-11-23T08:00:00Z");
    assert_eq!(
        barrage_report::series::unix_seconds(&rfc3339(1_795_420_861)),
        Some(1_795_420_861.0)
    );
    assert_eq!(
        start_at("@1795420800", 1_795_420_000).unwrap(),
        1_795_420_800
    );
    assert!(start_at("2026-11-23T08:00:00Z", 1_795_420_800).is_err());
    // Not a real date; further than anyone waits (once a u64 overflow, accepted).
    assert!(start_at("2026-11-31T08:00:00Z", 1_795_420_000).is_err());
    assert!(start_at("@99999999999999999999", 1_795_420_000).is_err());
    assert_eq!(label("Chat Rooms_v2.toml", 24), "chat-rooms-v2-toml");
    assert!(is_dns_label("barrage-chat-1", 52) && !is_dns_label("Barrage", 52));
    for q in ["2", "500m", "1.5", "512Mi", "2Gi"] {
        assert!(is_quantity(q), "{q}");
    }
    for q in ["", "x", "2x", "-1", ".", "0", "1.", "Mi"] {
        assert!(!is_quantity(q), "{q}");
    }
    assert_eq!(cm_key("my chat.toml"), "my_chat.toml");
    let mut names = Vec::new();
    secret_names("a {secret:TOKEN} b {secret:K2} {secret:TOKEN}", &mut names);
    assert_eq!(names, ["TOKEN", "K2"]);
}
