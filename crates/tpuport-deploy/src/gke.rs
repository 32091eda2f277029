//! How a TPU slice is asked for on GKE: node labels, chips per pod, pods per slice.
//!
//! Sources (`serving-anchors.md` §4, `tpu-hardware.md` §5–6):
//! - `cloud.google.com/gke-tpu-accelerator` values: `tpu-v5-lite-podslice` (v5e, the
//!   ai-on-gke JetStream and ResNet samples), `tpu-v5p-slice`, `tpu-v6e-slice`, `tpu7x`
//!   (seen in third-party generator tests, low confidence), `tpu-v4-podslice` (GKE TPU docs).
//! - `cloud.google.com/gke-tpu-topology` is the topology as written in slice names (`2x4`).
//! - `google.com/tpu` is requested per pod and equals the chips of the node (VM) it lands on.
//! - Single-host slices are one node with every chip (v5e `1x1`, `2x2`, `2x4`: 1, 4, 8).
//!   Multi-host slices on GKE use 4-chip VMs on every generation: v5e/v6e multi-host node
//!   pools are `ct5lp-hightpu-4t` / `ct6e-standard-4t` (the LWS TPU example runs a v5e `4x4`
//!   as `size: 4` with `google.com/tpu: "4"`; `tpu-hardware.md` §6 gives v6e `4x4` as 4 VMs),
//!   and v4, v5p and TPU7x hosts have 4 chips.
//! - TPU nodes carry a `google.com/tpu` `NoSchedule` taint (§4 quotes it with value `true`,
//!   third party); the manifests tolerate the key with `operator: Exists`, whatever its value.

use serde::Serialize;
use tpuport_hw::Slice;

use crate::error::DeployError;

/// Node label for the TPU generation.
pub const ACCELERATOR_LABEL: &str = "cloud.google.com/gke-tpu-accelerator";
/// Node label for the slice topology.
pub const TOPOLOGY_LABEL: &str = "cloud.google.com/gke-tpu-topology";
/// Extended resource for TPU chips.
pub const TPU_RESOURCE: &str = "google.com/tpu";
/// Chips per VM in GKE multi-host node pools.
const MULTI_HOST_CHIPS_PER_VM: u32 = 4;

/// Where a slice's pods go and how many chips each asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// Slice name as given (`v5e-16`).
    pub slice: String,
    /// Official accelerator type (`v5litepod-16`).
    pub accelerator_type: String,
    /// `cloud.google.com/gke-tpu-accelerator` value.
    pub accelerator: String,
    /// `cloud.google.com/gke-tpu-topology` value.
    pub topology: String,
    /// Chips in the slice.
    pub chips: u32,
    /// `google.com/tpu` per pod.
    pub chips_per_pod: u32,
    /// Pods (nodes) per slice.
    pub pods: u32,
}

impl Placement {
    /// True when one slice spans several pods (LeaderWorkerSet / JobSet territory).
    #[must_use]
    pub fn multi_host(&self) -> bool {
        self.pods > 1
    }
}

/// The GKE accelerator label of a catalog chip id, where known.
#[must_use]
pub fn accelerator_label(chip: &str) -> Option<&'static str> {
    Some(match chip {
        "v4" => "tpu-v4-podslice",
        "v5e" => "tpu-v5-lite-podslice",
        "v5p" => "tpu-v5p-slice",
        "v6e" => "tpu-v6e-slice",
        "tpu7x" => "tpu7x",
        _ => return None,
    })
}

/// The placement of `slice` (named `name` by the user).
///
/// # Errors
/// [`DeployError::Unsupported`] for a generation GKE has no label for here, or a multi-host
/// slice whose chips do not split into 4-chip VMs.
pub fn placement(name: &str, slice: &Slice) -> Result<Placement, DeployError> {
    let accelerator = accelerator_label(&slice.chip).ok_or_else(|| {
        DeployError::Unsupported(format!(
            "{name}: no GKE node label is known for TPU `{}` (known: v4, v5e, v5p, v6e, tpu7x)",
            slice.chip
        ))
    })?;
    let (chips_per_pod, pods) = if slice.multi_host() {
        if !slice.chips.is_multiple_of(MULTI_HOST_CHIPS_PER_VM) {
            return Err(DeployError::Unsupported(format!(
                "{name}: {} chips do not split into {MULTI_HOST_CHIPS_PER_VM}-chip GKE nodes",
                slice.chips
            )));
        }
        (MULTI_HOST_CHIPS_PER_VM, slice.chips / MULTI_HOST_CHIPS_PER_VM)
    } else {
        (slice.chips, 1)
    };
    Ok(Placement {
        slice: name.to_owned(),
        accelerator_type: slice.accelerator_type.clone(),
        accelerator: accelerator.to_owned(),
        topology: slice.topology(),
        chips: slice.chips,
        chips_per_pod,
        pods,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn chips_per_pod_follow_the_gke_node_shapes() {
        let cat = tpuport_hw::Catalog::builtin();
        let p = |n: &str| placement(n, &cat.slice(n).unwrap()).unwrap();
        let cases = [
            ("v5e-1", "1x1", 1, 1),
            ("v5e-4", "2x2", 4, 1),
            ("v5e-8", "2x4", 8, 1),
            ("v5e-16", "4x4", 4, 4),
            ("v5p-8", "2x2x1", 4, 1),
            ("v5p-16", "2x2x2", 4, 2),
            ("v6e-16", "4x4", 4, 4),
        ];
        for (name, topo, per_pod, pods) in cases {
            let got = p(name);
            assert_eq!(
                (got.topology.as_str(), got.chips_per_pod, got.pods),
                (topo, per_pod, pods),
                "{name}"
            );
        }
        assert_eq!(p("v5e-8").accelerator, "tpu-v5-lite-podslice");
        assert_eq!(p("v5p-8").accelerator, "tpu-v5p-slice");
    }
}
