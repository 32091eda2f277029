//! tpuport-hw: being written.
