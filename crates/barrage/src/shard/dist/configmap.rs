//! The scenario file (and the files it names) as a Kubernetes ConfigMap, and the names and
//! quantities Kubernetes accepts.

use super::prepare::ScenarioFile;
use crate::usage::Usage;
use std::path::Path;

/// A ConfigMap holds at most 1 MiB in all; keep room for its metadata.
pub(super) const CONFIGMAP_MAX: usize = 1_000_000;

/// A file of the ConfigMap: its key, where it is mounted under /spec, its text.
pub(super) struct CmFile {
    pub(super) key: String,
    pub(super) path: String,
    pub(super) text: String,
}

/// The scenario file and the files it names, for the ConfigMap: each must be text, beside
/// the file or below its folder, and all together within a ConfigMap's size.
pub(super) fn configmap_files(f: &ScenarioFile) -> Result<Vec<CmFile>, Usage> {
    let mut out = vec![CmFile {
        key: cm_key(&f.name),
        path: f.name.clone(),
        text: f.text.clone(),
    }];
    for (written, file) in &f.extra {
        let rel = Path::new(written);
        let inside = rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            return Err(Usage::file(
                &f.shown,
                format!(
                    "{}: {written}: the pods get the files a scenario names from the ConfigMap, \
                     beside it: give a path below the scenario's folder (no '..', not absolute)",
                    f.shown
                ),
            ));
        }
        let text = std::fs::read_to_string(file).map_err(|e| {
            Usage::file(
                &f.shown,
                format!(
                    "{}: {written}: cannot read it as text for the ConfigMap: {e}",
                    f.shown
                ),
            )
        })?;
        let mut key = cm_key(written);
        while out.iter().any(|c| c.key == key) {
            key = format!("x-{key}");
        }
        out.push(CmFile {
            key,
            path: written.replace('\\', "/"),
            text,
        });
    }
    let total: usize = out.iter().map(|c| c.text.len()).sum();
    if total > CONFIGMAP_MAX {
        return Err(Usage::file(
            &f.shown,
            format!(
                "{}: with the files it names it is {total} bytes, more than a ConfigMap holds \
                 (1 MiB): put the data in the image and name it by an absolute path",
                f.shown
            ),
        ));
    }
    Ok(out)
}

/// A ConfigMap key for a file name: letters, digits, `-`, `_` and `.` only.
pub(super) fn cm_key(name: &str) -> String {
    let k: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if k.trim_matches('.').is_empty() {
        format!("file{k}")
    } else {
        k
    }
}

pub(super) fn is_dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

pub(super) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|l| is_dns_label(l, 63))
}

/// A Kubernetes resource quantity: a decimal number and an optional suffix.
pub(super) fn is_quantity(s: &str) -> bool {
    const SUFFIXES: [&str; 14] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P",
    ];
    let num = SUFFIXES
        .iter()
        .find_map(|x| s.strip_suffix(x))
        .or_else(|| s.strip_suffix('E'))
        .unwrap_or(s);
    let mut parts = num.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    !num.is_empty()
        && digits(int)
        && frac.is_none_or(|f| !f.is_empty() && digits(f))
        && !(int.is_empty() && frac.is_none())
        && !num.trim_start_matches(['0', '.']).is_empty()
}
