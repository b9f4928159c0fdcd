//! What this machine has, asked of its kernel before the load: whether an address is one of
//! its own (`--source-ip`).

use std::net::{IpAddr, SocketAddr};

/// Whether `ip` is an address of this machine (a socket can bind it).
pub fn bindable(ip: IpAddr) -> Result<(), String> {
    match std::net::UdpSocket::bind(SocketAddr::new(ip, 0)) {
        Ok(_) => Ok(()),
        Err(e) if barrage_engine::os::net::addr_not_available(&e) => Err(format!(
            "{ip} is not an address of this machine; add it to an interface (ip addr add {ip}/32 dev IFACE) or leave it out"
        )),
        Err(e) => Err(format!("{ip}: cannot bind it: {e}")),
    }
}
