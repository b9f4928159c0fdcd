//! Reading the HTML pages in tests: their structure (sections, headings, tables, charts; not
//! the inlined chart library) and the chart data they draw from.

/// The values of `attr="..."` on every tag that starts with `tag`, in order.
pub fn attrs(page: &str, tag: &str, attr: &str) -> Vec<String> {
    let needle = format!("{attr}=\"");
    page.split(tag)
        .skip(1)
        .filter_map(|rest| {
            let head = &rest[..rest.find('>')?];
            let start = head.find(&needle)? + needle.len();
            Some(head[start..].split('"').next()?.to_string())
        })
        .collect()
}

/// The text between each `open` and the next `close`.
pub fn between(page: &str, open: &str, close: &str) -> Vec<String> {
    page.split(open)
        .skip(1)
        .filter_map(|rest| Some(rest.split(close).next()?.to_string()))
        .collect()
}

/// Section ids, h2/h3 headings, table counts and chart ids: what the page is made of, without
/// the figures.
pub fn structure(page: &str) -> String {
    let mut out = String::new();
    let main = between(page, "<main>", "</main>").remove(0);
    for sec in main.split("<section ").skip(1) {
        let id = attrs(&format!("<section {sec}"), "<section", "id")[0].clone();
        out += &format!("section #{id}\n");
        for h in between(sec, "<h2>", "</h2>") {
            out += &format!("  h2 {h}\n");
        }
        for h in between(sec, "<h3>", "</h3>") {
            out += &format!("  h3 {h}\n");
        }
        out += &format!("  tables {}\n", sec.matches("<table").count());
        for c in attrs(sec, "<div class=\"chart-box\"", "id") {
            out += &format!("  chart #{c}\n");
        }
    }
    out
}

/// The JSON blob the page draws from.
pub fn chart_data(page: &str) -> serde_json::Value {
    let blob = between(
        page,
        "<script type=\"application/json\" id=\"barrage-data\">",
        "</script>",
    );
    serde_json::from_str(&blob[0]).expect("the data blob is JSON")
}
