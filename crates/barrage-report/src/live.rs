//! The live page of a run (`barrage --web`): one self-contained HTML page (styles, uPlot and
//! its script inlined) that reads the run's seconds from the same origin (`/series`, then
//! server-sent events on `/events`) and draws them as they come.
//!
//! Key decision: the page carries no data, so one page serves every moment of the run (and a
//! reload mid-run); its CSP allows scripts and styles inline and connections to its own origin
//! only, so nothing on it can load from anywhere else.

use crate::html::{AXES_JS, REPORT_CSS, UPLOT_CSS, UPLOT_JS};

const LIVE_JS: &str = include_str!("../assets/live.js");

/// Inline scripts and styles; fetches and event streams to this origin only.
pub const LIVE_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
                            style-src 'unsafe-inline'; img-src data:; connect-src 'self'";

/// The page.
pub fn page() -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{LIVE_CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"barrage {version}\">\n\
         <title>barrage live</title>\n<style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n\
         <style>\
         .figs{{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem}}.figs div{{min-width:8rem}}\
         .figs b{{display:block;font-size:1.4rem}}.grid{{display:flex;flex-wrap:wrap;gap:1rem}}\
         .grid .chart-box{{width:560px;min-height:260px}}#warnings li{{color:#a15c00}}\
         </style>\n</head>\n<body>\n\
         <header>\n<h1>barrage live</h1>\n<p class=\"target\"><span id=\"target\"></span> \
         (started <span id=\"started\"></span>): <span id=\"status\">connecting</span></p>\n</header>\n<main>\n\
         <section id=\"now\">\n<h2>Now</h2>\n<div class=\"figs\">\n\
         <div>seconds<b id=\"seconds\">0</b></div><div>left<b id=\"left\">–</b></div><div>completed/s<b id=\"cur-rps\">–</b></div>\
         <div>p50<b id=\"cur-p50\">–</b></div><div>p99<b id=\"cur-p99\">–</b></div>\
         <div>open<b id=\"cur-open\">–</b></div><div>failed/s<b id=\"cur-failed\">–</b></div>\
         <div>completed<b id=\"total\">–</b></div>\
         <div>server CPU %<b id=\"srv-cpu\">–</b></div><div>server RSS MiB<b id=\"srv-rss\">–</b></div>\n\
         </div>\n<ul id=\"metrics\" hidden></ul>\n</section>\n\
         <section id=\"network\" hidden>\n<h2>Network</h2>\n<p>The machine's traffic per \
         interface under load so far, bytes per second.</p>\n<table>\n<thead><tr><th>interface</th>\
         <th>in min</th><th>in mean</th><th>in max</th><th>out min</th><th>out mean</th>\
         <th>out max</th></tr></thead>\n<tbody id=\"net\"></tbody>\n</table>\n</section>\n\
         <section id=\"charts\">\n<h2>Over time</h2>\n<div class=\"grid\">\n\
         <div class=\"chart-box\" id=\"c-rps\"></div><div class=\"chart-box\" id=\"c-lat\"></div>\
         <div class=\"chart-box\" id=\"c-conn\"></div><div class=\"chart-box\" id=\"c-err\"></div>\
         <div class=\"chart-box\" id=\"c-srv\"></div><div class=\"chart-box\" id=\"c-bc\"></div>\n\
         </div>\n</section>\n\
         <section id=\"warn\">\n<h2>Warnings</h2>\n<ul id=\"warnings\"></ul>\n</section>\n\
         <section id=\"final\" hidden>\n<h2>Final summary</h2>\n<pre id=\"summary\"></pre>\n</section>\n\
         </main>\n<script>{UPLOT_JS}</script>\n<script>{AXES_JS}</script>\n<script>{LIVE_JS}</script>\n</body>\n</html>\n"
    )
}
