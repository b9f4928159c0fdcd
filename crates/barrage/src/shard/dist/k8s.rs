//! `barrage dist k8s`: a ConfigMap and an Indexed Job whose pods are the shards.

use super::configmap::{configmap_files, is_dns_label, is_dns_subdomain, is_quantity, CmFile};
use super::prepare::{
    is_loopback, now_secs, prepare, secrets_note, start_at, start_in, stem, Kind, Prepared, Spec,
};
use super::yaml::{emit, Yaml};
use crate::resolve::cli::K8sArgs;
use crate::sys::rfc3339;
use crate::usage::Usage;
// Kubernetes.

/// Where the pods see the scenario file (from the ConfigMap) and write their directories.
pub(super) const SPEC_DIR: &str = "/spec";
pub(super) const RESULTS_DIR: &str = "/results";
/// The marker lines around a shard's directory (a base64 tar.gz) at the end of its log.
pub(super) const BEGIN: &str = "=== barrage shard begin ===";
pub(super) const END: &str = "=== barrage shard end ===";

pub(super) fn k8s(a: &K8sArgs) -> Result<String, Usage> {
    let p = prepare(&a.shared, Kind::K8s)?;
    let image = match a.image.as_deref().map(str::trim) {
        None | Some("") => {
            return Err(Usage::says(
                "--image",
                "is required: the container image the shards run, with barrage on its PATH \
                 (deploy/k8s/README.md)",
            ))
        }
        Some(i) if i.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            return Err(Usage::value(
                "--image",
                i,
                "an image reference has no spaces",
            ))
        }
        Some(i) => i.to_string(),
    };
    if let Some(ns) = &a.namespace {
        if !is_dns_label(ns, 63) {
            return Err(Usage::value(
                "--namespace",
                ns,
                "a namespace is lower-case letters, digits and '-' (a DNS label)",
            ));
        }
    }
    if let Some(pvc) = &a.results_pvc {
        if !is_dns_subdomain(pvc) {
            return Err(Usage::value(
                "--results-pvc",
                pvc,
                "a claim's name is lower-case letters, digits, '-' and '.'",
            ));
        }
    }
    for s in &a.env_from_secret {
        if !is_dns_subdomain(s) {
            return Err(Usage::value(
                "--env-from-secret",
                s,
                "a Secret's name is lower-case letters, digits, '-' and '.'",
            ));
        }
    }
    let cpu = a.cpu.clone().unwrap_or_else(|| p.threads.to_string());
    if !is_quantity(&cpu) {
        return Err(Usage::value(
            "--cpu",
            &cpu,
            "give a Kubernetes quantity, e.g. 2, 1.5 or 500m",
        ));
    }
    if !is_quantity(&a.memory) {
        return Err(Usage::value(
            "--memory",
            &a.memory,
            "give a Kubernetes quantity, e.g. 512Mi or 2Gi",
        ));
    }
    let now = now_secs();
    let start = match (&a.shared.start_at, &a.shared.start_in) {
        (Some(t), _) => start_at(t, now)?,
        (None, Some(d)) => now + start_in(d)?,
        (None, None) => now + 120,
    };
    let name = match &a.name {
        Some(n) if is_dns_label(n, 52) => n.clone(),
        Some(n) => {
            return Err(Usage::value(
                "--name",
                n,
                "a Job's name here is lower-case letters, digits and '-', at most 52 long",
            ))
        }
        None => format!("barrage-{}-{start}", stem(&p)),
    };
    let files = match &p.spec {
        Spec::File(f) => Some(configmap_files(f)?),
        Spec::Url(_) => None,
    };
    let barrage = a.shared.barrage.clone().unwrap_or_else(|| "barrage".into());
    if is_loopback(&p.host) {
        crate::sys::err_line(if a.host_network {
            format!(
                "note: the target {} is loopback: with --host-network that is the node each \
                 shard runs on",
                p.host
            )
        } else {
            format!(
                "note: the target {} is loopback: in a pod that is the pod itself \
                 (--host-network: the node)",
                p.host
            )
        });
    }
    secrets_note(&p, Kind::K8s, !a.env_from_secret.is_empty());
    let wait = p.length.map(|l| (start - now) + l.as_secs() + 300);
    crate::sys::err_line(format!(
        "barrage dist k8s: the {} shards start at {} ({} s from now): apply the manifest \
         before then (kubectl apply -f FILE)",
        p.shards,
        rfc3339(start),
        start - now
    ));
    Ok(manifest(&Manifest {
        p: &p,
        name: &name,
        namespace: a.namespace.as_deref(),
        image: &image,
        barrage: &barrage,
        cpu: &cpu,
        memory: &a.memory,
        pvc: a.results_pvc.as_deref(),
        secrets: &a.env_from_secret,
        host_network: a.host_network,
        start,
        wait,
        files: files.as_deref(),
    }))
}

