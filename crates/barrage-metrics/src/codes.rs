//! Counts per numeric code: HTTP status codes, WebSocket close codes.
//!
//! A handful of distinct codes per run is the norm, so a small sorted vector beats a map: an
//! increment is a short scan, and after the first occurrence of each code nothing allocates.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeCounts(Vec<(u16, u64)>);

impl CodeCounts {
    #[inline]
    pub fn add(&mut self, code: u16, n: u64) {
        match self.0.iter_mut().find(|(c, _)| *c == code) {
            Some((_, v)) => *v += n,
            None => {
                self.0.push((code, n));
                self.0.sort_unstable_by_key(|(c, _)| *c);
            }
        }
    }

    pub fn get(&self, code: u16) -> u64 {
        self.0
            .iter()
            .find(|(c, _)| *c == code)
            .map_or(0, |(_, v)| *v)
    }

    pub fn merge(&mut self, o: &CodeCounts) {
        for &(c, n) in &o.0 {
            self.add(c, n);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// (code, count) in ascending code order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.0.iter().copied()
    }

    /// Sum over codes `lo..=hi` (e.g. 200..=299 for 2xx).
    pub fn range(&self, lo: u16, hi: u16) -> u64 {
        self.0
            .iter()
            .filter(|(c, _)| (lo..=hi).contains(c))
            .map(|(_, n)| n)
            .sum()
    }
}

impl Serialize for CodeCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (c, n) in &self.0 {
            m.serialize_entry(&c.to_string(), n)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for CodeCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CodeCounts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of code -> count")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CodeCounts, A::Error> {
                let mut out = CodeCounts::default();
                while let Some((k, v)) = map.next_entry::<String, u64>()? {
                    let code = k
                        .parse()
                        .map_err(|_| serde::de::Error::custom(format!("bad code {k}")))?;
                    out.add(code, v);
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_and_serialize_sorted() {
        let mut a = CodeCounts::default();
        a.add(404, 1);
        a.add(200, 5);
        a.add(200, 2);
        let mut b = CodeCounts::default();
        b.add(500, 3);
        b.add(404, 1);
        a.merge(&b);
        assert_eq!(a.get(200), 7);
        assert_eq!(a.range(400, 599), 5);
        assert_eq!(a.total(), 12);
        let v = serde_json::to_string(&a).unwrap();
        assert_eq!(v, r#"{"200":7,"404":2,"500":3}"#);
        let back: CodeCounts = serde_json::from_str(&v).unwrap();
        assert_eq!(back, a);
    }
}
