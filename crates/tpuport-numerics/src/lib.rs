//! Numerics parity: comparison metrics between two tensors, the tolerance policy that turns
//! them into a verdict, and the bisection driver that finds the first divergent op. Pure
//! computation over [`tpuport_model::HostTensor`]s: no PJRT, no printing.