pub(super) struct Manifest<'a> {
    p: &'a Prepared,
    name: &'a str,
    namespace: Option<&'a str>,
    image: &'a str,
    barrage: &'a str,
    cpu: &'a str,
    memory: &'a str,
    pvc: Option<&'a str>,
    secrets: &'a [String],
    /// `hostNetwork: true` (and `dnsPolicy: ClusterFirstWithHostNet`, so that service names
    /// still resolve).
    host_network: bool,
    start: u64,
    /// How long `kubectl wait` and the Job may take, when the run's length is known.
    wait: Option<u64>,
    files: Option<&'a [CmFile]>,
}

/// The container's entry: runs `$0 "$@"` (barrage and the shard's arguments), passes a stop
/// on, maps the shard's own exit 3 to 0, and prints its --out directory at the end of its
/// log (a base64 tar.gz between marker lines), which the collect commands read back. It
/// holds no `$(` and no `$$`, which Kubernetes would expand in a container's command.
pub(super) fn k8s_entry(start: u64) -> String {
    format!(
        r#"out= prev=
for a in "$@"; do
  if [ "$prev" = --out ]; then out=$a; fi
  prev=$a
done
now=`date +%s`
if [ "$now" -gt {start} ]; then
  echo "barrage dist: shard $JOB_COMPLETION_INDEX started after the common start ({start}); its first seconds are late" >&2
fi
"$0" "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT HUP
wait "$pid"
code=$?
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
  code=$?
done
if [ "$code" -eq 3 ]; then
  echo "barrage dist: shard $JOB_COMPLETION_INDEX: a threshold failed on its own share (exit 3); the merge judges the whole run" >&2
  code=0
fi
if [ -n "$out" ] && [ -d "$out" ]; then
  echo "{BEGIN}"
  tar -czf - -C "`dirname "$out"`" "`basename "$out"`" | base64
  echo "{END}"
fi
exit "$code""#
    )
}

/// Kubernetes expands `$(VAR)` and turns `$$` into `$` in a container's command and args:
/// a `$` before `$` or `(` in the user's words is doubled so that they arrive as written.
pub(super) fn k8s_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        out.push(c);
        if c == '$' && matches!(it.peek(), Some('$') | Some('(')) {
            out.push('$');
        }
    }
    out
}

