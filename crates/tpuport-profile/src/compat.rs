//! Known-good framework version pairs.
