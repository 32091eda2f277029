//! The ONNX protobuf messages tpuport reads, declared by hand with `prost` derives.
//!
//! Field numbers follow `onnx/onnx.proto` (onnx/onnx, IR version 10+ layout). Scalar fields are
//! declared proto3-style (absent reads as the default) except where presence matters. Byte
//! fields that can be large (`TensorProto.raw_data`) decode as [`Bytes`]: decoding from a
//! `Bytes` over the file's memory map makes them zero-copy slices of the map. Messages and
//! fields tpuport never reads (training info, quantization annotations, device configurations)
//! are not declared; prost skips unknown fields.

use prost::bytes::Bytes;

/// `ModelProto`: the file's root message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// IR version of the file.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// Operator sets imported.
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// Producing tool.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// Producing tool's version.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// Reverse-DNS model domain.
    #[prost(string, tag = "4")]
    pub domain: String,
    /// Model version.
    #[prost(int64, tag = "5")]
    pub model_version: i64,
    /// Documentation.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// The main graph.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// Free-form metadata.
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
    /// Model-local functions.
    #[prost(message, repeated, tag = "25")]
    pub functions: Vec<FunctionProto>,
}

/// `OperatorSetIdProto`: one `(domain, version)` import.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// Domain (`""` is the default ONNX domain).
    #[prost(string, tag = "1")]
    pub domain: String,
    /// Opset version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `StringStringEntryProto`: a key/value pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// Key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `GraphProto`: nodes, initializers, inputs, outputs, value infos.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// Nodes (topologically sorted in well-formed files).
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// Graph name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Dense initializers.
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Sparse initializers.
    #[prost(message, repeated, tag = "15")]
    pub sparse_initializer: Vec<SparseTensorProto>,
    /// Documentation.
    #[prost(string, tag = "10")]
    pub doc_string: String,
    /// Inputs (IR < 4 lists initializers here too).
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// Outputs.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    /// Types of intermediate values.
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
    /// Graph metadata.
    #[prost(message, repeated, tag = "16")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// `NodeProto`: one operator application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Input value names (`""` marks an omitted optional input).
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// Node name.
    #[prost(string, tag = "3")]
    pub name: String,
    /// Operator name.
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// Operator domain.
    #[prost(string, tag = "7")]
    pub domain: String,
    /// Function overload (for calls to model-local functions).
    #[prost(string, tag = "8")]
    pub overload: String,
    /// Attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// Documentation.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// Node metadata (dynamo exports record source locations here).
    #[prost(message, repeated, tag = "9")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// `AttributeProto.AttributeType` codes.
pub mod attribute_type {
    /// Not set (IR < 2 files).
    pub const UNDEFINED: i32 = 0;
    /// `f`.
    pub const FLOAT: i32 = 1;
    /// `i`.
    pub const INT: i32 = 2;
    /// `s`.
    pub const STRING: i32 = 3;
    /// `t`.
    pub const TENSOR: i32 = 4;
    /// `g`.
    pub const GRAPH: i32 = 5;
    /// `floats`.
    pub const FLOATS: i32 = 6;
    /// `ints`.
    pub const INTS: i32 = 7;
    /// `strings`.
    pub const STRINGS: i32 = 8;
    /// `tensors`.
    pub const TENSORS: i32 = 9;
    /// `graphs`.
    pub const GRAPHS: i32 = 10;
    /// `sparse_tensor`.
    pub const SPARSE_TENSOR: i32 = 11;
    /// `sparse_tensors`.
    pub const SPARSE_TENSORS: i32 = 12;
    /// `tp`.
    pub const TYPE_PROTO: i32 = 13;
    /// `type_protos`.
    pub const TYPE_PROTOS: i32 = 14;
}

