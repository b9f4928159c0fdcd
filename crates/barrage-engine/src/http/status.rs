//! Which HTTP statuses count as success ([`StatusSet`]).

/// HTTP status codes that count as success, as inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl Default for StatusSet {
    /// 2xx and 3xx.
    fn default() -> Self {
        Self(vec![(200, 399)])
    }
}

impl StatusSet {
    /// `200,204`, `2xx,3xx`, `200-299`; the error names the item at fault.
    pub fn parse(list: &str) -> Result<StatusSet, String> {
        let bad = |item: &str| {
            format!("'{item}' is not a status; write e.g. 200,204 or 2xx,3xx or 200-299")
        };
        let code = |t: &str| -> Option<u16> { t.parse().ok().filter(|c| (100..=599).contains(c)) };
        let mut ranges = Vec::new();
        for item in list.split(',').map(str::trim) {
            let r = if let Some(c) = item.strip_suffix("xx").or_else(|| item.strip_suffix("XX")) {
                let d: u16 = c
                    .parse()
                    .ok()
                    .filter(|d| (1..=5).contains(d))
                    .ok_or_else(|| bad(item))?;
                (d * 100, d * 100 + 99)
            } else if let Some((lo, hi)) = item.split_once('-') {
                let (lo, hi) = (
                    code(lo).ok_or_else(|| bad(item))?,
                    code(hi).ok_or_else(|| bad(item))?,
                );
                if lo > hi {
                    return Err(bad(item));
                }
                (lo, hi)
            } else {
                let c = code(item).ok_or_else(|| bad(item))?;
                (c, c)
            };
            ranges.push(r);
        }
        Ok(StatusSet(ranges))
    }

    #[inline]
    pub fn contains(&self, code: u16) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&code))
    }
}
