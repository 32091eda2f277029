//! tpuport-pjrt: being written.
