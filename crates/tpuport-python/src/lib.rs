//! tpuport-python: being written.
