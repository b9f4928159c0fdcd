//! `users.data`: the CSV file whose row g feeds user g. Only what validation needs is read
//! here, the header's column names, the number of rows and the `{secret:NAME}`s its cells
//! hold (filled from the environment when the engine reads the rows); quoting follows RFC 4180
//! (a quoted cell may hold commas).

use std::path::Path;

/// The columns and row count of a CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: u64,
    /// Each `{secret:NAME}` of a cell: its data row (from 1), column and NAME.
    pub secrets: Vec<(u64, String, String)>,
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
    let mut rows = 0;
    let mut secrets = Vec::new();
    for line in lines {
        rows += 1;
        if !line.contains("{secret:") {
            continue;
        }
        let cells = split_header(line).map_err(|e| format!("row {rows}: {e}"))?;
        for (cell, column) in cells.iter().zip(&columns) {
            for (_, r) in crate::vars::refs(cell) {
                if let crate::vars::Ref::Secret(name) = r {
                    secrets.push((rows, column.clone(), name.to_string()));
                }
            }
        }
    }
    Ok(Table {
        columns,
        rows,
        secrets,
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
        assert!(t.secrets.is_empty());
        assert!(parse("a,,b\n").is_err());
    }

    #[test]
    fn secret_placeholders_in_cells_are_listed_with_row_and_column() {
        let t = parse("name,pw\nann,{secret:ANN_PW}\nbob,\"x,{secret:BOB_PW}\"\n").unwrap();
        assert_eq!(
            t.secrets,
            [
                (1, "pw".to_string(), "ANN_PW".to_string()),
                (2, "pw".to_string(), "BOB_PW".to_string())
            ]
        );
    }

    #[test]
    fn rows_are_cells_by_column() {
        let r = rows("name,pw\nann,\"x,y\"\n\nbob\n").unwrap();
        assert_eq!(r, vec![vec!["ann", "x,y"], vec!["bob", ""]]);
    }
}
