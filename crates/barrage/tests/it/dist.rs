//! `barrage dist slurm|k8s`: the launchers of one run as N shards.
//!
//! - Slurm: the printed sbatch script runs for real on the two-node cluster of
//!   `deploy/slurm/slurm-local.sh` (as `tests/it/slurm.rs`: skipped without slurm-wlm and munge,
//!   a failure under CI), once with a URL and once with a scenario file in a folder whose
//!   name needs quoting, and the merged result reconciles exactly with the echo server's own
//!   counts; a threshold that fails on the whole run is the job's exit code 3.
//! - Kubernetes: the printed manifest is validated against the API's strict JSON schemas of
//!   two versions (vendored in tests/k8s/, checked by tests/k8s/validate.py with Python's
//!   jsonschema and PyYAML: skipped without them, a failure under CI); then each pod's
//!   container is run here as the kubelet would start it (its command and args from the parsed
//!   manifest, `$(VAR)` expanded the Kubernetes way, /spec holding the ConfigMap's files), and
//!   the manifest's own collect commands (with a stand-in `kubectl` that reads those logs)
//!   fetch the shards and merge them: exactly the whole run, as the server counted it.
//! - Bad input: one line naming the flag, exit 2.
//!
//! Everything on 127.0.0.1; every run is bounded (a few thousand exchanges, seconds).

use crate::common::*;
use serde_json::Value;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// 12 users, each: one hello, five messages, one goodbye (84 exchanges in all); names from a
/// CSV beside the file. The hold (2 s) is what lets every user finish its seven round trips
/// before it departs, also on a starved machine (300 ms cut one user's fifth message once,
/// beside two busy loops and three other tests). The comments are there to be carried exactly (trailing spaces, a tab,
/// lines of YAML-looking text, non-ASCII).
fn echo_scenario(url: &str) -> String {
    format!(
        "# A scenario for barrage dist's tests: é, 日本, a tab:\there, trailing spaces:   \n\
         # ---\n\
         # key: value # not YAML, a comment\n\
         \n\
         target = \"{url}\"\n\
         [protocol]\n\
         framing = \"line\"\n\
         [users]\n\
         count = 12\n\
         arrive = \"200/s\"\n\
         hold = \"2s\"\n\
         depart = \"at_end\"\n\
         data = \"people.csv\"\n\
         [[steps]]\n\
         name = \"hello\"\n\
         send = 'hello {{row.name}} {{user}}\\n'\n\
         expect = {{ prefix = \"hello\" }}\n\
         [[steps]]\n\
         repeat = 5\n\
         steps = [{{ name = \"msg\", send = 'msg {{user}} {{seq}}\\n', expect = {{ prefix = \"msg\" }} }}]\n\
         [[leave]]\n\
         name = \"bye\"\n\
         send = 'bye {{user}}\\n'\n\
         expect = {{ prefix = \"bye\" }}\n\
         [run]\n\
         timeout = \"3s\"\n\
         \n\
         \n"
    )
}

fn people(dir: &Path) {
    let rows: String = (0..12).map(|i| format!("person{i}\n")).collect();
    write(dir, "people.csv", &format!("name\n{rows}"));
}

