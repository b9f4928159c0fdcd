//! The shard contract on a real engine: a two-node Slurm cluster on this host
//! (`deploy/slurm/slurm-local.sh`: Debian's slurm-wlm and munge, installed by .ci/run), one
//! barrage task per node with `--shard auto` (SLURM_PROCID / SLURM_NTASKS) and a common
//! `--start-at`, then `barrage merge`: exactly the whole run, as the server counted it.
//! Everything on 127.0.0.1.

use crate::common::*;
use std::process::Command as StdCommand;
use std::time::Duration;

#[test]
fn slurm_runs_the_shards_and_the_merge_is_the_whole_run() {
    if !available(
        "slurm-wlm and munge",
        on_path("srun") && on_path("slurmctld") && on_path("munged"),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("slurm");
    let _cluster = SlurmCluster::start(&state);
    let server = EchoServer::start(&[]);
    let start = start_in(5);
    let task = format!(
        "exec '{}' {} -c 4 -t 1 -n 2000 -q --no-tui --shard auto --start-at {start} --out '{}'/shard$SLURM_PROCID",
        bin().display(),
        server.url(),
        dir.path().display()
    );
    let mut srun = Guard(
        StdCommand::new("srun")
            .env("SLURM_CONF", state.join("slurm.conf"))
            .args([
                "-N2",
                "--ntasks-per-node=1",
                "--kill-on-bad-exit=1",
                "sh",
                "-c",
                &task,
            ])
            .spawn()
            .unwrap(),
    );
    let st = wait_at_most(&mut srun.0, Duration::from_secs(120)).expect("srun ends");
    assert!(st.success(), "{st}");
    let merged = dir.path().join("run.json");
    let out = barrage()
        .arg("merge")
        .arg(dir.path().join("shard0"))
        .arg(dir.path().join("shard1"))
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = read_json(&merged);
    assert_eq!(s(&m, "status"), "completed");
    assert_eq!(u(&m, "summary.exchanges.completed"), 2000);
    assert_eq!(u(&m, "summary.connections.target"), 4);
    let st = server.stop();
    assert_eq!(
        st["bytes_read"].as_u64().unwrap(),
        2000 * 19,
        "what the server read"
    );
}
