//! One case: read its test data, import with the input shapes bound, lower (binding graph
//! inputs that an op needs at lowering time), compile, run and compare.

use tpuport_formats::lowered::{self, ArgBinding};
use tpuport_formats::tensors::{self, BindProblem, Entry, Key};
use tpuport_formats::{ImportOptions, Limits};
use tpuport_lower::LowerError;
use tpuport_lower::onnx::{LowerOptions, lower_with_values};
use tpuport_model::{HostTensor, Model, Shape};
use tpuport_pjrt::{Client, CompileOptions, Program};

use super::{Case, Outcome, compare};

/// Why a case did not pass.
#[derive(Debug)]
pub(super) struct Stop {
    pub(super) outcome: Outcome,
    pub(super) stage: &'static str,
    pub(super) reason: String,
}

fn stop(outcome: Outcome, stage: &'static str, reason: impl ToString) -> Stop {
    Stop { outcome, stage, reason: reason.to_string() }
}

pub(super) fn run_case(c: &Case, client: &Client, bound: &mut Vec<String>) -> Result<(), Stop> {
    let nontensor =
        c.meta.inputs.iter().chain(&c.meta.outputs).find(|v| v.kind != "tensor_type").map(|v| {
            format!("{} is a {} value, not a tensor", v.name, v.kind.trim_end_matches("_type"))
        });
    if let Some(why) = nontensor {
        return Err(stop(Outcome::Unsupported, "data", why));
    }
    let ds = c.dir.join("test_data_set_0");
    let limits = Limits::default();
    let read_all = |prefix: &str| -> Result<Vec<HostTensor>, Stop> {
        let mut v = Vec::new();
        loop {
            let f = ds.join(format!("{prefix}_{}.pb", v.len()));
            if !f.is_file() {
                return Ok(v);
            }
            v.push(tpuport_formats::onnx::read_tensor_pb(&f, &limits).map_err(|e| {
                let o = match e {
                    tpuport_formats::FormatError::Unsupported { .. } => Outcome::Unsupported,
                    _ => Outcome::Error,
                };
                stop(o, "data", e)
            })?);
        }
    };
    let inputs = read_all("input")?;
    let expected = read_all("output")?;
    let model_path = c.dir.join("model.onnx");
    // The .pb files follow the ONNX graph's input order, which case.json records; without it,
    // the importer's caller-provided inputs (same order, initializers excluded).
    let names: Vec<String> = if c.meta.inputs.is_empty() {
        let m = tpuport_formats::open(&model_path, &ImportOptions::default())
            .map_err(|e| stop(Outcome::Error, "import", e))?;
        m.graph.inputs.iter().map(|v| m.graph.value(*v).name.clone()).collect()
    } else {
        c.meta.inputs.iter().map(|v| v.name.clone()).collect()
    };
    if names.len() < inputs.len() {
        return Err(stop(
            Outcome::Error,
            "data",
            format!("{} input files but the model has {} inputs", inputs.len(), names.len()),
        ));
    }
    let mut opts = ImportOptions::default();
    for (n, t) in names.iter().zip(&inputs) {
        opts.input_shapes.insert(n.clone(), Shape::fixed(&t.shape));
    }
    let model =
        tpuport_formats::open(&model_path, &opts).map_err(|e| stop(Outcome::Error, "import", e))?;
    let named: Vec<(&str, &HostTensor)> = names.iter().map(String::as_str).zip(&inputs).collect();
    // A static-shape lowering needs shape-like operands (axes, target shapes, pads, slice
    // bounds) at lowering time; the node cases often pass them as graph inputs. When the
    // lowering names such a graph input, its test value is bound for lowering and the case is
    // lowered again; the case's result records which inputs were bound.
    let mut values: Vec<(String, HostTensor)> = Vec::new();
    let lowered = loop {
        match lower_with_values(&model, &LowerOptions::default(), &values) {
            Ok(l) => break l,
            Err(e) => {
                let graph_input =
                    |v: &str| model.graph.inputs.iter().any(|&id| model.graph.value(id).name == v);
                let bindable = match &e {
                    LowerError::NeedsHostValue { value, .. }
                        if graph_input(value) && !values.iter().any(|(n, _)| n == value) =>
                    {
                        named
                            .iter()
                            .find(|(n, _)| n == value)
                            .map(|(_, t)| (value.clone(), (*t).clone()))
                    }
                    _ => None,
                };
                match bindable {
                    Some((name, t)) => {
                        bound.push(name.clone());
                        values.push((name, t));
                    }
                    None if e.is_unsupported() => {
                        return Err(stop(Outcome::Unsupported, "lower", e));
                    }
                    None => return Err(stop(Outcome::Error, "lower", e)),
                }
            }
        }
    };
    let tol = (c.meta.rtol.unwrap_or(1e-3), c.meta.atol.unwrap_or(1e-7));
    run_lowered(client, &model, lowered, &named, &expected, tol)
}

