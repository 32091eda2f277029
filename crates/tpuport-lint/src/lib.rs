//! tpuport-lint: being written.
