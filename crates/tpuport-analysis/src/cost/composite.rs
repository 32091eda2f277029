//! Composite ops, expanded to the elementwise work XLA does for them (per output element `n`):
//!
//! | op | FLOPs | transcendentals |
//! |---|---|---|
//! | Softmax / LogSoftmax | `4n` | `n` (`2n` for LogSoftmax) |
//! | LayerNormalization, RMS / group / instance norms | `8n` | one rsqrt per normalized row |
//! | BatchNormalization (inference) | `2n` | 0 |
//! | `batch_norm_training` | `7n` | 0 |
//! | Gelu, FastGelu, BiasGelu | `4n` | `n` |
//! | HardSigmoid, HardSwish, ThresholdedRelu | `3n` | 0 |
//! | Selu, Elu, Celu, Mish, SiLU, Swish | `3n` | `n` |

use super::{OpClass, OpCost, Site, int_attr, sat};

pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Composite;
    let Some(e) = s.out_elems else {
        c.not_static();
        return;
    };
    let per = |k: u64| e.saturating_mul(k);
    match s.op.as_str() {
        "softmax" | "logsoftmax" => {
            c.flops = per(4);
            c.transcendentals = if s.op == "logsoftmax" { per(2) } else { e };
        }
        "layernormalization"
        | "rmsnormalization"
        | "simplifiedlayernormalization"
        | "skiplayernormalization"
        | "groupnormalization"
        | "instancenormalization" => {
            let Some(shape) = s.in_shape(0) else {
                c.not_static();
                return;
            };
            let axis = int_attr(s.n, "axis").unwrap_or(-1);
            let rank = i64::try_from(shape.len()).unwrap_or(0);
            let a = if axis < 0 { axis.saturating_add(rank) } else { axis };
            let rows = sat(&shape[..usize::try_from(a.max(0)).unwrap_or(0).min(shape.len())]);
            c.flops = per(8);
            c.transcendentals = rows;
        }
        "batchnormalization" | "batch_norm_inference" => c.flops = per(2),
        "batch_norm_training" => c.flops = per(7),
        "gelu" | "fastgelu" | "biasgelu" => {
            c.flops = per(4);
            c.transcendentals = e;
        }
        // hardsigmoid, hardswish, thresholdedrelu, selu, elu, celu, mish, silu, swish
        _ => {
            c.flops = per(3);
            if !matches!(s.op.as_str(), "hardsigmoid" | "hardswish" | "thresholdedrelu") {
                c.transcendentals = e;
            }
        }
    }
}