pub(super) fn manifest(m: &Manifest) -> String {
    use Yaml::*;
    let p = m.p;
    let n = p.shards;
    let s = |x: &str| Str(x.to_string());
    let labels = || {
        Map(vec![
            ("app.kubernetes.io/name".into(), s("barrage")),
            ("app.kubernetes.io/instance".into(), s(m.name)),
        ])
    };
    let metadata = |name: &str| {
        let mut v = vec![("name".to_string(), s(name))];
        if let Some(ns) = m.namespace {
            v.push(("namespace".into(), s(ns)));
        }
        v.push(("labels".into(), labels()));
        Map(v)
    };
    let cm_name = format!("{}-spec", m.name);
    let mut docs = Vec::new();
    let spec_arg = match &p.spec {
        Spec::File(f) => {
            let files = m.files.unwrap_or_default();
            let data = files
                .iter()
                .map(|c| (c.key.clone(), Str(c.text.clone())))
                .collect();
            docs.push(Map(vec![
                ("apiVersion".into(), s("v1")),
                ("kind".into(), s("ConfigMap")),
                ("metadata".into(), metadata(&cm_name)),
                ("data".into(), Map(data)),
            ]));
            format!("{SPEC_DIR}/{}", f.name)
        }
        Spec::Url(u) => u.clone(),
    };
    let mut args = vec![
        s("run"),
        Str(k8s_escape(&spec_arg)),
        s("--shard"),
        Str(format!("auto/{n}")),
        s("--start-at"),
        Str(rfc3339(m.start)),
        s("--out"),
        Str(format!("{RESULTS_DIR}/shard-$(JOB_COMPLETION_INDEX)")),
    ];
    args.extend(p.flags.iter().map(|f| Str(k8s_escape(f))));
    let env = vec![Map(vec![
        ("name".into(), s("JOB_COMPLETION_INDEX")),
        (
            "valueFrom".into(),
            Map(vec![(
                "fieldRef".into(),
                Map(vec![(
                    "fieldPath".into(),
                    s("metadata.annotations['batch.kubernetes.io/job-completion-index']"),
                )]),
            )]),
        ),
    ])];
    let resources = || {
        Map(vec![
            ("cpu".into(), Str(m.cpu.to_string())),
            ("memory".into(), Str(m.memory.to_string())),
        ])
    };
    let mut mounts = Vec::new();
    if m.files.is_some() {
        mounts.push(Map(vec![
            ("name".into(), s("spec")),
            ("mountPath".into(), s(SPEC_DIR)),
            ("readOnly".into(), Bool(true)),
        ]));
    }
    mounts.push(Map(vec![
        ("name".into(), s("results")),
        ("mountPath".into(), s(RESULTS_DIR)),
    ]));
    let mut container = vec![
        ("name".into(), s("barrage")),
        ("image".into(), s(m.image)),
        (
            "command".into(),
            List(vec![
                s("/bin/sh"),
                s("-c"),
                Str(k8s_entry(m.start)),
                Str(k8s_escape(m.barrage)),
            ]),
        ),
        ("args".into(), List(args)),
        ("env".into(), List(env)),
    ];
    if !m.secrets.is_empty() {
        container.push((
            "envFrom".into(),
            List(
                m.secrets
                    .iter()
                    .map(|x| Map(vec![("secretRef".into(), Map(vec![("name".into(), s(x))]))]))
                    .collect(),
            ),
        ));
    }
    container.extend([
        (
            "resources".into(),
            Map(vec![
                ("requests".into(), resources()),
                ("limits".into(), resources()),
            ]),
        ),
        ("volumeMounts".into(), List(mounts)),
        (
            "securityContext".into(),
            Map(vec![
                ("allowPrivilegeEscalation".into(), Bool(false)),
                (
                    "capabilities".into(),
                    Map(vec![("drop".into(), List(vec![s("ALL")]))]),
                ),
            ]),
        ),
    ]);
    let mut volumes = Vec::new();
    if let Some(files) = m.files {
        let items = files
            .iter()
            .map(|c| {
                Map(vec![
                    ("key".into(), Str(c.key.clone())),
                    ("path".into(), Str(c.path.clone())),
                ])
            })
            .collect();
        volumes.push(Map(vec![
            ("name".into(), s("spec")),
            (
                "configMap".into(),
                Map(vec![
                    ("name".into(), Str(cm_name.clone())),
                    ("items".into(), List(items)),
                ]),
            ),
        ]));
    }
    volumes.push(Map(vec![
        ("name".into(), s("results")),
        match m.pvc {
            Some(c) => (
                "persistentVolumeClaim".into(),
                Map(vec![("claimName".into(), s(c))]),
            ),
            None => ("emptyDir".into(), Map(vec![])),
        },
    ]));
    let affinity = Map(vec![(
        "podAntiAffinity".into(),
        Map(vec![(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            List(vec![Map(vec![
                ("weight".into(), Int(100)),
                (
                    "podAffinityTerm".into(),
                    Map(vec![
                        (
                            "labelSelector".into(),
                            Map(vec![(
                                "matchLabels".into(),
                                Map(vec![("app.kubernetes.io/instance".into(), s(m.name))]),
                            )]),
                        ),
                        ("topologyKey".into(), s("kubernetes.io/hostname")),
                    ]),
                ),
            ])]),
        )]),
    )]);
    let mut pod_spec = vec![
        ("restartPolicy".into(), s("Never")),
        ("automountServiceAccountToken".into(), Bool(false)),
        ("enableServiceLinks".into(), Bool(false)),
    ];
    if m.host_network {
        pod_spec.extend([
            ("hostNetwork".into(), Bool(true)),
            ("dnsPolicy".into(), s("ClusterFirstWithHostNet")),
        ]);
    }
    pod_spec.extend([
        ("affinity".into(), affinity),
        ("containers".into(), List(vec![Map(container)])),
        ("volumes".into(), List(volumes)),
    ]);
    let pod = Map(vec![
        ("metadata".into(), Map(vec![("labels".into(), labels())])),
        ("spec".into(), Map(pod_spec)),
    ]);
    let mut job_spec = vec![
        ("completionMode".into(), s("Indexed")),
        ("completions".into(), Int(n)),
        ("parallelism".into(), Int(n)),
        ("backoffLimit".into(), Int(0)),
    ];
    if let Some(w) = m.wait {
        job_spec.push(("activeDeadlineSeconds".into(), Int(w)));
    }
    job_spec.push(("template".into(), pod));
    docs.push(Map(vec![
        ("apiVersion".into(), s("batch/v1")),
        ("kind".into(), s("Job")),
        ("metadata".into(), metadata(m.name)),
        ("spec".into(), Map(job_spec)),
    ]));

    let mut out = String::new();
    out.push_str(&format!(
        "# One barrage run as {n} shards: a Kubernetes Indexed Job, generated by barrage dist k8s.\n\
         # The shards start together at {} (--start-at): apply this before then.\n\
         # Commands to run it are at the end.\n",
        rfc3339(m.start)
    ));
    for d in &docs {
        out.push_str("---\n");
        emit(&mut out, d, 0);
    }
    out.push_str(&k8s_commands(m));
    out
}

