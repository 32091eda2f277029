//! Kubernetes manifests for one tpuport workload on a GKE TPU slice.
//!
//! - serve, single-host slice: Deployment + Service + PodDisruptionBudget + PodMonitoring
//!   (Managed Prometheus) + HorizontalPodAutoscaler on `tpuport_queue_depth` through the
//!   Custom Metrics Stackdriver Adapter (`prometheus.googleapis.com|NAME|gauge`, `type: Pods`,
//!   `AverageValue`, the pattern of ai-on-gke's JetStream HPA, `serving-anchors.md` §4);
//! - serve, multi-host slice: the same around a LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`)
//!   with one group per slice replica, every host running the same `tpuport serve` (SPMD) and
//!   only the leader behind the Service;
//! - batch: an Indexed Job, one `tpuport batch` shard per completion index (the binary reads
//!   `JOB_COMPLETION_INDEX`);
//! - train: a JobSet (`jobset.x-k8s.io/v1alpha2`) with one child Job per slice, one pod per host,
//!   kept on one node pool (`alpha.jobset.sigs.k8s.io/exclusive-topology`).
//!
//! Values come from a [`DeploySpec`]; nothing here reads files or the environment.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::DeployError;
use crate::gke::{ACCELERATOR_LABEL, Placement, TOPOLOGY_LABEL, TPU_RESOURCE};

/// Where the model repository (or model) is mounted in every pod.
pub const MODELS_MOUNT: &str = "/models";
/// Where the dataset volume is mounted in batch pods.
pub const DATA_MOUNT: &str = "/data";
/// The executable cache folder inside pods (`TPUPORT_CACHE_DIR`).
pub const CACHE_MOUNT: &str = "/var/cache/tpuport";
/// The Managed Prometheus metric the HPA scales on.
pub const HPA_METRIC: &str = "prometheus.googleapis.com|tpuport_queue_depth|gauge";
/// Seconds added to serve's drain deadline for the pod's termination grace period (the process
/// also needs to stop listening and exit after the drain).
pub const GRACE_MARGIN_S: u64 = 15;

/// What runs on the slice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Workload {
    /// `tpuport serve` behind a Service, autoscaled.
    Serve(ServeSpec),
    /// `tpuport batch`, sharded over an Indexed Job.
    Batch(BatchSpec),
    /// A training command on every host of the slice.
    Train(TrainSpec),
}

/// Serving settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServeSpec {
    /// Models of the repository to serve (empty: all; passed as `--model`).
    pub models: Vec<String>,
    /// Port for REST, gRPC and `/metrics`.
    pub port: u16,
    /// serve's `--drain-timeout`, seconds.
    pub drain_timeout_s: u64,
    /// HPA minimum replicas (slices).
    pub min_replicas: u32,
    /// HPA maximum replicas.
    pub max_replicas: u32,
    /// Queued requests per replica the HPA aims for.
    pub queue_target: u32,
    /// Restrict the HPA metric to this model's queue (one-model repositories).
    pub hpa_model: Option<String>,
}

/// Batch settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchSpec {
    /// The model, relative to the models volume.
    pub model: String,
    /// Input, relative to the data volume.
    pub input: String,
    /// Output folder, relative to the data volume.
    pub output: String,
    /// PersistentVolumeClaim holding input and output.
    pub data_pvc: String,
    /// Shards (completions).
    pub shards: u32,
    /// Shards running at once.
    pub parallelism: u32,
    /// Retries per shard.
    pub retries_per_shard: u32,
}

/// Training settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TrainSpec {
    /// The command every host runs (`python3 train.py`).
    pub command: Vec<String>,
    /// Slices (JobSet replicas; more than one is multislice over DCN).
    pub slices: u32,
}

/// Everything the manifests are made from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeploySpec {
    /// Resource name (a DNS-1035 label).
    pub name: String,
    /// Namespace, when set.
    pub namespace: Option<String>,
    /// Container image with `tpuport` on PATH (and the PJRT plugin for the TPU: libtpu).
    pub image: String,
    /// PersistentVolumeClaim holding the model repository (serve) or model (batch, train).
    pub models_pvc: String,
    /// The slice.
    pub placement: Placement,
    /// What runs.
    pub workload: Workload,
}

/// One emitted resource.
#[derive(Clone, Debug, Serialize)]
pub struct Manifest {
    /// File name under the output folder.
    pub file: String,
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// The resource.
    #[serde(skip)]
    pub doc: Value,
}