/// `AttributeProto`: a named attribute of a node (or a function's default).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// In function bodies: the calling node's attribute this one refers to.
    #[prost(string, tag = "21")]
    pub ref_attr_name: String,
    /// Documentation.
    #[prost(string, tag = "13")]
    pub doc_string: String,
    /// Which field holds the value ([`attribute_type`]).
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// Float value.
    #[prost(float, tag = "2")]
    pub f: f32,
    /// Integer value.
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// String value (bytes, usually UTF-8).
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    /// Tensor value.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// Graph value.
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    /// Sparse tensor value.
    #[prost(message, optional, tag = "22")]
    pub sparse_tensor: Option<SparseTensorProto>,
    /// Type value.
    #[prost(message, optional, tag = "14")]
    pub tp: Option<TypeProto>,
    /// Float list.
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    /// Integer list.
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    /// String list.
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    /// Tensor list.
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    /// Graph list.
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
    /// Sparse tensor list.
    #[prost(message, repeated, tag = "23")]
    pub sparse_tensors: Vec<SparseTensorProto>,
    /// Type list.
    #[prost(message, repeated, tag = "15")]
    pub type_protos: Vec<TypeProto>,
}

/// `ValueInfoProto`: a value's name and type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// Value name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Type.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
    /// Documentation.
    #[prost(string, tag = "3")]
    pub doc_string: String,
}

/// `TensorProto.DataLocation` code for data held in another file.
pub const DATA_LOCATION_EXTERNAL: i32 = 1;

/// `TensorProto`: a serialized tensor.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// Dimensions.
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    /// Element type code (see `onnx::dtype`).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// Chunk of a larger tensor (unsupported by tpuport, detected and rejected).
    #[prost(message, optional, tag = "3")]
    pub segment: Option<tensor_proto::Segment>,
    /// f32 / c64 values.
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// Values of the narrow integer, bool, f16/bf16 and f8 types.
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// String values.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    /// i64 values.
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// Tensor name.
    #[prost(string, tag = "8")]
    pub name: String,
    /// Documentation.
    #[prost(string, tag = "12")]
    pub doc_string: String,
    /// Little-endian fixed-width bytes.
    #[prost(bytes = "bytes", tag = "9")]
    pub raw_data: Bytes,
    /// `location` / `offset` / `length` / `checksum` of external data.
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// 0 default, 1 external ([`DATA_LOCATION_EXTERNAL`]).
    #[prost(int32, tag = "14")]
    pub data_location: i32,
    /// f64 / c128 values.
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// u32 / u64 values.
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
}

/// Nested messages of [`TensorProto`].
pub mod tensor_proto {
    /// `TensorProto.Segment`: the element range a chunked tensor's part covers.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Segment {
        /// First element.
        #[prost(int64, tag = "1")]
        pub begin: i64,
        /// One past the last element.
        #[prost(int64, tag = "2")]
        pub end: i64,
    }
}

/// `SparseTensorProto`: COO sparse tensor.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SparseTensorProto {
    /// Non-default values, shape `[NNZ]`.
    #[prost(message, optional, tag = "1")]
    pub values: Option<TensorProto>,
    /// Indices, shape `[NNZ, rank]` or linearized `[NNZ]`.
    #[prost(message, optional, tag = "2")]
    pub indices: Option<TensorProto>,
    /// Dense shape.
    #[prost(int64, repeated, packed = "false", tag = "3")]
    pub dims: Vec<i64>,
}

/// `TensorShapeProto`: dimensions, each a size or a symbol.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// Dimensions.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<tensor_shape_proto::Dimension>,
}

/// Nested messages of [`TensorShapeProto`].
pub mod tensor_shape_proto {
    /// `TensorShapeProto.Dimension`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Dimension {
        /// Size or symbol; neither means unknown.
        #[prost(oneof = "dimension::Value", tags = "1, 2")]
        pub value: Option<dimension::Value>,
        /// Denotation (`DATA_BATCH`, ...).
        #[prost(string, tag = "3")]
        pub denotation: String,
    }

    /// The oneof of [`Dimension`].
    pub mod dimension {
        /// `dim_value` or `dim_param`.
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Value {
            /// A concrete size (negative in some files to mean unknown).
            #[prost(int64, tag = "1")]
            DimValue(i64),
            /// A symbol.
            #[prost(string, tag = "2")]
            DimParam(String),
        }
    }
}