/// The trailing comment block: apply, wait, collect, merge, clean up.
pub(super) fn k8s_commands(m: &Manifest) -> String {
    let ns = m.namespace.map_or(String::new(), |n| format!(" -n {n}"));
    let name = m.name;
    let n = m.p.shards;
    let sel = format!("app.kubernetes.io/instance={name}");
    let timeout = match m.wait {
        Some(w) => format!("{w}s"),
        None => "1h".into(),
    };
    let timeout_note = match m.wait {
        Some(_) => "the start, the load and 5 minutes".to_string(),
        None => "raise it if the run is longer than that".to_string(),
    };
    let results = match m.pvc {
        Some(c) => format!(
            "#    Every shard's directory is also on the claim {c} (shard-I under its root)."
        ),
        None => "#    They live in an emptyDir: collect them before the pods are deleted (and \
                 before\n#    the kubelet rotates the logs, at 10 MiB by default: hours of a run)."
            .to_string(),
    };
    let cleanup = match m.files {
        Some(_) => format!("job/{name} configmap/{name}-spec"),
        None => format!("job/{name}"),
    };
    format!(
        "# ---- How to run it ------------------------------------------------------------------\n\
         # 1. Apply, before {start}:\n\
         #      kubectl apply -f FILE.yaml\n\
         # 2. Wait for the {n} shards ({timeout_note}):\n\
         #      kubectl{ns} wait --for=condition=complete job/{name} --timeout={timeout}\n\
         #    backoffLimit is 0: a shard that fails is not retried (a rerun would be another\n\
         #    run, its seconds out of step with the rest); the Job fails (the wait above then\n\
         #    runs to its timeout) and its pods say which shard and why:\n\
         #      kubectl{ns} get pods -l {sel}; kubectl{ns} logs POD\n\
         # 3. Collect each shard's --out directory from the end of its log (a base64 tar.gz\n\
         #    between marker lines) and merge them into one result:\n\
         {results}\n\
         #      mkdir -p {name}\n\
         #      for pod in $(kubectl{ns} get pods -l {sel} -o name); do\n\
         #        kubectl{ns} logs \"$pod\" | awk '/^{END}$/ {{ f = 0 }} f {{ print }} /^{BEGIN}$/ {{ f = 1 }}' \\\n\
         #          | base64 -d | tar -xzf - -C {name}\n\
         #      done\n\
         #      barrage merge {name}/shard-* -o {name}.json   # exit 3: a threshold failed\n\
         # 4. Clean up:\n\
         #      kubectl{ns} delete {cleanup}\n",
        start = rfc3339(m.start),
    )
}