impl Manifest {
    fn new(file: &str, doc: Value) -> Manifest {
        let s = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let name =
            doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        Manifest { file: file.to_owned(), api_version: s("apiVersion"), kind: s("kind"), name, doc }
    }

    /// The YAML text of the resource.
    #[must_use]
    pub fn yaml(&self) -> String {
        crate::yaml::to_yaml(&self.doc)
    }
}

/// Checks a Kubernetes resource name (RFC 1035 label: lower-case letters, digits and `-`,
/// starting with a letter, at most 63 characters; 40 here, so derived names such as
/// `NAME-0-3` of LeaderWorkerSet pods stay valid).
///
/// # Errors
/// [`DeployError::Invalid`].
pub fn check_name(field: &str, name: &str) -> Result<(), DeployError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(DeployError::invalid(
            field,
            format!(
                "`{name}` is not a Kubernetes name: lower-case letters, digits and `-`, starting with a letter, at most 40 characters"
            ),
        ))
    }
}

/// A name that passes [`check_name`], derived from a file stem or folder name (`raw`):
/// lower-cased, each run of other characters one `-`, prefixed `tpuport-` (`tpuport-m` before a
/// digit), at most 40 characters.
#[must_use]
pub fn name_from(raw: &str) -> String {
    let mut out = String::new();
    for c in raw.to_ascii_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    let out = if out.starts_with(|c: char| c.is_ascii_lowercase()) {
        format!("tpuport-{out}")
    } else {
        format!("tpuport-m{out}")
    };
    out.chars().take(40).collect::<String>().trim_end_matches('-').to_owned()
}

/// Every resource for `spec`, in apply order.
///
/// # Errors
/// [`DeployError::Invalid`] for a bad name or replica range, [`DeployError::Unsupported`] for
/// a batch or serve spec on a slice shape that cannot run it.
pub fn manifests(spec: &DeploySpec) -> Result<Vec<Manifest>, DeployError> {
    check_name("--name", &spec.name)?;
    if let Some(ns) = &spec.namespace {
        check_name("--namespace", ns)?;
    }
    check_name("--models-pvc", &spec.models_pvc)?;
    match &spec.workload {
        Workload::Serve(s) => serve(spec, s),
        Workload::Batch(b) => batch(spec, b),
        Workload::Train(t) => train(spec, t),
    }
}

fn metadata(spec: &DeploySpec, component: &str, annotations: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(spec.name));
    if let Some(ns) = &spec.namespace {
        m.insert("namespace".into(), json!(ns));
    }
    m.insert("labels".into(), labels(spec, component));
    if let Some(a) = annotations {
        m.insert("annotations".into(), a);
    }
    Value::Object(m)
}

fn labels(spec: &DeploySpec, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "tpuport",
        "app.kubernetes.io/instance": spec.name,
        "app.kubernetes.io/component": component,
    })
}

fn node_selector(p: &Placement) -> Value {
    json!({ ACCELERATOR_LABEL: p.accelerator, TOPOLOGY_LABEL: p.topology })
}

