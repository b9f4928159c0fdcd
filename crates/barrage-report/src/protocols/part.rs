//! The port each protocol's report part is written against: a [`Part`] of [`Item`]s.

/// One protocol's part of a report.
pub(crate) struct Part {
    pub title: &'static str,
    pub lines: Vec<String>,
    /// The documents' items; empty: the lines, as paragraphs.
    pub doc: Vec<Item>,
}

/// What the documents show of a part.
pub(crate) enum Item {
    Para(String),
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
}

/// A table of `head` and `rows`.
pub(super) fn table<const N: usize>(head: [&str; N], rows: Vec<[String; N]>) -> Item {
    Item::Table {
        head: head.iter().map(|s| s.to_string()).collect(),
        rows: rows.into_iter().map(Vec::from).collect(),
    }
}
