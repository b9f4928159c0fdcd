//! What every HTTP/2 connection of a run shares ([`Cfg`]), from its plan.

use crate::h2::{H2Request, H2Settings};
use crate::plan::{GrpcMode, StatusSet};

/// The request, the statuses that succeed, the streams per connection, gRPC's mode and the
/// settings advertised.
pub struct Cfg {
    pub(super) request: H2Request,
    pub(super) expect: StatusSet,
    pub(super) streams: u32,
    pub(super) grpc: Option<GrpcMode>,
    pub(super) settings: H2Settings,
}

impl Cfg {
    pub(crate) fn of(h: &crate::plan::H2Plan) -> Self {
        Cfg {
            request: h.request.clone(),
            expect: h.expect_status.clone(),
            streams: h.streams,
            grpc: h.grpc,
            settings: h.settings,
        }
    }
}