fn tolerations() -> Value {
    json!([{ "key": TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule" }])
}

fn tpu_resources(p: &Placement) -> Value {
    let n = p.chips_per_pod.to_string();
    json!({ "requests": { TPU_RESOURCE: n }, "limits": { TPU_RESOURCE: n } })
}

fn models_volume(spec: &DeploySpec) -> Value {
    json!({ "name": "models", "persistentVolumeClaim": { "claimName": spec.models_pvc, "readOnly": true } })
}

fn cache_volume() -> Value {
    json!({ "name": "cache", "emptyDir": {} })
}

fn base_mounts() -> Value {
    json!([
        { "name": "models", "mountPath": MODELS_MOUNT, "readOnly": true },
        { "name": "cache", "mountPath": CACHE_MOUNT },
    ])
}

fn cache_env() -> Value {
    json!({ "name": "TPUPORT_CACHE_DIR", "value": CACHE_MOUNT })
}

// ---------------------------------------------------------------------------------------------
// serve

fn serve(spec: &DeploySpec, s: &ServeSpec) -> Result<Vec<Manifest>, DeployError> {
    if s.min_replicas == 0 || s.min_replicas > s.max_replicas {
        return Err(DeployError::invalid(
            "--min-replicas/--max-replicas",
            format!("need 1 <= min ({}) <= max ({})", s.min_replicas, s.max_replicas),
        ));
    }
    if s.queue_target == 0 {
        return Err(DeployError::invalid("--queue-target", "must be at least 1"));
    }
    if s.port == 0 {
        return Err(DeployError::invalid("--port", "must be a fixed port, not 0"));
    }
    let p = &spec.placement;
    let multi = p.multi_host();
    // Pods the Service, PodMonitoring and PDB select: every replica's one pod, or the leaders.
    let mut select = labels(spec, "serve");
    if multi {
        select["leaderworkerset.sigs.k8s.io/name"] = json!(spec.name);
        select["leaderworkerset.sigs.k8s.io/worker-index"] = json!("0");
    }
    let mut out = Vec::new();
    if multi {
        out.push(Manifest::new("leaderworkerset.yaml", leader_worker_set(spec, s)));
    } else {
        out.push(Manifest::new("deployment.yaml", deployment(spec, s)));
    }
    out.push(Manifest::new(
        "service.yaml",
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(spec, "serve", None),
            "spec": {
                "type": "ClusterIP",
                "selector": select,
                "ports": [{
                    "name": "http",
                    "port": s.port,
                    "targetPort": "http",
                    "protocol": "TCP",
                    "appProtocol": "kubernetes.io/h2c",
                }],
            },
        }),
    ));
    out.push(Manifest::new(
        "poddisruptionbudget.yaml",
        json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": metadata(spec, "serve", None),
            "spec": { "maxUnavailable": 1, "selector": { "matchLabels": labels(spec, "serve") } },
        }),
    ));
    out.push(Manifest::new(
        "podmonitoring.yaml",
        json!({
            "apiVersion": "monitoring.googleapis.com/v1",
            "kind": "PodMonitoring",
            "metadata": metadata(spec, "serve", None),
            "spec": {
                "selector": { "matchLabels": select },
                "endpoints": [{ "port": "http", "path": "/metrics", "interval": "15s" }],
            },
        }),
    ));
    let target = if multi {
        json!({ "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": spec.name })
    } else {
        json!({ "apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name })
    };
    let mut metric = json!({ "name": HPA_METRIC });
    if let Some(m) = &s.hpa_model {
        metric["selector"] = json!({ "matchLabels": { "metric.labels.model": m } });
    }
    out.push(Manifest::new(
        "horizontalpodautoscaler.yaml",
        json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": metadata(spec, "serve", None),
            "spec": {
                "scaleTargetRef": target,
                "minReplicas": s.min_replicas,
                "maxReplicas": s.max_replicas,
                "metrics": [{
                    "type": "Pods",
                    "pods": {
                        "metric": metric,
                        "target": { "type": "AverageValue", "averageValue": s.queue_target.to_string() },
                    },
                }],
                // A new TPU slice takes minutes to come up; do not flap.
                "behavior": { "scaleDown": { "stabilizationWindowSeconds": 600 } },
            },
        }),
    ));
    Ok(out)
}

fn serve_args(s: &ServeSpec) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "serve".into(),
        MODELS_MOUNT.into(),
        "--host".into(),
        "0.0.0.0".into(),
        "--port".into(),
        s.port.to_string(),
        "--drain-timeout".into(),
        s.drain_timeout_s.to_string(),
    ];
    for m in &s.models {
        a.push("--model".into());
        a.push(m.clone());
    }
    a
}

fn serve_container(spec: &DeploySpec, s: &ServeSpec, command: Value, env: Vec<Value>) -> Value {
    let probe = |path: &str, period: u32, failures: u32| {
        json!({
            "httpGet": { "path": path, "port": "http" },
            "periodSeconds": period,
            "failureThreshold": failures,
        })
    };
    let mut c = json!({
        "name": "serve",
        "image": spec.image,
        "ports": [{ "name": "http", "containerPort": s.port, "protocol": "TCP" }],
        "env": std::iter::once(cache_env()).chain(env).collect::<Vec<_>>(),
        "resources": tpu_resources(&spec.placement),
        // Every bucket compiles before readiness (or loads from the cache): allow 15 minutes.
        "startupProbe": probe("/v2/health/ready", 10, 90),
        "readinessProbe": probe("/v2/health/ready", 5, 2),
        "livenessProbe": probe("/v2/health/live", 10, 3),
        "volumeMounts": base_mounts(),
    });
    match command {
        Value::Null => {
            c["command"] = json!(["tpuport"]);
            c["args"] = json!(serve_args(s));
        }
        other => c["command"] = other,
    }
    c
}

