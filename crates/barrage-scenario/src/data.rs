//! `users.data`: the CSV file whose row g feeds user g. Only what validation needs is read
//! here, the header's column names and the number of rows; quoting follows RFC 4180 for the
//! header (a quoted name may hold commas).

use std::path::Path;

/// The columns and row count of a CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: u64,
}

/// Files larger than this are refused (the data is loaded once, for every user).
pub const MAX_BYTES: u64 = 256 << 20;

/// Reads `path`'s header and counts its non-empty data rows.
pub fn read(path: &Path) -> Result<Table, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if meta.len() > MAX_BYTES {
        return Err(format!("{} is larger than 256 MiB", path.display()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The header and row count of CSV text.
pub fn parse(text: &str) -> Result<Table, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines
        .next()
        .ok_or("the file is empty; its first line names the columns, e.g. name,password")?;
    let columns = split_header(header)?;
    let mut seen = std::collections::HashSet::new();
    for c in &columns {
        if c.is_empty() {
            return Err("a column of the header line has no name".into());
        }
        if !seen.insert(c) {
            return Err(format!("column '{c}' appears twice in the header line"));
        }
    }
    Ok(Table {
        columns,
        rows: lines.count() as u64,
    })
}

/// Every data row of the CSV file at `path` (the header line left out), each with as many
/// cells as the header has columns (missing cells are empty).
pub fn read_rows(path: &Path) -> Result<Vec<Vec<String>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    rows(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The data rows of CSV text (see [`read_rows`]).
pub fn rows(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let width = match lines.next() {
        Some(h) => split_header(h)?.len(),
        None => return Ok(Vec::new()),
    };
    lines
        .enumerate()
        .map(|(i, l)| {
            let mut cells = split_header(l).map_err(|e| format!("row {}: {e}", i + 1))?;
            cells.resize(width, String::new());
            Ok(cells)
        })
        .collect()
}

fn split_header(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    if quoted {
        return Err("the header line has an unclosed quote".into());
    }
    out.push(cur.trim().to_string());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_rows() {
        let t = parse("name,\"pass,word\"\nann,x\n\nbob,y\n").unwrap();
        assert_eq!(t.columns, ["name", "pass,word"]);
        assert_eq!(t.rows, 2);
        assert!(parse("").is_err());
        assert!(parse("a,a\n1,2").is_err());
        assert!(parse("a,\"b\n").is_err());
        assert!(parse("a,,b\n").is_err());
    }

    #[test]
    fn rows_are_cells_by_column() {
        let r = rows("name,pw\nann,\"x,y\"\n\nbob\n").unwrap();
        assert_eq!(r, vec![vec!["ann", "x,y"], vec!["bob", ""]]);
    }
}
