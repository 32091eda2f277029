//! [`KeepAlive`]: device buffers and executables held until the holder is dropped.

use crate::buffer::Buffer;
use crate::executable::LoadedExecutable;

/// Holds device buffers and executables until it is dropped, so that no buffer of one
/// execution is freed (and its device memory reused) before a later execution of the same
/// batch of work has run.
///
/// Why it exists: `validate` once saw, with xla-cpu-pjrt 0.0.1, a later execution compute with
/// the previous sample's weights after the earlier sample's input buffers were freed and new
/// ones uploaded ("1 run in 3 with `--random 2` on mlp_b128"). On the current binding layer
/// (uploads with `kImmutableUntilTransferCompletes` awaiting `done_with_host_buffer`, every
/// execution awaiting its device-complete events, every transfer its event) this did not
/// reproduce: not with freed and re-uploaded inputs on one executable (the
/// `tests/buffer_reuse.rs` pattern, 12 trials of 4 samples, bitwise equal to the held-buffer
/// outputs), not with validate's own sequence (emulated candidate then reference module, each
/// executable and every sample's buffers freed; 12 trials), and not with the `validate` binary
/// freeing buffers and executables (44 runs, fresh and warm executable cache, `--no-cache`,
/// four processes at once: one result). On 2026-12-03, on an AMD EPYC host with AVX-512, the
/// guard tests (`tests/buffer_reuse.rs`, `tests/stale_inputs.rs`) failed every time with
/// values matching no sample, with held and freed buffers alike, and passed with
/// `--xla_cpu_max_isa=AVX2`. On 2026-12-05, on an AMD EPYC host with AVX2 only, they failed
/// every run again (freed buffers wrong, held ones right), with or without that cap, and
/// passed with XNNPACK off. CPU compiles now carry both workarounds
/// ([`crate::Client::effective_options`]); the old report was probably the same fault. Verbs that run a bounded set of executions (validate's samples, a
/// bench sweep) still hold their buffers here; a server cannot, and relies on the guard tests.
#[derive(Debug, Default)]
pub struct KeepAlive {
    buffers: Vec<Buffer>,
    executables: Vec<LoadedExecutable>,
}

impl KeepAlive {
    /// Holds buffers (e.g. one execution's `[device][argument]` lists, flattened).
    pub fn buffers(&mut self, bufs: impl IntoIterator<Item = Buffer>) {
        self.buffers.extend(bufs);
    }

    /// Holds an executable.
    pub fn executable(&mut self, exe: LoadedExecutable) {
        self.executables.push(exe);
    }

    /// Number of buffers held.
    #[must_use]
    pub fn held_buffers(&self) -> usize {
        self.buffers.len()
    }
}