fn serve_pod(spec: &DeploySpec, s: &ServeSpec, container: Value) -> Value {
    json!({
        "terminationGracePeriodSeconds": s.drain_timeout_s + GRACE_MARGIN_S,
        "nodeSelector": node_selector(&spec.placement),
        "tolerations": tolerations(),
        "containers": [container],
        "volumes": [models_volume(spec), cache_volume()],
    })
}

fn deployment(spec: &DeploySpec, s: &ServeSpec) -> Value {
    let container = serve_container(spec, s, Value::Null, Vec::new());
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(spec, "serve", None),
        "spec": {
            "replicas": s.min_replicas,
            "selector": { "matchLabels": labels(spec, "serve") },
            // A slice is whole or absent: bring the new one up before the old one goes.
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": labels(spec, "serve") },
                "spec": serve_pod(spec, s, container),
            },
        },
    })
}

/// The shell line LeaderWorkerSet pods run: derive libtpu's `TPU_WORKER_HOSTNAMES` from the
/// leader's address (`NAME-G.NAME.NS…`; worker `i` is `NAME-G-i.NAME.NS…`), then exec serve.
fn lws_command(s: &ServeSpec) -> Value {
    let args: Vec<String> = serve_args(s).iter().map(|a| shell_quote(a)).collect();
    let line = format!(
        "lead=\"$LWS_LEADER_ADDRESS\"; first=\"${{lead%%.*}}\"; rest=\"${{lead#*.}}\"; hosts=\"$lead\"; i=1; \
         while [ \"$i\" -lt \"$LWS_GROUP_SIZE\" ]; do hosts=\"$hosts,$first-$i.$rest\"; i=$((i+1)); done; \
         export TPU_WORKER_HOSTNAMES=\"$hosts\"; exec tpuport {}",
        args.join(" ")
    );
    json!(["/bin/sh", "-c", line])
}

fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:".contains(&b)) {
        a.to_owned()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

fn leader_worker_set(spec: &DeploySpec, s: &ServeSpec) -> Value {
    let worker_id = json!({
        "name": "TPU_WORKER_ID",
        "valueFrom": { "fieldRef": { "fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']" } },
    });
    let container = serve_container(spec, s, lws_command(s), vec![worker_id]);
    let template = json!({
        "metadata": { "labels": labels(spec, "serve") },
        "spec": serve_pod(spec, s, container),
    });
    json!({
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": metadata(
            spec,
            "serve",
            Some(json!({ "leaderworkerset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool" })),
        ),
        "spec": {
            "replicas": s.min_replicas,
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": { "maxSurge": 1, "maxUnavailable": 0 },
            },
            "leaderWorkerTemplate": {
                "size": spec.placement.pods,
                // One lost host breaks the slice's program: restart the whole group.
                "restartPolicy": "RecreateGroupOnPodRestart",
                "workerTemplate": template,
            },
        },
    })
}

// ---------------------------------------------------------------------------------------------
// batch

