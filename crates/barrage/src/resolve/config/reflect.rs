//! `--reflect`: the method's descriptors from the server itself (gRPC server reflection),
//! once before the load, through the pre-load client `probe/reflect.rs`; its reason, when it
//! fails, is `--reflect`'s.

use super::vertical::DEFAULT_TIMEOUT;
use crate::probe::reflect::{self, Target};
use crate::resolve::cli::RunArgs;
use crate::resolve::url;
use crate::usage::Usage;
use prost_reflect::DescriptorPool;

/// The descriptors of `svc` (and its imports) from the server at `url`.
pub(super) fn pool(a: &RunArgs, url: &url::Url, svc: &str) -> Result<DescriptorPool, Usage> {
    let fail = |why: String| Usage::says("--reflect", format!("{}: {why}", url.addr));
    let timeout = a
        .limits
        .connect_timeout
        .or(a.limits.timeout)
        .unwrap_or(DEFAULT_TIMEOUT);
    let tls = if url.scheme.tls() {
        let plan = crate::resolve::tls::plan(url, &a.tls, barrage_engine::HttpVersion::H2)
            .map_err(|e| fail(e.to_string()))?;
        Some((plan.config.clone(), plan.server_name.clone()))
    } else {
        None
    };
    let target = Target {
        addr: url.addr,
        authority: url.host_header(),
        tls,
    };
    reflect::pool(&target, svc, timeout).map_err(fail)
}
