//! AUD201: string tensors and string ops.

use tpuport_model::DType;

use super::ctx::{dtype, label};
use super::{Ctx, Rule, Sink};

/// ONNX ops that work on strings.
const STRING_OPS: &[&str] =
    &["StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "CategoryMapper"];

tpuport_codes::documented! {
    /// ## What it finds
    /// String tensors (ONNX `STRING` inputs, outputs, initializers or intermediates) and ops
    /// on strings (`StringNormalizer`, `StringConcat`, `StringSplit`, `RegexFullMatch`,
    /// `CategoryMapper`, string `LabelEncoder`s …).
    ///
    /// ## Why it hurts on TPU
    /// XLA has no string type: a graph holding strings cannot be compiled for TPU at all
    /// (tensorflow/tensorflow#66074). Tokenization and label mapping must happen on the host.
    ///
    /// ## What to do
    /// Split the model: do text preprocessing (tokenizer, vocabulary lookup) on the host or in
    /// the input pipeline and feed integer ids; map output ids back to labels on the host.
    ///
    /// ## References
    /// - tensorflow/tensorflow#66074, tensorflow/tensorflow#101188
    /// - [ONNX StringNormalizer](https://github.com/onnx/onnx/blob/main/docs/Operators.md#StringNormalizer)
    pub(crate) struct StringTensors;
}

impl Rule for StringTensors {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut nodes = Vec::new();
        let mut ops = 0;
        for r in &cx.graphs {
            let g = r.graph;
            for v in g.inputs.iter().chain(&g.outputs) {
                if dtype(g, *v) == Some(DType::String) && r.depth == 0 {
                    nodes.push(g.value(*v).name.clone());
                }
            }
            for n in &g.nodes {
                let strs = n
                    .inputs
                    .iter()
                    .flatten()
                    .chain(&n.outputs)
                    .any(|v| dtype(g, *v) == Some(DType::String));
                if strs || STRING_OPS.contains(&n.op.as_str()) {
                    ops += 1;
                    nodes.push(label(g, n));
                }
            }
        }
        if nodes.is_empty() {
            return;
        }
        sink.emit(
            "String tensors".to_owned(),
            format!("the graph carries strings ({ops} op(s) on strings); XLA has no string type, so this graph cannot compile for TPU"),
            nodes,
            "move tokenization / label mapping to the host or input pipeline and feed integer ids",
        );
    }
}
