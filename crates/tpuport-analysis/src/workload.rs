//! What the model is going to be used for: the workload kind and the training optimizer. Shared
//! by the cost/memory passes and the support findings.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// What the model will run as on the TPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Forward pass only.
    #[default]
    Infer,
    /// Full training: forward, backward, optimizer update of every parameter.
    Train,
    /// Fine-tuning: like training (all parameters trainable by default).
    Finetune,
}

impl Workload {
    /// Every variant, in CLI order.
    pub const ALL: [Workload; 3] = [Workload::Infer, Workload::Train, Workload::Finetune];

    /// The CLI / JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Workload::Infer => "infer",
            Workload::Train => "train",
            Workload::Finetune => "finetune",
        }
    }

    /// True when a backward pass and optimizer state are involved.
    pub fn is_training(self) -> bool {
        !matches!(self, Workload::Infer)
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "infer" | "inference" => Ok(Workload::Infer),
            "train" | "training" => Ok(Workload::Train),
            "finetune" | "fine-tune" | "ft" => Ok(Workload::Finetune),
            other => Err(format!("unknown workload `{other}` (expected infer, train or finetune)")),
        }
    }
}

/// The optimizer used for training; decides the per-parameter optimizer state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Plain SGD: no state.
    Sgd,
    /// SGD with momentum: one buffer per parameter.
    SgdMomentum,
    /// Adam: first and second moments per parameter.
    Adam,
    /// AdamW (the default): same state as Adam.
    #[default]
    AdamW,
    /// Adafactor: factored second moment (row + column vectors for matrices), no first moment.
    Adafactor,
}

impl Optimizer {
    /// Every variant, in CLI order.
    pub const ALL: [Optimizer; 5] = [
        Optimizer::Sgd,
        Optimizer::SgdMomentum,
        Optimizer::Adam,
        Optimizer::AdamW,
        Optimizer::Adafactor,
    ];

    /// The CLI / JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Optimizer::Sgd => "sgd",
            Optimizer::SgdMomentum => "sgdmomentum",
            Optimizer::Adam => "adam",
            Optimizer::AdamW => "adamw",
            Optimizer::Adafactor => "adafactor",
        }
    }

    /// Number of full-size state tensors per parameter (Adafactor's factored state is counted
    /// separately by the memory pass: it is a row and a column vector, not a full tensor).
    pub fn full_state_slots(self) -> u64 {
        match self {
            Optimizer::Sgd | Optimizer::Adafactor => 0,
            Optimizer::SgdMomentum => 1,
            Optimizer::Adam | Optimizer::AdamW => 2,
        }
    }
}

impl fmt::Display for Optimizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Optimizer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "sgd" => Ok(Optimizer::Sgd),
            "sgdmomentum" | "momentum" => Ok(Optimizer::SgdMomentum),
            "adam" => Ok(Optimizer::Adam),
            "adamw" => Ok(Optimizer::AdamW),
            "adafactor" => Ok(Optimizer::Adafactor),
            other => Err(format!(
                "unknown optimizer `{other}` (expected sgd, sgd-momentum, adam, adamw or adafactor)"
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parse_roundtrip() {
        for w in Workload::ALL {
            assert_eq!(w.as_str().parse::<Workload>().unwrap(), w);
        }
        for o in Optimizer::ALL {
            assert_eq!(o.as_str().parse::<Optimizer>().unwrap(), o);
        }
        assert!("bogus".parse::<Workload>().is_err());
        assert_eq!(Workload::default(), Workload::Infer);
        assert_eq!(serde_json::to_string(&Workload::Finetune).unwrap(), "\"finetune\"");
    }
}
