//! The model's own hints for the size of its unbound dimensions: what an exporter recorded about
//! the shape it was exported at, offered as the `--dim` / `--input-shape` to give.
//!
//! What real exporters write (read from their export code and from files they wrote):
//! - **Ultralytics** (`model.export(format="onnx", dynamic=True)`) names the input `images`
//!   `[batch, 3, height, width]` and writes `metadata_props` `imgsz = "[640, 640]"` (the
//!   export size, height then width), `batch = "1"`, `stride`, `task`, `names`, `channels`.
//! - Other tools write the same idea under `img_size`, `image_size`, `input_size` (one size
//!   for a square image, or `[H, W]`) or `tiles_size` (QGIS Deepness), or a full shape under
//!   `input_shape` / `shape` / `<input>_shape` (`"1,3,224,224"`, `"[1, 3, 224, 224]"`).
//! - Doc strings of the model, its graph or an input sometimes state the shape
//!   (`input: float32[1, 3, 640, 640]`, `1x3x224x224`): a list of as many sizes as the input
//!   has dimensions, equal to it wherever the input's size is known, is taken.
//! - **paddle2onnx** names dims `p2o.DynamicDimension.N` (or leaves them unnamed) and records
//!   no size; the **torch.onnx dynamo** exporter records the ranges of `torch.export`'s
//!   internal symbols (`pkg.torch.export.ExportedProgram.range_constraints`, keyed `s16`, not
//!   by the names the file gives its dims) and no example shape; `tf2onnx` records neither.
//!   For them no hint is found, and the report says so.

use tpuport_model::{Dim, Model, Shape};

/// Metadata keys holding an image size: one size (square) or `[H, W]`.
const SPATIAL_KEYS: &[&str] = &["imgsz", "img_size", "image_size", "input_size", "tiles_size"];

/// Metadata keys holding a full input shape (also `<input>_shape` and `<input>.shape`).
const SHAPE_KEYS: &[&str] = &["input_shape", "shape"];

/// Hinted sizes for some (input, axis) pairs, and where they come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Hints {
    /// `(input index, axis, size)`.
    pub(super) sizes: Vec<(usize, usize, u64)>,
    /// Where each distinct source is (`metadata_props imgsz = [640, 640]`), in finding order.
    pub(super) sources: Vec<String>,
}

impl Hints {
    /// The hinted size of `input`'s `axis`.
    pub(super) fn size(&self, input: usize, axis: usize) -> Option<u64> {
        self.sizes.iter().find(|(i, a, _)| *i == input && *a == axis).map(|(_, _, s)| *s)
    }

    fn add(&mut self, input: usize, axis: usize, size: u64, source: &str) -> bool {
        if size == 0 || self.size(input, axis).is_some() {
            return false;
        }
        self.sizes.push((input, axis, size));
        if !self.sources.iter().any(|s| s == source) {
            self.sources.push(source.to_owned());
        }
        true
    }
}

