//! `barrage run`'s redis and memcached flags (redis://, memcache://), flattened into `RunArgs`.

use clap::Args;

#[derive(Args, Debug, Clone, Default)]
pub struct KvArgs {
    /// redis:// and memcache://: a command to send, e.g. 'SET key:{seq} {conn}' or
    /// 'get key:{rand%1000}'; repeatable for a mix, a leading N* weights it ('3*GET k');
    /// placeholders {conn} {seq} {seq%N} {rand%N} {ts_us} [redis default: PING;
    /// memcache default: 'get key:{rand%1000}']
    #[arg(long, value_name = "COMMAND", help_heading = "Redis and memcached")]
    pub command: Vec<String>,

    /// redis://: speak RESP3 (each connection opens with HELLO 3; needs redis 6 or later)
    #[arg(long, help_heading = "Redis and memcached")]
    pub resp3: bool,
}
