//! `inference.GRPCInferenceService` messages, written here from the Open Inference Protocol
//! specification (field numbers as the spec assigns them), and the standard
//! `grpc.health.v1.Health` check messages. `bytes` fields decode as [`bytes::Bytes`], so raw
//! tensor contents are slices of the received message, not copies.

#![allow(missing_docs, reason = "field meanings are the protocol specification's")]

use std::collections::HashMap;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerLiveRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerLiveResponse {
    #[prost(bool, tag = "1")]
    pub live: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerReadyRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerReadyResponse {
    #[prost(bool, tag = "1")]
    pub ready: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelReadyRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelReadyResponse {
    #[prost(bool, tag = "1")]
    pub ready: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerMetadataRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerMetadataResponse {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, repeated, tag = "3")]
    pub extensions: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelMetadataRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorMetadata {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelMetadataResponse {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, repeated, tag = "2")]
    pub versions: Vec<String>,
    #[prost(string, tag = "3")]
    pub platform: String,
    #[prost(message, repeated, tag = "4")]
    pub inputs: Vec<TensorMetadata>,
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<TensorMetadata>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParameterChoice {
    #[prost(bool, tag = "1")]
    BoolParam(bool),
    #[prost(int64, tag = "2")]
    Int64Param(i64),
    #[prost(string, tag = "3")]
    StringParam(String),
    #[prost(double, tag = "4")]
    DoubleParam(f64),
    #[prost(uint64, tag = "5")]
    Uint64Param(u64),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InferParameter {
    #[prost(oneof = "ParameterChoice", tags = "1, 2, 3, 4, 5")]
    pub parameter_choice: Option<ParameterChoice>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InferTensorContents {
    #[prost(bool, repeated, tag = "1")]
    pub bool_contents: Vec<bool>,
    #[prost(int32, repeated, tag = "2")]
    pub int_contents: Vec<i32>,
    #[prost(int64, repeated, tag = "3")]
    pub int64_contents: Vec<i64>,
    #[prost(uint32, repeated, tag = "4")]
    pub uint_contents: Vec<u32>,
    #[prost(uint64, repeated, tag = "5")]
    pub uint64_contents: Vec<u64>,
    #[prost(float, repeated, tag = "6")]
    pub fp32_contents: Vec<f32>,
    #[prost(double, repeated, tag = "7")]
    pub fp64_contents: Vec<f64>,
    #[prost(bytes = "bytes", repeated, tag = "8")]
    pub bytes_contents: Vec<bytes::Bytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InferInputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InferRequestedOutputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(map = "string, message", tag = "2")]
    pub parameters: HashMap<String, InferParameter>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferRequest {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub inputs: Vec<InferInputTensor>,
    #[prost(message, repeated, tag = "6")]
    pub outputs: Vec<InferRequestedOutputTensor>,
    #[prost(bytes = "bytes", repeated, tag = "7")]
    pub raw_input_contents: Vec<bytes::Bytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InferOutputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferResponse {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<InferOutputTensor>,
    #[prost(bytes = "bytes", repeated, tag = "6")]
    pub raw_output_contents: Vec<bytes::Bytes>,
}

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse` (`status`: 1 SERVING, 2 NOT_SERVING).
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckResponse {
    #[prost(int32, tag = "1")]
    pub status: i32,
}
