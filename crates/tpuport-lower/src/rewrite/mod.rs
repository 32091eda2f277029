//! StableHLO → StableHLO rewrites (owned by the validation work; see the crate docs).
