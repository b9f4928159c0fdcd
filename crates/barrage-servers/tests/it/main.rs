//! Integration tests of `barrage-servers`: one test binary (`cargo test -p barrage-servers --test it`),
//! each reference server through its public API with blocking std clients.
//! `accept_backoff` and `shutdown` need the process to themselves: they run in a child process
//! of this binary (`common::alone`).

// Shared helpers: blocking HTTP and WebSocket clients with timeouts, server start, counters.
mod common;

// Out of file descriptors: the server backs off, then accepts what queued up.
mod accept_backoff;
// The chat server: rooms, broadcasts, counters.
mod chat;
// The echo server: correctness, exact counters, backpressure.
mod echo;
// The echo server's fault knobs, measured from a client.
mod faults;
// The http server: keep-alive, pipelining, limits.
mod http;
// `shutdown` and drop join every thread and close every socket.
mod shutdown;
// Issue 42 item 6: serve h2 and serve grpc against hostile clients (HPACK, preface).
mod reference_servers;
// The http server over TLS.
mod tls;
// The WebSocket server: handshake, frames, close.
mod ws;