fn batch(spec: &DeploySpec, b: &BatchSpec) -> Result<Vec<Manifest>, DeployError> {
    let p = &spec.placement;
    if p.multi_host() {
        return Err(DeployError::Unsupported(format!(
            "{}: tpuport batch runs on one host; pick a single-host slice (shards spread the data over several)",
            p.slice
        )));
    }
    if b.shards == 0 || b.parallelism == 0 {
        return Err(DeployError::invalid("--shards/--parallelism", "must be at least 1"));
    }
    check_name("--data-pvc", &b.data_pvc)?;
    for (field, path) in [("model", &b.model), ("--input", &b.input), ("--batch-output", &b.output)]
    {
        if path.is_empty() || path.starts_with('/') || path.split('/').any(|c| c == "..") {
            return Err(DeployError::invalid(
                field,
                format!("`{path}` must be a relative path inside its volume"),
            ));
        }
    }
    let args = vec![
        "batch".to_owned(),
        if b.model == "." {
            MODELS_MOUNT.to_owned()
        } else {
            format!("{MODELS_MOUNT}/{}", b.model)
        },
        "--input".into(),
        format!("{DATA_MOUNT}/{}", b.input),
        "--output".into(),
        format!("{DATA_MOUNT}/{}", b.output),
        "--shard-count".into(),
        b.shards.to_string(),
    ];
    let mut mounts = base_mounts();
    if let Some(m) = mounts.as_array_mut() {
        m.push(json!({ "name": "data", "mountPath": DATA_MOUNT }));
    }
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(spec, "batch", None),
        "spec": {
            "completionMode": "Indexed",
            "completions": b.shards,
            "parallelism": b.parallelism.min(b.shards),
            // A failed shard retries alone; the others keep their finished parts.
            "backoffLimitPerIndex": b.retries_per_shard,
            "template": {
                "metadata": { "labels": labels(spec, "batch") },
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": node_selector(p),
                    "tolerations": tolerations(),
                    "containers": [{
                        "name": "batch",
                        "image": spec.image,
                        "command": ["tpuport"],
                        "args": args,
                        "env": [cache_env()],
                        "resources": tpu_resources(p),
                        "volumeMounts": mounts,
                    }],
                    "volumes": [
                        models_volume(spec),
                        cache_volume(),
                        { "name": "data", "persistentVolumeClaim": { "claimName": b.data_pvc } },
                    ],
                },
            },
        },
    });
    Ok(vec![Manifest::new("job.yaml", job)])
}

// ---------------------------------------------------------------------------------------------
// train

fn train(spec: &DeploySpec, t: &TrainSpec) -> Result<Vec<Manifest>, DeployError> {
    if t.command.is_empty() {
        return Err(DeployError::invalid("--train-command", "is empty"));
    }
    if t.slices == 0 {
        return Err(DeployError::invalid("--slices", "must be at least 1"));
    }
    let p = &spec.placement;
    let mut env = vec![cache_env()];
    if t.slices > 1 {
        // Multislice: libtpu's DCN coordination (megascale) finds slice 0's first host.
        env.push(json!({
            "name": "MEGASCALE_COORDINATOR_ADDRESS",
            "value": format!("{}-slice-0-0.{}", spec.name, spec.name),
        }));
        env.push(json!({ "name": "MEGASCALE_NUM_SLICES", "value": t.slices.to_string() }));
        env.push(json!({
            "name": "MEGASCALE_SLICE_ID",
            "valueFrom": { "fieldRef": { "fieldPath": "metadata.annotations['jobset.sigs.k8s.io/job-index']" } },
        }));
    }
    let jobset = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": metadata(
            spec,
            "train",
            Some(json!({ "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool" })),
        ),
        "spec": {
            // Pods get stable host names NAME-slice-J-I.NAME: GKE's TPU webhook turns them into
            // TPU_WORKER_HOSTNAMES / TPU_WORKER_ID for libtpu.
            "network": { "enableDNSHostnames": true },
            "failurePolicy": { "maxRestarts": 3 },
            "replicatedJobs": [{
                "name": "slice",
                "replicas": t.slices,
                "template": {
                    "spec": {
                        "parallelism": p.pods,
                        "completions": p.pods,
                        "completionMode": "Indexed",
                        "backoffLimit": 0,
                        "template": {
                            "metadata": { "labels": labels(spec, "train") },
                            "spec": {
                                "restartPolicy": "Never",
                                "nodeSelector": node_selector(p),
                                "tolerations": tolerations(),
                                "containers": [{
                                    "name": "train",
                                    "image": spec.image,
                                    "command": t.command,
                                    "env": env,
                                    "ports": [{ "name": "coordinator", "containerPort": 8471 }],
                                    "resources": tpu_resources(p),
                                    "volumeMounts": base_mounts(),
                                }],
                                "volumes": [models_volume(spec), cache_volume()],
                            },
                        },
                    },
                },
            }],
        },
    });
    Ok(vec![Manifest::new("jobset.yaml", jobset)])
}

#[cfg(test)]
mod tests {
    #[test]
    fn derived_names_pass_the_check() {
        let long = "a".repeat(60);
        for raw in ["ResNet50_v2", "1st model", "---", long.as_str(), "ocr_rec"] {
            let n = super::name_from(raw);
            assert!(super::check_name("--name", &n).is_ok(), "{raw:?} -> {n:?}");
        }
        assert_eq!(super::name_from("ResNet50_v2"), "tpuport-resnet50-v2");
        assert_eq!(super::name_from("1st model"), "tpuport-m1st-model");
    }
}
