//! What each protocol adds to the reports: a [`Part`] with a title, the text summary's lines
//! (rows under the title) and, where a table says it better, the document's items (HTML and
//! Markdown; without items the documents show the lines). One function per protocol with
//! counters of its own, in [`PARTS`]; the text summary and the document model both render
//! [`parts`].

use barrage_metrics::RunResult;

mod grpc;
mod h2;
mod mqtt;
mod part;

pub(crate) use part::{Item, Part};

/// Each protocol's part (none when the run did not speak it), in the order the reports show
/// them.
const PARTS: [fn(&RunResult) -> Option<Part>; 3] = [h2::part, grpc::part, mqtt::part];

/// The parts of the protocols this run spoke.
pub(crate) fn parts(r: &RunResult) -> Vec<Part> {
    PARTS.iter().filter_map(|part| part(r)).collect()
}
