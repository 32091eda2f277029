//! Each plugin found, loaded and asked for a client.

use tpuport_pjrt::{Client, ClientOptions, Found};

use crate::{Observer, PluginReport};

/// What `found` offers: its API version, attributes and extensions when it loads, its
/// StableHLO range, and its platform and devices when it makes a client. A failure is the
/// report's `error`, not an error.
#[must_use]
pub fn probe(found: Found, obs: &dyn Observer) -> PluginReport {
    let mut r = PluginReport::new(found.path.clone(), found.kind, found.source);
    obs.info(&format!("checking {}", found.path.display()));
    let plugin = match tpuport_pjrt::load(&found.path) {
        Ok(pl) => pl,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.info = Some(plugin.info());
    r.stablehlo_range = plugin.stablehlo_range();
    r.stablehlo = plugin
        .stablehlo_range()
        .map(|(lo, hi)| format!("{}.{}.{} .. {}.{}.{}", lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]));
    match Client::new(plugin, &ClientOptions::default()) {
        Ok(c) => {
            r.platform = Some(c.platform_name().to_owned());
            r.platform_version = Some(c.platform_version().to_owned());
            let devs = c.devices();
            r.devices = Some(devs.len());
            for d in devs {
                if let Ok(desc) = d.description()
                    && !r.device_kinds.contains(&desc.kind)
                {
                    r.device_kinds.push(desc.kind);
                }
            }
        }
        Err(e) => r.error = Some(e.to_string()),
    }
    r
}