/// The per-step counts of a merged scenario run: (name, sent, completed).
fn steps(v: &Value) -> Vec<(String, u64, u64)> {
    v["summary"]["steps"]
        .as_array()
        .expect("summary.steps")
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().to_string(),
                x["sent"].as_u64().unwrap(),
                x["completed"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The scenario's run reconciles with the echo server: every step of every user, the bytes
/// both ways, one connection per user.
fn assert_scenario_reconciles(m: &Value, server: &Value) {
    let want = [("hello", 12), ("msg", 60), ("bye", 12)];
    let got = steps(m);
    assert_eq!(got.len(), 3, "{got:?}");
    for ((name, sent, completed), (w, n)) in got.iter().zip(want) {
        assert_eq!((name.as_str(), *sent, *completed), (w, n, n), "{got:?}");
    }
    assert_eq!(u(m, "summary.exchanges.completed"), 84);
    assert_eq!(u(m, "summary.exchanges.in_flight_at_end"), 0);
    assert_eq!(
        u(server, "bytes_read"),
        u(m, "summary.totals.bytes_written")
    );
    assert_eq!(
        u(server, "bytes_written"),
        u(m, "summary.totals.bytes_read")
    );
    assert_eq!(u(server, "connections_accepted"), 12, "one per user");
}

fn dist(args: &[&str]) -> std::process::Output {
    barrage().arg("dist").args(args).output().unwrap()
}

fn stdout_of(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

// ---------------------------------------------------------------------------------------
// Slurm, for real.

/// `sbatch --wait FILE` from `dir`: the job's exit code (bounded).
fn sbatch(conf: &Path, dir: &Path, script: &Path) -> (i32, String) {
    let mut c = Guard(
        StdCommand::new("sbatch")
            .env("SLURM_CONF", conf)
            .arg("--wait")
            .arg(script)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let st = wait_at_most(&mut c.0, Duration::from_secs(120)).expect("the job ends within 2 min");
    let mut text = String::new();
    for pipe in [
        c.0.stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read>),
        c.0.stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read>),
    ]
    .into_iter()
    .flatten()
    {
        let mut p = pipe;
        let _ = p.read_to_string(&mut text);
    }
    (st.code().unwrap_or(-1), text)
}

/// The batch script's own output (slurm-JOBID.out in the submit directory).
fn job_output(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("slurm-") && n.ends_with(".out") {
            out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    out
}

/// Waits until the job has said its last line (`barrage dist: merged ...`): `sbatch --wait`
/// can return as the job's record leaves the controller (it then says "no longer found" and
/// exits 0) while the job's last commands still run. At most 60 s, then fails with what
/// sbatch and the job said.
fn job_done(said: &str, submit: &Path) {
    let t = std::time::Instant::now();
    while !job_output(submit).contains("barrage dist: merged") {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the job never said it merged; sbatch said: {said}\njob output: {}",
            job_output(submit)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_sbatch_script_runs_on_slurm_and_the_merge_reconciles_with_the_server() {
    if !available(
        "slurm-wlm and munge",
        on_path("srun") && on_path("sbatch") && on_path("slurmctld") && on_path("munged"),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("slurm");
    let cluster = SlurmCluster::start(&state);
    let conf = cluster.conf();

    // 1. A URL and its flags: 2 shards, one per node, the default results directory.
    let server = EchoServer::start(&[]);
    let submit = dir.path().join("submit");
    std::fs::create_dir(&submit).unwrap();
    let out = dist(&[
        "slurm",
        server.url(),
        "--shards",
        "2",
        "--start-in",
        "3s",
        "--",
        "-c",
        "4",
        "-n",
        "2000",
    ]);
    let script = stdout_of(&out);
    for line in [
        "#SBATCH --ntasks=2",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "srun --kill-on-bad-exit=1",
        "--shard auto --start-at \"$START\"",
    ] {
        assert!(script.contains(line), "{line}:\n{script}");
    }
    let file = write(&submit, "run.sbatch", &script);
    let (code, said) = sbatch(&conf, &submit, &file);
    assert_eq!(code, 0, "{said}\n{}", job_output(&submit));
    let results: Vec<PathBuf> = std::fs::read_dir(&submit)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("barrage-")
        })
        .collect();
    assert_eq!(results.len(), 1, "one barrage-JOBID directory: {results:?}");
    let r = &results[0];
    for i in 0..2 {
        assert!(r.join(format!("shard-{i}")).is_dir(), "shard {i}'s --out");
        let log = std::fs::read_to_string(r.join(format!("shard-{i}.log"))).unwrap();
        assert!(
            log.contains("tcp://127.0.0.1"),
            "shard {i}'s own log: {log}"
        );
    }
    job_done(&said, &submit);
    let m = read_json(&r.join("merged.json"));
    assert_eq!(s(&m, "status"), "completed");
    assert_eq!(u(&m, "summary.exchanges.completed"), 2000);
    assert_eq!(u(&m, "summary.connections.target"), 4);
    let st = server.stop();
    assert_eq!(u(&st, "bytes_read"), 2000 * 19, "what the server read");
    assert_eq!(u(&st, "connections_accepted"), 4);
    assert!(
        job_output(&submit).contains("2 shards merged"),
        "the job prints the merged report"
    );

    // 2. A scenario file in a folder whose name needs quoting, 3 shards two per node, the
    //    results where --results says, a threshold that fails on the whole run: exit 3.
    let server = EchoServer::start(&[]);
    let odd = dir.path().join("it's a \"dir\" $HOME");
    std::fs::create_dir(&odd).unwrap();
    people(&odd);
    let scenario = write(&odd, "echo test.toml", &echo_scenario(server.url()));
    let results = odd.join("res ults");
    let out = barrage()
        .args(["dist", "slurm"])
        .arg(&scenario)
        .args([
            "--shards",
            "3",
            "--ntasks-per-node",
            "2",
            "--start-in",
            "3s",
        ])
        .arg("--results")
        .arg(&results)
        .args(["--threshold", "p99 < 1us"])
        .output()
        .unwrap();
    let script = stdout_of(&out);
    for line in [
        "#SBATCH --ntasks=3",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=2",
    ] {
        assert!(script.contains(line), "{line}:\n{script}");
    }
    let file = write(&odd, "run.sbatch", &script);
    let (code, said) = sbatch(&conf, &odd, &file);
    assert_eq!(
        code,
        3,
        "the whole run missed its threshold: {said}\n{}",
        job_output(&odd)
    );
    let m = read_json(&results.join("merged.json"));
    assert_eq!(s(&m, "status"), "completed");
    assert!(
        s(&m, "message").starts_with("3 shards merged"),
        "{}",
        s(&m, "message")
    );
    let th = m["thresholds"].as_array().unwrap();
    assert_eq!(th.len(), 1);
    assert_eq!(th[0]["passed"], false);
    assert_scenario_reconciles(&m, &server.stop());
    let log = std::fs::read_to_string(results.join("shard-2.log")).unwrap();
    assert!(
        log.contains("a threshold failed on its own share (exit 3)"),
        "a shard's own 3 is not a failed task: {log}"
    );
}

// ---------------------------------------------------------------------------------------
// Kubernetes: the schema, and the pods run here as the kubelet would run them.

/// A Python 3 that has jsonschema and PyYAML (the one on PATH, else Debian's).
fn validator_python() -> Option<String> {
    ["python3", "/usr/bin/python3"].into_iter().find_map(|p| {
        StdCommand::new(p)
            .args(["-c", "import jsonschema, yaml"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()
            .filter(|s| s.success())
            .map(|_| p.to_string())
    })
}

/// The manifest's documents as JSON, after tests/k8s/validate.py checked each against the
/// strict schemas of every vendored Kubernetes version.
fn validated(python: &str, manifest: &Path) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/k8s/validate.py");
    let out = StdCommand::new(python)
        .arg(script)
        .arg(manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the manifest is valid Kubernetes:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("v1.29.0-local-strict") && stderr.contains("v1.37.0-local-strict"),
        "{stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn kind<'a>(docs: &'a [Value], k: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == k)
        .unwrap_or_else(|| panic!("no {k} in {docs:?}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// What the kubelet does to `$(VAR)` in a container's command and args: `$$` is `$`,
/// `$(NAME)` of a defined variable is its value, anything else stays as written.
fn k8s_expand(s: &str, env: &[(&str, String)]) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            if b[i + 1] == b'$' {
                out.push('$');
                i += 2;
                continue;
            }
            if b[i + 1] == b'(' {
                if let Some(end) = s[i + 2..].find(')') {
                    let name = &s[i + 2..i + 2 + end];
                    match env.iter().find(|(k, _)| *k == name) {
                        Some((_, v)) => out.push_str(v),
                        None => out.push_str(&s[i..i + 2 + end + 1]),
                    }
                    i += 2 + end + 1;
                    continue;
                }
            }
        }
        let c = s[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The comment block's commands of step 3 (collect and merge), as one sh script.
fn collect_commands(manifest: &str) -> String {
    let after = manifest
        .split("# 3. ")
        .nth(1)
        .expect("step 3 of the comment block");
    let block = after.split("# 4. ").next().unwrap();
    block
        .lines()
        .filter_map(|l| l.strip_prefix("#      "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_k8s_manifest_is_valid_and_its_pods_and_collect_commands_make_the_whole_run() {
    let Some(python) = validator_python() else {
        available(
            "python3 with jsonschema and PyYAML (tests/k8s/validate.py)",
            false,
        );
        return;
    };
    let server = EchoServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("src");
    std::fs::create_dir(&src).unwrap();
    people(&src);
    let text = echo_scenario(server.url());
    let scenario = write(&src, "echo test.toml", &text);
    let out = barrage()
        .args(["dist", "k8s"])
        .arg(&scenario)
        .args(["--shards", "3", "--image", "registry.local/barrage:test"])
        .args(["--namespace", "load", "--start-in", "5s"])
        .arg("--barrage")
        .arg(bin())
        .args(["--", "--threshold", "steps.hello.errors.rate == 0"])
        .output()
        .unwrap();
    let manifest = stdout_of(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("the 3 shards start at") && said.contains("apply the manifest before then"),
        "{said}"
    );
    let file = write(d, "manifest.yaml", &manifest);
    let docs = validated(&python, &file);
    assert_eq!(docs.len(), 2);

    // The ConfigMap holds the files exactly as written.
    let cm = kind(&docs, "ConfigMap");
    let data = cm["data"].as_object().unwrap();
    let texts: Vec<&str> = data.values().map(|v| v.as_str().unwrap()).collect();
    assert!(
        texts.contains(&text.as_str()),
        "the scenario, byte for byte"
    );
    let csv = std::fs::read_to_string(src.join("people.csv")).unwrap();
    assert!(texts.contains(&csv.as_str()), "the CSV it names");

    // The Job: N indexed pods at once, none retried, spread over nodes.
    let job = kind(&docs, "Job");
    let name = job["metadata"]["name"].as_str().unwrap();
    assert_eq!(job["metadata"]["namespace"], "load");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 3);
    assert_eq!(spec["parallelism"], 3);
    assert_eq!(spec["backoffLimit"], 0);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["automountServiceAccountToken"], false);
    let label = &spec["template"]["metadata"]["labels"]["app.kubernetes.io/instance"];
    assert_eq!(label, name);
    let anti = &pod["affinity"]["podAntiAffinity"]
        ["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"];
    assert_eq!(
        anti["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"],
        *label
    );
    assert_eq!(anti["topologyKey"], "kubernetes.io/hostname");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.local/barrage:test");
    assert_eq!(c["env"][0]["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert_eq!(c["resources"]["requests"]["cpu"], "1");
    assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
    assert_eq!(pod["volumes"][1]["emptyDir"], serde_json::json!({}));
    assert_eq!(
        pod["volumes"][0]["configMap"]["name"].as_str().unwrap(),
        format!("{name}-spec")
    );
    let args = strings(&c["args"]);
    let start = args[args.iter().position(|a| a == "--start-at").unwrap() + 1].clone();
    assert_eq!(
        &args[..8],
        [
            "run",
            "/spec/echo test.toml",
            "--shard",
            "auto/3",
            "--start-at",
            start.as_str(),
            "--out",
            "/results/shard-$(JOB_COMPLETION_INDEX)"
        ]
    );
    assert!(said.contains(&start), "stderr says when: {said}");
    assert!(manifest.contains(&format!(
        "kubectl -n load wait --for=condition=complete job/{name} --timeout="
    )));

    // Each pod, run here as the kubelet would: the ConfigMap's items under spec/, an empty
    // results/, the command and args with $(JOB_COMPLETION_INDEX) expanded, the log
    // (stdout and stderr) kept as `kubectl logs` would show it.
    let spec_dir = d.join("spec");
    let results = d.join("results");
    let logs = d.join("logs");
    for p in [&spec_dir, &results, &logs] {
        std::fs::create_dir(p).unwrap();
    }
    for item in pod["volumes"][0]["configMap"]["items"].as_array().unwrap() {
        let key = item["key"].as_str().unwrap();
        let path = spec_dir.join(item["path"].as_str().unwrap());
        std::fs::write(path, data[key].as_str().unwrap()).unwrap();
    }
    let local = |a: String| {
        if let Some(rest) = a.strip_prefix("/spec/") {
            spec_dir.join(rest).display().to_string()
        } else if let Some(rest) = a.strip_prefix("/results/") {
            results.join(rest).display().to_string()
        } else {
            a
        }
    };
    let command = strings(&c["command"]);
    let mut pods = Vec::new();
    for i in 0..3 {
        let env = [("JOB_COMPLETION_INDEX", i.to_string())];
        let argv: Vec<String> = command
            .iter()
            .chain(args.iter())
            .map(|a| local(k8s_expand(a, &env)))
            .collect();
        let log = std::fs::File::create(logs.join(format!("{name}-{i}.log"))).unwrap();
        pods.push(Guard(
            StdCommand::new(&argv[0])
                .args(&argv[1..])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        ));
    }
    for (i, p) in pods.iter_mut().enumerate() {
        let st = wait_at_most(&mut p.0, Duration::from_secs(60)).expect("the pod ends");
        let log = std::fs::read_to_string(logs.join(format!("{name}-{i}.log"))).unwrap();
        assert!(st.success(), "pod {i}: {st}\n{log}");
        assert!(
            log.contains("=== barrage shard begin ==="),
            "pod {i}: {log}"
        );
    }

    // The manifest's own collect commands, with a kubectl that answers from those logs.
    let fake = d.join("bin");
    std::fs::create_dir(&fake).unwrap();
    let kubectl = format!(
        "#!/bin/sh\n\
         echo \"$*\" >> '{calls}'\n\
         mode= pod=\n\
         while [ $# -gt 0 ]; do\n\
           case \"$1\" in\n\
             get) mode=get ;;\n\
             logs) mode=logs; pod=$2; shift ;;\n\
           esac\n\
           shift\n\
         done\n\
         case $mode in\n\
           get) for f in '{logs}'/*.log; do b=${{f##*/}}; echo \"pod/${{b%.log}}\"; done ;;\n\
           logs) cat '{logs}'/\"${{pod#pod/}}.log\" ;;\n\
         esac\n",
        calls = d.join("kubectl-calls").display(),
        logs = logs.display()
    );
    write(&fake, "kubectl", &kubectl);
    StdCommand::new("chmod")
        .arg("+x")
        .arg(fake.join("kubectl"))
        .status()
        .unwrap();
    std::os::unix::fs::symlink(bin(), fake.join("barrage")).unwrap();
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let collect = collect_commands(&manifest);
    let out = StdCommand::new("sh")
        .args(["-c", &collect])
        .current_dir(&work)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{collect}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(d.join("kubectl-calls")).unwrap();
    assert!(
        calls.contains(&format!(
            "-n load get pods -l app.kubernetes.io/instance={name} -o name"
        )),
        "the pods are found by the template's label: {calls}"
    );
    let m = read_json(&work.join(format!("{name}.json")));
    assert_eq!(s(&m, "status"), "completed");
    assert!(
        s(&m, "message").starts_with("3 shards merged"),
        "{}",
        s(&m, "message")
    );
    assert_eq!(m["thresholds"][0]["passed"], true);
    assert_scenario_reconciles(&m, &server.stop());
}

#[test]
fn a_url_run_with_a_claim_and_secrets_is_valid_kubernetes_too() {
    let Some(python) = validator_python() else {
        available(
            "python3 with jsonschema and PyYAML (tests/k8s/validate.py)",
            false,
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dist(&[
        "k8s",
        "http://api.default.svc:8080/items?page=1",
        "--shards",
        "5",
        "--image",
        "barrage",
        "--cpu",
        "1500m",
        "--memory",
        "2Gi",
        "--results-pvc",
        "load-results",
        "--env-from-secret",
        "api-token",
        "--name",
        "api-load",
        "--",
        "-c",
        "1000",
        "-t",
        "2",
        "-d",
        "5m",
        "-H",
        "Authorization: Bearer {secret:API_TOKEN}",
        "--body",
        "cost $(HOME) $$",
    ]);
    let manifest = stdout_of(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("{secret:API_TOKEN}"), "{said}");
    let docs = validated(&python, &write(dir.path(), "m.yaml", &manifest));
    assert_eq!(docs.len(), 1, "a URL needs no ConfigMap");
    let job = kind(&docs, "Job");
    assert_eq!(job["metadata"]["name"], "api-load");
    assert!(job["metadata"].get("namespace").is_none());
    assert_eq!(job["spec"]["completions"], 5);
    assert_eq!(job["spec"]["parallelism"], 5);
    // 120 s to the start, 5 minutes of load, 5 minutes for the rest.
    assert_eq!(job["spec"]["activeDeadlineSeconds"], 720);
    let pod = &job["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(c["envFrom"][0]["secretRef"]["name"], "api-token");
    assert_eq!(c["resources"]["limits"]["cpu"], "1500m");
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "load-results"
    );
    let args = strings(&c["args"]);
    assert_eq!(args[1], "http://api.default.svc:8080/items?page=1");
    assert_eq!(args[3], "auto/5");
    let env = [
        ("JOB_COMPLETION_INDEX", "4".to_string()),
        ("HOME", "/x".into()),
    ];
    let expanded: Vec<String> = args.iter().map(|a| k8s_expand(a, &env)).collect();
    assert!(expanded.contains(&"/results/shard-4".to_string()));
    assert!(
        expanded.contains(&"cost $(HOME) $$".to_string()),
        "the user's words arrive as written: {args:?}"
    );
    assert!(
        expanded.contains(&"Authorization: Bearer {secret:API_TOKEN}".to_string()),
        "a secret stays a reference"
    );
    // The Job's -t is the user's, once.
    assert_eq!(args.iter().filter(|a| *a == "-t").count(), 1);
    assert!(
        !manifest.contains("configmap/"),
        "nothing to delete but the Job"
    );
    assert!(
        pod.get("hostNetwork").is_none(),
        "the pod network by default"
    );
    assert!(pod.get("dnsPolicy").is_none());
}

#[test]
fn host_network_puts_each_shard_in_its_nodes_network() {
    let Some(python) = validator_python() else {
        available(
            "python3 with jsonschema and PyYAML (tests/k8s/validate.py)",
            false,
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dist(&[
        "k8s",
        "tcp://127.0.0.1:7000",
        "--shards",
        "2",
        "--image",
        "localhost/barrage:dev",
        "--host-network",
        "--",
        "-c",
        "20",
        "-n",
        "4000",
    ]);
    let manifest = stdout_of(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("with --host-network that is the node each shard runs on"),
        "{said}"
    );
    let docs = validated(&python, &write(dir.path(), "m.yaml", &manifest));
    let pod = &kind(&docs, "Job")["spec"]["template"]["spec"];
    assert_eq!(pod["hostNetwork"], true);
    assert_eq!(
        pod["dnsPolicy"], "ClusterFirstWithHostNet",
        "service names resolve"
    );
    // Still spread over nodes and stripped of privileges.
    assert_eq!(
        pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
            ["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    // Given among the run's flags, it is the user's mistake of order.
    let out = dist(&[
        "k8s",
        "tcp://127.0.0.1:7000",
        "--shards",
        "2",
        "--image",
        "b",
        "-c",
        "2",
        "--host-network",
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--host-network is a flag of barrage dist"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------
// What is printed, and bad input.

#[test]
fn the_script_and_the_manifest_carry_the_shard_count() {
    let dir = tempfile::tempdir().unwrap();
    people(dir.path());
    let scenario = write(
        dir.path(),
        "echo.toml",
        &echo_scenario("tcp://127.0.0.1:7000"),
    );
    let scenario = scenario.to_str().unwrap();
    let script = stdout_of(&dist(&[
        "slurm", scenario, "--shards", "5", "--", "-t", "2",
    ]));
    for line in [
        "#SBATCH --ntasks=5",
        "#SBATCH --nodes=5",
        "#SBATCH --cpus-per-task=2",
        "START=@$(( $(date +%s) + 30 ))",
    ] {
        assert!(script.contains(line), "{line}:\n{script}");
    }
    let task = script
        .lines()
        .find(|l| l.trim_start().starts_with("barrage-shard "))
        .expect("the tasks' arguments");
    assert_eq!(
        task.matches(" -t 2").count(),
        1,
        "the user's -t, once: {task}"
    );
    let manifest = stdout_of(&dist(&["k8s", scenario, "--shards", "5", "--image", "b:1"]));
    for line in [
        "completions: 5",
        "parallelism: 5",
        "- auto/5",
        "backoffLimit: 0",
    ] {
        assert!(manifest.contains(line), "{line}:\n{manifest}");
    }
    // A fixed start in the future goes into the script as is, checked again at job start.
    let at = start_in(3600);
    let script = stdout_of(&dist(&[
        "slurm",
        scenario,
        "--shards",
        "2",
        "--start-at",
        &at,
    ]));
    assert!(script.contains(&format!("START={at}")), "{script}");
    assert!(script.contains("passed while the job waited"), "{script}");
}

#[test]
fn bad_input_is_one_line_naming_the_flag_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    people(dir.path());
    let scenario = write(
        dir.path(),
        "echo.toml",
        &echo_scenario("tcp://127.0.0.1:7000"),
    );
    let f = scenario.to_str().unwrap();
    let url = "tcp://127.0.0.1:7000";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["slurm", url, "--shards", "0"],
            "--shards 0: give 1 or more",
        ),
        (
            vec!["k8s", f, "--shards", "0", "--image", "b"],
            "--shards 0:",
        ),
        (
            vec!["slurm", url, "--shards", "-1"],
            "--shards -1: give 1 or more",
        ),
        (
            vec!["slurm", url, "--shards", "two"],
            "--shards two: give a whole number",
        ),
        (vec!["slurm", url], "--shards is required"),
        (
            vec![
                "slurm",
                url,
                "--shards",
                "2",
                "--start-at",
                "2020-01-01T00:00:00Z",
            ],
            "--start-at 2020-01-01T00:00:00Z: is in the past",
        ),
        (
            vec![
                "k8s",
                f,
                "--shards",
                "2",
                "--image",
                "b",
                "--start-at",
                "@1000",
            ],
            "--start-at @1000: is in the past",
        ),
        (
            vec![
                "k8s",
                f,
                "--shards",
                "2",
                "--image",
                "b",
                "--start-at",
                "soon",
            ],
            "--start-at soon: give a UTC time",
        ),
        (vec!["k8s", f, "--shards", "2"], "--image is required"),
        (
            vec!["k8s", f, "--shards", "2", "--image", "b", "--cpu", "2x"],
            "--cpu 2x: give a Kubernetes quantity",
        ),
        (
            vec![
                "k8s",
                f,
                "--shards",
                "2",
                "--image",
                "b",
                "--namespace",
                "Load",
            ],
            "--namespace Load:",
        ),
        (
            vec!["slurm", url, "--shards", "2", "-c", "4", "--start-in", "5s"],
            "--start-in is a flag of barrage dist: give it before the run's flags",
        ),
        (
            vec!["slurm", url, "--shards", "2", "--", "--out", "x"],
            "--out is set by barrage dist",
        ),
        (
            vec!["slurm", url, "--shards", "2", "--", "--json", "r.json"],
            "--json would be written by every shard",
        ),
        (
            vec!["slurm", url, "--shards", "2", "--", "--shard", "0/2"],
            "--shard is set by barrage dist",
        ),
        (
            vec!["slurm", url, "--shards", "2", "--", "--bogus"],
            "run flags: unexpected argument '--bogus'",
        ),
        (
            vec!["slurm", "chat.txt", "--shards", "2"],
            "FILE|URL chat.txt: is neither a scenario file",
        ),
        (vec!["slurm", "nope.toml", "--shards", "2"], "nope.toml"),
        (
            vec!["slurm", "ftp://h:1", "--shards", "2"],
            "target ftp://h:1: unknown scheme",
        ),
        (
            vec!["slurm", url, "--shards", "2", "--ntasks-per-node", "0"],
            "--ntasks-per-node",
        ),
        // Shards that would own no connection (issue 24), and starts no one means.
        (
            vec!["slurm", url, "--shards", "20", "--", "-c", "10"],
            "--shards 20 needs at least 20 connections (users) so that every shard owns one",
        ),
        (
            vec![
                "k8s", url, "--shards", "3", "--image", "b", "--", "-c", "4", "-t", "2",
            ],
            "--shards 3 needs at least 5 connections",
        ),
        (
            vec![
                "slurm",
                url,
                "--shards",
                "2",
                "--start-at",
                "2026-02-30T08:00:00Z",
            ],
            "--start-at 2026-02-30T08:00:00Z: give a UTC time",
        ),
        (
            vec![
                "slurm",
                url,
                "--shards",
                "2",
                "--start-at",
                "@99999999999999999999",
            ],
            "more than 7 days from now",
        ),
    ];
    for (args, want) in cases {
        let out = dist(&args);
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: want {want:?} in {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: one line: {e}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing printed on stdout");
    }
    // A scenario that names a file outside its folder cannot go into a ConfigMap.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let text = echo_scenario("tcp://127.0.0.1:7000").replace("people.csv", "../people.csv");
    let outside = write(&sub, "echo.toml", &text);
    let out = dist(&[
        "k8s",
        outside.to_str().unwrap(),
        "--shards",
        "2",
        "--image",
        "b",
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("../people.csv") && e.contains("no '..'"), "{e}");
}