/// Binds, compiles, runs a lowered module and compares its results with `expected` in order.
pub(super) fn run_lowered(
    client: &Client,
    model: &Model,
    lowered: tpuport_lower::onnx::Lowered,
    inputs: &[(&str, &HostTensor)],
    expected: &[HostTensor],
    (rtol, atol): (f64, f64),
) -> Result<(), Stop> {
    let args = bind_args(model, &lowered.args, inputs)?;
    let exe = client
        .compile(&Program::mlir(lowered.mlir.into_bytes()), &CompileOptions::default())
        .map_err(|e| stop(Outcome::Error, "compile", e))?;
    let device = exe
        .devices()
        .into_iter()
        .next()
        .ok_or_else(|| stop(Outcome::Error, "execute", "no device"))?;
    let bufs = args
        .iter()
        .map(|t| client.buffer_from_host(t, &device))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| stop(Outcome::Error, "execute", e))?;
    let refs: Vec<&tpuport_pjrt::Buffer> = bufs.iter().collect();
    let outs = exe.execute_one(&refs).map_err(|e| stop(Outcome::Error, "execute", e))?;
    if outs.len() < expected.len() {
        return Err(stop(
            Outcome::Fail,
            "compare",
            format!("{} results, expected {}", outs.len(), expected.len()),
        ));
    }
    for (j, (b, e)) in outs.iter().zip(expected).enumerate() {
        let got = b.to_host().map_err(|e| stop(Outcome::Error, "execute", e))?;
        if let Some(why) = compare::mismatch(&got, e, rtol, atol) {
            let name = lowered.results.get(j).map_or_else(|| format!("#{j}"), |r| r.name.clone());
            return Err(stop(Outcome::Fail, "compare", format!("output {name}: {why}")));
        }
    }
    Ok(())
}

/// Host tensors for the module's arguments: the test inputs bound to the graph inputs by
/// name, weights from the model's store.
fn bind_args(
    model: &Model,
    args: &[ArgBinding],
    inputs: &[(&str, &HostTensor)],
) -> Result<Vec<HostTensor>, Stop> {
    let slots = lowered::input_slots(args);
    // test inputs that feed no module argument (an initializer an old-IR model also lists as
    // a graph input) are left out
    let entries = inputs
        .iter()
        .filter(|(n, _)| slots.iter().any(|s| s.name == *n))
        .map(|(n, t)| Entry {
            key: Key::Named((*n).to_owned()),
            source: (*n).to_owned(),
            tensor: (*t).clone(),
        })
        .collect();
    let stage = |p: &BindProblem| match p {
        BindProblem::Mismatch { .. } => "lower",
        _ => "data",
    };
    let given = tensors::bind(entries, &slots).map_err(|p| stop(Outcome::Error, stage(&p), p))?;
    lowered::arguments(args, given, &model.weights).map_err(|p| stop(Outcome::Error, stage(&p), p))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tpuport_lower::onnx::{ArgSource, Lowered, ResultBinding};
    use tpuport_model::{DType, ModelFormat};
    use tpuport_pjrt::ClientOptions;

    use super::*;

    const ADD: &str = "func.func @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n  \
        %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>\n  return %0 : tensor<3xf32>\n}\n";

    fn lowered() -> Lowered {
        Lowered {
            mlir: ADD.to_owned(),
            args: vec![ArgBinding {
                source: ArgSource::Input("x".into()),
                dtype: DType::F32,
                shape: vec![3],
            }],
            results: vec![ResultBinding { name: "y".into(), dtype: DType::F32, shape: vec![3] }],
        }
    }

    fn client() -> Client {
        let found = tpuport_pjrt::find(None).unwrap();
        Client::new(tpuport_pjrt::load(&found.path).unwrap(), &ClientOptions::cpu_devices(1))
            .unwrap()
    }

    /// The stages after lowering on the real CPU plugin: pass within tolerance, fail outside
    /// it, fail on a wrong shape, error when an argument's data has the wrong type.
    #[test]
    fn compiles_runs_and_classifies() {
        let c = client();
        let model = Model::empty(ModelFormat::Onnx);
        let x = HostTensor::from_f32(vec![3], &[1.0, -2.0, 3.5]).unwrap();
        let inputs = [("x", &x)];
        let tol = (1e-3, 1e-7);
        let want = HostTensor::from_f32(vec![3], &[2.0, -4.0, 7.0005]).unwrap();
        assert!(run_lowered(&c, &model, lowered(), &inputs, &[want], tol).is_ok());
        let off = HostTensor::from_f32(vec![3], &[2.0, -4.0, 7.1]).unwrap();
        let e = run_lowered(&c, &model, lowered(), &inputs, &[off], tol).unwrap_err();
        assert_eq!((e.outcome, e.stage), (Outcome::Fail, "compare"));
        assert!(e.reason.starts_with("output y: 1 of 3 elements differ"), "{}", e.reason);
        let shape = HostTensor::from_f32(vec![1, 3], &[2.0, -4.0, 7.0]).unwrap();
        let e = run_lowered(&c, &model, lowered(), &inputs, &[shape], tol).unwrap_err();
        assert_eq!(e.outcome, Outcome::Fail);
        let xi = HostTensor::new(DType::I32, vec![3], vec![0; 12]).unwrap();
        let inputs = [("x", &xi)];
        let e = run_lowered(&c, &model, lowered(), &inputs, &[], tol).unwrap_err();
        assert_eq!((e.outcome, e.stage), (Outcome::Error, "lower"));
    }
}