/// The hints for `inputs` (name and shape, in the graph's order): only axes whose size is
/// symbolic get one.
pub(super) fn find(model: &Model, inputs: &[(String, Shape)]) -> Hints {
    let mut h = Hints::default();
    let props = &model.metadata.properties;
    // Full shapes first: they say every axis.
    for (i, (name, shape)) in inputs.iter().enumerate() {
        let keys = [format!("{name}_shape"), format!("{name}.shape")];
        let named = props.iter().filter(|(k, _)| keys.contains(k));
        let generic = props.iter().filter(|(k, _)| SHAPE_KEYS.contains(&k.as_str()));
        for (k, v) in named.chain(generic) {
            if let Some(sizes) = int_list(v).filter(|s| fits(shape, s)) {
                let src = format!("metadata_props {k} = {}", v.trim());
                for (axis, &size) in sizes.iter().enumerate() {
                    if shape.0[axis].known().is_none() {
                        h.add(i, axis, size, &src);
                    }
                }
            }
        }
    }
    // Image sizes: height and width of an image input (NCHW, or NHWC).
    for (k, v) in props.iter().filter(|(k, _)| SPATIAL_KEYS.contains(&k.as_str())) {
        let Some(sizes) = int_list(v) else { continue };
        let (hh, ww) = match sizes.as_slice() {
            [s] => (*s, *s),
            [a, b] => (*a, *b),
            _ => continue,
        };
        let src = format!("metadata_props {k} = {}", v.trim());
        for (i, (_, shape)) in inputs.iter().enumerate() {
            if let Some((ah, aw)) = spatial_axes(shape) {
                for (axis, size) in [(ah, hh), (aw, ww)] {
                    if shape.0[axis].known().is_none() {
                        h.add(i, axis, size, &src);
                    }
                }
            }
        }
    }
    // The export batch (Ultralytics' `batch`), for a leading dim left symbolic.
    if let Some((k, v)) = props.iter().find(|(k, _)| k == "batch")
        && let Some(&[b]) = int_list(v).as_deref()
    {
        let src = format!("metadata_props {k} = {}", v.trim());
        for (i, (_, shape)) in inputs.iter().enumerate() {
            if shape.rank() >= 2 && shape.0[0].known().is_none() {
                h.add(i, 0, b, &src);
            }
        }
    }
    // Doc strings: the input's own first, then the model's and the graph's.
    for (i, (name, shape)) in inputs.iter().enumerate() {
        let own = format!("input {name}");
        let docs = model.metadata.docs.iter();
        let ordered = docs
            .clone()
            .filter(|(at, _)| *at == own)
            .chain(docs.filter(|(at, _)| !at.starts_with("input ")));
        for (at, text) in ordered {
            if let Some(sizes) = shape_literals(text).into_iter().find(|s| fits(shape, s)) {
                let shown: Vec<String> = sizes.iter().map(u64::to_string).collect();
                let src = format!("the {at} doc string ({})", shown.join("x"));
                for (axis, &size) in sizes.iter().enumerate() {
                    if shape.0[axis].known().is_none() {
                        h.add(i, axis, size, &src);
                    }
                }
            }
        }
    }
    h
}

/// The height and width axes of an image input: rank 4 with a known channel count of at most
/// 4 at axis 1 (NCHW) or axis 3 (NHWC).
fn spatial_axes(shape: &Shape) -> Option<(usize, usize)> {
    if shape.rank() != 4 {
        return None;
    }
    let channels = |d: &Dim| d.known().is_some_and(|c| (1..=4).contains(&c));
    if channels(&shape.0[1]) {
        Some((2, 3))
    } else if channels(&shape.0[3]) {
        Some((1, 2))
    } else {
        None
    }
}

/// Whether `sizes` can be `shape`: the same rank, no zero, and equal wherever the shape's size
/// is known, except the leading (batch) axis, which `--batch` may have bound to another size
/// than the export's.
fn fits(shape: &Shape, sizes: &[u64]) -> bool {
    sizes.len() == shape.rank()
        && sizes.iter().all(|&s| s > 0)
        && shape
            .0
            .iter()
            .zip(sizes)
            .enumerate()
            .all(|(axis, (d, s))| axis == 0 || d.known().is_none_or(|k| k == *s))
}

/// A metadata value that is only a list of sizes: `640`, `[640, 640]`, `(1, 3, 224, 224)`,
/// `1,3,224,224`, `640x640`. `None` for anything else (names, dicts, negative numbers).
fn int_list(v: &str) -> Option<Vec<u64>> {
    let v = v.trim();
    if v.is_empty()
        || !v.chars().all(|c| c.is_ascii_digit() || " ,x[]()".contains(c))
        || !v.chars().any(|c| c.is_ascii_digit())
    {
        return None;
    }
    v.split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<u64>().ok())
        .collect()
}