/// `TypeProto`: the type of a value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// Which kind of type.
    #[prost(oneof = "type_proto::Value", tags = "1, 4, 5, 9, 8, 7")]
    pub value: Option<type_proto::Value>,
    /// Denotation.
    #[prost(string, tag = "6")]
    pub denotation: String,
}

/// Nested messages of [`TypeProto`].
pub mod type_proto {
    use super::{TensorShapeProto, TypeProto};

    /// `TypeProto.Tensor` (also the layout of `TypeProto.SparseTensor`).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Tensor {
        /// Element type code.
        #[prost(int32, tag = "1")]
        pub elem_type: i32,
        /// Shape; absent means unknown rank.
        #[prost(message, optional, tag = "2")]
        pub shape: Option<TensorShapeProto>,
    }

    /// `TypeProto.Sequence`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sequence {
        /// Element type.
        #[prost(message, optional, boxed, tag = "1")]
        pub elem_type: Option<Box<TypeProto>>,
    }

    /// `TypeProto.Map`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Map {
        /// Key element type code.
        #[prost(int32, tag = "1")]
        pub key_type: i32,
        /// Value type.
        #[prost(message, optional, boxed, tag = "2")]
        pub value_type: Option<Box<TypeProto>>,
    }

    /// `TypeProto.Optional`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Optional {
        /// Wrapped type.
        #[prost(message, optional, boxed, tag = "1")]
        pub elem_type: Option<Box<TypeProto>>,
    }

    /// `TypeProto.Opaque`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Opaque {
        /// Domain.
        #[prost(string, tag = "1")]
        pub domain: String,
        /// Name.
        #[prost(string, tag = "2")]
        pub name: String,
    }

    /// The oneof of [`TypeProto`].
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// A dense tensor.
        #[prost(message, tag = "1")]
        TensorType(Tensor),
        /// A sequence.
        #[prost(message, tag = "4")]
        SequenceType(Sequence),
        /// A map.
        #[prost(message, tag = "5")]
        MapType(Map),
        /// An optional.
        #[prost(message, tag = "9")]
        OptionalType(Optional),
        /// A sparse tensor.
        #[prost(message, tag = "8")]
        SparseTensorType(Tensor),
        /// An opaque type.
        #[prost(message, tag = "7")]
        OpaqueType(Opaque),
    }
}

/// `FunctionProto`: a model-local function.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FunctionProto {
    /// Function name (what calling nodes put in `op_type`).
    #[prost(string, tag = "1")]
    pub name: String,
    /// Formal input names.
    #[prost(string, repeated, tag = "4")]
    pub input: Vec<String>,
    /// Formal output names.
    #[prost(string, repeated, tag = "5")]
    pub output: Vec<String>,
    /// Attribute parameters without defaults.
    #[prost(string, repeated, tag = "6")]
    pub attribute: Vec<String>,
    /// Attribute parameters with defaults.
    #[prost(message, repeated, tag = "11")]
    pub attribute_proto: Vec<AttributeProto>,
    /// Body.
    #[prost(message, repeated, tag = "7")]
    pub node: Vec<NodeProto>,
    /// Documentation.
    #[prost(string, tag = "8")]
    pub doc_string: String,
    /// Opsets the body uses.
    #[prost(message, repeated, tag = "9")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// Domain (what calling nodes put in `domain`).
    #[prost(string, tag = "10")]
    pub domain: String,
    /// Overload name.
    #[prost(string, tag = "13")]
    pub overload: String,
    /// Types of body values.
    #[prost(message, repeated, tag = "12")]
    pub value_info: Vec<ValueInfoProto>,
    /// Metadata.
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
}
