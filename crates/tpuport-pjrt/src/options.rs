//! Compile options (`xla.CompileOptionsProto`, hand-written prost structs for the few fields
//! tpuport sets) and client create options.
//!
//! Field numbers follow XLA's `compile_options.proto` and `xla_data.proto`; fields left at
//! their default are not encoded (proto3), so the bytes equal what protoc-generated types
//! produce for the same values.

use prost::Message;

use crate::named_value::NamedValue;

/// `xla.CompileOptionsProto` (subset).
#[derive(Clone, PartialEq, Message)]
pub struct CompileOptionsProto {
    /// Field 3.
    #[prost(message, optional, tag = "3")]
    pub executable_build_options: Option<ExecutableBuildOptionsProto>,
    /// Field 4.
    #[prost(bool, tag = "4")]
    pub compile_portable_executable: bool,
    /// Field 7: XLA flags by name, applied to the compile's debug options (what `XLA_FLAGS`
    /// sets process-wide). Ordered, so the encoding (a cache key) is deterministic.
    #[prost(btree_map = "string, message", tag = "7")]
    pub env_option_overrides: std::collections::BTreeMap<String, OptionOverrideProto>,
}

/// `xla.OptionOverrideProto`: one value of a oneof; tpuport sets strings only.
#[derive(Clone, PartialEq, Message)]
pub struct OptionOverrideProto {
    /// Field 1 (`string_field`).
    #[prost(string, optional, tag = "1")]
    pub string_field: Option<String>,
    /// Field 2 (`bool_field`): boolean flags take their value here, not as a string.
    #[prost(bool, optional, tag = "2")]
    pub bool_field: Option<bool>,
}

impl OptionOverrideProto {
    /// `true`/`false` as a boolean override, anything else as a string.
    fn of(value: &str) -> OptionOverrideProto {
        match value {
            "true" | "false" => {
                OptionOverrideProto { string_field: None, bool_field: Some(value == "true") }
            }
            _ => OptionOverrideProto { string_field: Some(value.to_owned()), bool_field: None },
        }
    }
}

/// `xla.ExecutableBuildOptionsProto` (subset).
#[derive(Clone, PartialEq, Message)]
pub struct ExecutableBuildOptionsProto {
    /// Field 1; -1 lets the runtime choose.
    #[prost(int64, tag = "1")]
    pub device_ordinal: i64,
    /// Field 4.
    #[prost(int64, tag = "4")]
    pub num_replicas: i64,
    /// Field 5.
    #[prost(int64, tag = "5")]
    pub num_partitions: i64,
    /// Field 6.
    #[prost(bool, tag = "6")]
    pub use_spmd_partitioning: bool,
    /// Field 9.
    #[prost(message, optional, tag = "9")]
    pub device_assignment: Option<DeviceAssignmentProto>,
    /// Field 19.
    #[prost(bool, tag = "19")]
    pub use_shardy_partitioner: bool,
}

/// `xla.DeviceAssignmentProto`.
#[derive(Clone, PartialEq, Message)]
pub struct DeviceAssignmentProto {
    /// Field 1.
    #[prost(int32, tag = "1")]
    pub replica_count: i32,
    /// Field 2.
    #[prost(int32, tag = "2")]
    pub computation_count: i32,
    /// Field 3: one entry per computation (partition).
    #[prost(message, repeated, tag = "3")]
    pub computation_devices: Vec<ComputationDevice>,
}

/// `xla.DeviceAssignmentProto.ComputationDevice`.
#[derive(Clone, PartialEq, Message)]
pub struct ComputationDevice {
    /// Field 1 (packed): the device id for each replica.
    #[prost(int64, repeated, tag = "1")]
    pub replica_device_ids: Vec<i64>,
}

/// How a program is to be compiled: replicas, partitions and the partitioner.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// Number of replicas (data-parallel copies); 1 for ordinary programs.
    pub num_replicas: u32,
    /// Number of partitions (SPMD shards); from the module's `mhlo.num_partitions`.
    pub num_partitions: u32,
    /// Run the SPMD partitioner (needed when `num_partitions > 1`).
    pub spmd: bool,
    /// Use the Shardy partitioner (needed for modules carrying `sdy.*` shardings).
    pub shardy: bool,
    /// Explicit device ids, `[partition][replica]`; `None` lets the plugin choose.
    pub device_assignment: Option<Vec<Vec<i64>>>,
    /// Compile without binding to devices.
    pub portable: bool,
    /// XLA flags for this compile, by name without the dashes (`xla_cpu_max_isa` → `AVX2`;
    /// `true`/`false` are sent as booleans).
    pub overrides: Vec<(String, String)>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            num_replicas: 1,
            num_partitions: 1,
            spmd: false,
            shardy: false,
            device_assignment: None,
            portable: false,
            overrides: Vec::new(),
        }
    }
}