/// The shape-like lists in a text: bracketed lists of two or more sizes (`[1, 3, 640, 640]`,
/// `(1,3,640,640)`) and `x`-joined runs (`1x3x640x640`).
fn shape_literals(text: &str) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'[' || c == b'(' {
            let close = if c == b'[' { b']' } else { b')' };
            if let Some(len) = b[i + 1..].iter().position(|&x| x == close) {
                let inner = &text[i + 1..i + 1 + len];
                if inner.contains(',')
                    && let Some(v) = int_list(inner)
                {
                    out.push(v);
                }
            }
        } else if c.is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let end = b[i..]
                .iter()
                .position(|x| !(x.is_ascii_digit() || *x == b'x'))
                .map_or(b.len(), |p| i + p);
            let run = text[i..end].trim_end_matches('x');
            if run.contains('x')
                && let Some(v) = int_list(run)
            {
                out.push(v);
            }
            i = end;
            continue;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tpuport_model::ModelFormat;

    use super::*;

    fn shape(dims: &[&str]) -> Shape {
        Shape(
            dims.iter()
                .map(|d| d.parse::<u64>().map_or_else(|_| Dim::Sym((*d).to_owned()), Dim::Known))
                .collect(),
        )
    }

    fn model(props: &[(&str, &str)], docs: &[(&str, &str)]) -> Model {
        let mut m = Model::empty(ModelFormat::Onnx);
        let own = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
        };
        m.metadata.properties = own(props);
        m.metadata.docs = own(docs);
        m
    }

    /// The keys and values Ultralytics' ONNX export writes (`exporter.py`: `str(v)` of each).
    #[test]
    fn ultralytics_imgsz_gives_height_and_width() {
        let m = model(
            &[
                ("description", "Ultralytics YOLOv8n model trained on coco.yaml"),
                ("stride", "32"),
                ("task", "detect"),
                ("batch", "1"),
                ("imgsz", "[480, 640]"),
                ("names", "{0: 'person', 1: 'bicycle'}"),
                ("channels", "3"),
            ],
            &[],
        );
        let inputs = [("images".to_owned(), shape(&["8", "3", "height", "width"]))];
        let h = find(&m, &inputs);
        assert_eq!(h.sizes, vec![(0, 2, 480), (0, 3, 640)]);
        assert_eq!(h.sources, vec!["metadata_props imgsz = [480, 640]".to_owned()]);
        // The batch too, when it is left symbolic.
        let inputs = [("images".to_owned(), shape(&["batch", "3", "height", "width"]))];
        assert_eq!(find(&m, &inputs).size(0, 0), Some(1));
    }

    #[test]
    fn full_shapes_square_sizes_and_nhwc() {
        let m = model(&[("input_shape", "1,3,224,224")], &[]);
        let h = find(&m, &[("x".to_owned(), shape(&["N", "3", "?", "?"]))]);
        assert_eq!(h.sizes, vec![(0, 0, 1), (0, 2, 224), (0, 3, 224)]);
        // A full shape that contradicts a known size is not this input's.
        assert!(find(&m, &[("x".to_owned(), shape(&["N", "4", "?", "?"]))]).sizes.is_empty());
        let m = model(&[("img_size", "512")], &[]);
        let h = find(&m, &[("x".to_owned(), shape(&["1", "h", "w", "3"]))]);
        assert_eq!(h.sizes, vec![(0, 1, 512), (0, 2, 512)]);
        // Names and dicts are not sizes.
        let m = model(&[("imgsz", "large"), ("character", "a\nb")], &[]);
        assert!(find(&m, &[("x".to_owned(), shape(&["1", "3", "h", "w"]))]).sizes.is_empty());
    }

    #[test]
    fn doc_strings_with_a_shape_of_the_input_rank() {
        let m = model(
            &[],
            &[(
                "model",
                "Detector (opset 17). Exported at 2x5 tiles; input float32[1, 3, 736, 1280].",
            )],
        );
        let h = find(&m, &[("x".to_owned(), shape(&["8", "3", "H", "W"]))]);
        assert_eq!(h.sizes, vec![(0, 2, 736), (0, 3, 1280)]);
        assert_eq!(h.sources, vec!["the model doc string (1x3x736x1280)".to_owned()]);
        let m = model(&[], &[("input x", "images, 1x3x320x320 in [0, 1]")]);
        let h = find(&m, &[("x".to_owned(), shape(&["8", "3", "H", "W"]))]);
        assert_eq!(h.sizes, vec![(0, 2, 320), (0, 3, 320)]);
        assert_eq!(shape_literals("v2x3 (a, b) [1,2] 4x5x"), vec![vec![1, 2], vec![4, 5]]);
    }

    #[test]
    fn no_hint_in_a_paddle2onnx_file() {
        // rapidocr's PP-OCRv4 det: no metadata; the rec model records its character table.
        let m = model(&[("character", "'\n1\n2")], &[]);
        let inputs = [(
            "x".to_owned(),
            shape(&["8", "3", "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"]),
        )];
        assert_eq!(find(&m, &inputs), Hints::default());
    }
}
