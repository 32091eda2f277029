//! Shared helpers for the ONNX lowering tests: lower, compile on the CPU PJRT plugin, run,
//! compare.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code, unreachable_pub, reason = "tests")]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use tpuport_lower::onnx::{ArgSource, Lowered};
use tpuport_model::{DType, HostTensor, Model};
use tpuport_pjrt::{Client, ClientOptions, CompileOptions, Program};

pub fn fixtures() -> PathBuf {
    std::env::var_os("TPUPORT_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.cache/fixtures"),
        PathBuf::from,
    )
}

pub fn client() -> &'static Client {
    static C: OnceLock<Client> = OnceLock::new();
    C.get_or_init(|| {
        let plugin = tpuport_pjrt::find_cpu().expect("CPU PJRT plugin not found: run `make venv`");
        Client::new(tpuport_pjrt::load(&plugin).unwrap(), &ClientOptions::cpu_devices(1))
            .expect("CPU client")
    })
}

/// Converts f32 host data to bf16 (round to nearest even).
pub fn to_bf16(t: &HostTensor) -> HostTensor {
    let v: Vec<u8> = t
        .data()
        .chunks_exact(4)
        .flat_map(|c| {
            half::bf16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes()
        })
        .collect();
    HostTensor::new(DType::BF16, t.shape.clone(), v).unwrap()
}

/// Compiles and runs a lowered module with `inputs` by name; weights come from the model.
pub fn run(
    model: &Model,
    low: &Lowered,
    inputs: &HashMap<String, HostTensor>,
) -> Result<Vec<HostTensor>, String> {
    let c = client();
    let exe = c
        .compile(&Program::mlir(low.mlir.clone().into_bytes()), &CompileOptions::default())
        .map_err(|e| format!("compile: {e}"))?;
    let dev = &c.devices()[0];
    let mut bufs = Vec::new();
    for a in &low.args {
        let t = match &a.source {
            ArgSource::Input(n) => inputs.get(n).cloned().ok_or_else(|| format!("no input {n}"))?,
            ArgSource::Weight(n) => {
                let w = model.weights.by_name(n).ok_or_else(|| format!("no weight {n}"))?;
                HostTensor::new(w.dtype, w.shape.clone(), w.bytes().unwrap().into_owned()).unwrap()
            }
        };
        let t = if t.dtype == DType::F32 && a.dtype == DType::BF16 { to_bf16(&t) } else { t };
        assert_eq!((t.dtype, &t.shape), (a.dtype, &a.shape), "argument {:?}", a.source);
        bufs.push(c.buffer_from_host(&t, dev).map_err(|e| format!("upload: {e}"))?);
    }
    let refs: Vec<&tpuport_pjrt::Buffer> = bufs.iter().collect();
    let out = exe.execute_one(&refs).map_err(|e| format!("execute: {e}"))?;
    out.iter().map(|b| b.to_host().map_err(|e| format!("download: {e}"))).collect()
}

/// Max |a-b| / max(1, max|b|).
pub fn rel_err(got: &HostTensor, want: &HostTensor) -> f64 {
    let (g, w) = (got.to_f64().unwrap(), want.to_f64().unwrap());
    assert_eq!(g.len(), w.len());
    let scale = w.iter().fold(1f64, |m, v| m.max(v.abs()));
    g.iter().zip(&w).fold(0f64, |m, (a, b)| {
        let d = if a.is_nan() && b.is_nan() { 0.0 } else { (a - b).abs() };
        m.max(if d.is_nan() { f64::INFINITY } else { d })
    }) / scale
}

/// A tiny ONNX-like graph builder for unit tests.
pub mod build {
    use std::sync::Arc;

    use tpuport_model::{
        Attr, DType, HostTensor, Model, ModelFormat, Node, Shape, TensorType, Value, ValueId,
        ValueKind, Weight, WeightData,
    };

    /// Builder state.
    pub struct G {
        pub m: Model,
    }

    pub fn f32s(shape: &[u64], v: &[f32]) -> HostTensor {
        HostTensor::from_f32(shape.to_vec(), v).unwrap()
    }

    pub fn i64s(shape: &[u64], v: &[i64]) -> HostTensor {
        HostTensor::new(
            DType::I64,
            shape.to_vec(),
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        )
        .unwrap()
    }

    impl G {
        pub fn new(opset: i64) -> G {
            let mut m = Model::empty(ModelFormat::Onnx);
            m.metadata.opsets.push((String::new(), opset));
            G { m }
        }

        fn id(&self, name: &str) -> ValueId {
            let i = self
                .m
                .graph
                .values
                .iter()
                .position(|v| v.name == name)
                .unwrap_or_else(|| panic!("no value {name}"));
            ValueId(i as u32)
        }

        pub fn input(&mut self, name: &str, dt: DType, shape: &[u64]) -> &mut G {
            self.input_shape(name, dt, Shape::fixed(shape))
        }

        pub fn input_shape(&mut self, name: &str, dt: DType, shape: Shape) -> &mut G {
            let id = self.m.graph.add_value(Value {
                name: name.into(),
                ty: TensorType::new(dt, shape),
                kind: ValueKind::Input,
                producer: None,
            });
            self.m.graph.inputs.push(id);
            self
        }

        pub fn weight(&mut self, name: &str, t: &HostTensor) -> &mut G {
            let wid = self.m.weights.push(Weight {
                name: name.into(),
                dtype: t.dtype,
                shape: t.shape.clone(),
                data: WeightData::Inline(Arc::from(t.data())),
            });
            self.m.graph.add_value(Value {
                name: name.into(),
                ty: TensorType::new(t.dtype, Shape::fixed(&t.shape)),
                kind: ValueKind::Weight(wid),
                producer: None,
            });
            self
        }

        pub fn node(
            &mut self,
            op: &str,
            ins: &[&str],
            outs: &[&str],
            attrs: Vec<(&str, Attr)>,
        ) -> &mut G {
            let inputs =
                ins.iter().map(|n| if n.is_empty() { None } else { Some(self.id(n)) }).collect();
            let outputs = outs
                .iter()
                .map(|n| {
                    self.m.graph.add_value(Value {
                        name: (*n).into(),
                        ty: TensorType::default(),
                        kind: ValueKind::Intermediate,
                        producer: None,
                    })
                })
                .collect();
            let n = self.m.graph.nodes.len();
            self.m.graph.add_node(Node {
                name: format!("n{n}_{op}"),
                op: op.into(),
                domain: String::new(),
                inputs,
                outputs,
                attrs: attrs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
                subgraphs: Vec::new(),
                location: None,
                scope: None,
            });
            self
        }

        pub fn output(&mut self, name: &str) -> &mut G {
            let id = self.id(name);
            self.m.graph.outputs.push(id);
            self
        }
    }
}