impl CompileOptions {
    /// Options for an SPMD program over `n` partitions, one replica, partition `i` on device `i`.
    /// `shardy` selects the Shardy partitioner (also correct for GSPMD modules, which the
    /// plugin then partitions with GSPMD).
    #[must_use]
    pub fn spmd(n: u32, shardy: bool) -> CompileOptions {
        CompileOptions {
            num_partitions: n,
            spmd: n > 1,
            shardy: shardy && n > 1,
            ..CompileOptions::default()
        }
    }

    /// Adds the device assignment `partition i → device i`.
    #[must_use]
    pub fn with_identity_assignment(mut self) -> CompileOptions {
        let parts = i64::from(self.num_partitions);
        let reps = i64::from(self.num_replicas);
        self.device_assignment =
            Some((0..parts).map(|p| (0..reps).map(|r| r * parts + p).collect()).collect());
        self
    }

    /// The protobuf message.
    #[must_use]
    pub fn to_proto(&self) -> CompileOptionsProto {
        let device_assignment =
            self.device_assignment.as_ref().map(|parts| DeviceAssignmentProto {
                replica_count: i32::try_from(self.num_replicas).unwrap_or(i32::MAX),
                computation_count: i32::try_from(parts.len()).unwrap_or(i32::MAX),
                computation_devices: parts
                    .iter()
                    .map(|ids| ComputationDevice { replica_device_ids: ids.clone() })
                    .collect(),
            });
        CompileOptionsProto {
            executable_build_options: Some(ExecutableBuildOptionsProto {
                device_ordinal: -1,
                num_replicas: i64::from(self.num_replicas),
                num_partitions: i64::from(self.num_partitions),
                use_spmd_partitioning: self.spmd,
                device_assignment,
                use_shardy_partitioner: self.shardy,
            }),
            compile_portable_executable: self.portable,
            env_option_overrides: self
                .overrides
                .iter()
                .map(|(k, v)| (k.clone(), OptionOverrideProto::of(v)))
                .collect(),
        }
    }

    /// With the XLA flag `name` set to `value`, unless the options already set it.
    #[must_use]
    pub fn with_override(mut self, name: &str, value: &str) -> CompileOptions {
        if !self.overrides.iter().any(|(k, _)| k == name) {
            self.overrides.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// The serialized `CompileOptionsProto` passed to `PJRT_Client_Compile`.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }

    /// Number of devices one execution uses.
    #[must_use]
    pub fn devices(&self) -> u32 {
        self.num_replicas.saturating_mul(self.num_partitions)
    }
}

/// Options for `PJRT_Client_Create`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientOptions {
    /// Typed create options passed to the plugin as they are.
    pub create_options: Vec<NamedValue>,
    /// Call libtpu's `PJRT_Client_Create` even when no TPU device nodes are visible (by
    /// default tpuport answers "no TPU devices" at once: libtpu would first retry the GCE
    /// metadata server for minutes).
    pub skip_hardware_check: bool,
}

impl ClientOptions {
    /// Options for the CPU plugin with `n` devices (`cpu_device_count`, typed int64 as the
    /// plugin reads it). Other plugins ignore the option.
    #[must_use]
    pub fn cpu_devices(n: u32) -> ClientOptions {
        ClientOptions {
            create_options: vec![NamedValue::int64("cpu_device_count", i64::from(n))],
            skip_hardware_check: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_device_encoding_is_pinned() {
        let b = CompileOptions::default().encode();
        // executable_build_options { device_ordinal: -1, num_replicas: 1, num_partitions: 1 }
        let want: Vec<u8> =
            [vec![0x1a, 0x0f, 0x08], vec![0xff; 9], vec![0x01, 0x20, 0x01, 0x28, 0x01]].concat();
        assert_eq!(b.len(), 17);
        assert_eq!(b, want);
    }

    #[test]
    fn spmd_encoding_is_pinned() {
        let b = CompileOptions::spmd(8, false).encode();
        let want: Vec<u8> =
            [vec![0x1a, 0x11, 0x08], vec![0xff; 9], vec![0x01, 0x20, 0x01, 0x28, 0x08, 0x30, 0x01]]
                .concat();
        assert_eq!(b.len(), 19);
        assert_eq!(b, want);
    }

    #[test]
    fn shardy_with_assignment_encoding_is_pinned() {
        let b = CompileOptions::spmd(8, true).with_identity_assignment().encode();
        assert_eq!(b.len(), 68);
        let mut da = vec![0x4a, 0x2c, 0x08, 0x01, 0x10, 0x08];
        for i in 0..8u8 {
            da.extend_from_slice(&[0x1a, 0x03, 0x0a, 0x01, i]);
        }
        let want: Vec<u8> = [
            vec![0x1a, 0x42, 0x08],
            vec![0xff; 9],
            vec![0x01, 0x20, 0x01, 0x28, 0x08, 0x30, 0x01],
            da,
            vec![0x98, 0x01, 0x01],
        ]
        .concat();
        assert_eq!(b, want);
    }

    #[test]
    fn decodes_back() {
        let o = CompileOptions::spmd(4, true).with_identity_assignment();
        let p = CompileOptionsProto::decode(o.encode().as_slice()).ok();
        assert_eq!(p, Some(o.to_proto()));
    }
}
