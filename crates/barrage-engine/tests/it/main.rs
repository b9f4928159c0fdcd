//! Integration tests of `barrage-engine`: one test binary (`cargo test -p barrage-engine --test it`),
//! in-process engine runs against the reference servers, scripted servers and real redis and
//! memcached on loopback.

// Shared helpers: run specs, scripted servers, counters.
mod common;

// The redis and memcached codecs against `redis-server` and `memcached`.
mod codecs_live;
// The redis and memcached decoders on generated, seeded streams split anywhere.
mod codecs_splits;
// Engine runs against the echo server and small scripted servers.
mod engine;
// Hostile HTTP/1.1 and WebSocket servers: floods, silence, malformed frames.
mod h2_hostile;
mod hostile;
// `hurry` (a second signal) stops waiting for replies in flight.
mod hurry;
// A protocol defined outside the engine, through the `Session` seam alone.
mod keyed;
// Every way a connection is told what to send, counted in virtual time.
mod modes;
// Scripted MQTT brokers: refusals, acknowledgements out of order, Receive Maximum, keep-alive,
// malformed packets, delivery floods.
mod mqtt_hostile;
// Open-loop pacing at scale.
mod pacing;
// HTTP and WebSocket through the same engine; counts reconcile with the servers.
mod protocols;
// Scripted proxies: an open tunnel, refusals, garbage, silence.
mod proxy_hostile;
// The protocol recipe proven by a throw-away protocol.
mod stub_protocol;
// Users running scenario steps: captures, rooms, broadcasts.
mod users;
