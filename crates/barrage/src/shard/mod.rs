//! One run split into shards, and shards made one run again: local child processes
//! (`--processes`), the exact merge of shard results (`barrage merge`), and the jobs that run
//! shards on Slurm and Kubernetes (`barrage dist`).

pub mod dist;
pub mod merge;
pub mod processes;
