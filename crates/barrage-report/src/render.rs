//! The one thing every output format is: a [`Renderer`].

use barrage_metrics::RunResult;
use std::io::{self, Write};

/// Renders a finished run into one output format.
pub trait Renderer {
    fn render(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}
