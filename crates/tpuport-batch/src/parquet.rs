//! Parquet shards: one column per model input, matched by name (or the only column of a
//! one-input model). A cell is one row of the input: a list (fixed-size, variable or large) of
//! the input's element type holding exactly the row's elements, or a binary value holding the
//! row's little-endian bytes. A null cell, or one of the wrong length, is a bad row.

use std::fs::File;
use std::path::Path;

use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeBinaryArray, FixedSizeListArray, LargeBinaryArray,
    LargeListArray, ListArray,
};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tpuport_exec::TensorSig;
use tpuport_model::DType;

use crate::source::{BadRow, ReadRows, flat};

/// The element type a model dtype is stored as in Arrow.
fn arrow_of(d: DType) -> Option<DataType> {
    Some(match d {
        DType::F16 => DataType::Float16,
        DType::F32 => DataType::Float32,
        DType::F64 => DataType::Float64,
        DType::I8 => DataType::Int8,
        DType::I16 => DataType::Int16,
        DType::I32 => DataType::Int32,
        DType::I64 => DataType::Int64,
        DType::U8 => DataType::UInt8,
        DType::U16 => DataType::UInt16,
        DType::U32 => DataType::UInt32,
        DType::U64 => DataType::UInt64,
        _ => return None,
    })
}

/// A column of fixed-size lists (one per row) from the rows' little-endian bytes.
pub(crate) fn list_column(sig: &TensorSig, bytes: &[u8]) -> Result<ArrayRef, String> {
    use std::sync::Arc;

    use arrow_array::builder::{
        FixedSizeListBuilder, Float32Builder, Float64Builder, Int8Builder, Int16Builder,
        Int32Builder, Int64Builder, UInt8Builder, UInt16Builder, UInt32Builder, UInt64Builder,
    };

    let elems = usize::try_from(sig.row_shape.iter().product::<u64>()).unwrap_or(0);
    let size = i32::try_from(elems).map_err(|_| "rows too large for a list".to_owned())?;
    if elems == 0 {
        return Err("rows of zero elements".to_owned());
    }
    macro_rules! lists {
        ($builder:ty, $t:ty) => {{
            let w = std::mem::size_of::<$t>();
            let mut b = FixedSizeListBuilder::new(<$builder>::new(), size);
            for row in bytes.chunks_exact(elems * w) {
                for c in row.chunks_exact(w) {
                    b.values().append_value(<$t>::from_le_bytes(c.try_into().unwrap_or_default()));
                }
                b.append(true);
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    Ok(match sig.dtype {
        DType::F32 => lists!(Float32Builder, f32),
        DType::F64 => lists!(Float64Builder, f64),
        DType::I8 => lists!(Int8Builder, i8),
        DType::I16 => lists!(Int16Builder, i16),
        DType::I32 => lists!(Int32Builder, i32),
        DType::I64 => lists!(Int64Builder, i64),
        DType::U8 => lists!(UInt8Builder, u8),
        DType::U16 => lists!(UInt16Builder, u16),
        DType::U32 => lists!(UInt32Builder, u32),
        DType::U64 => lists!(UInt64Builder, u64),
        d => return Err(format!("{d} has no Parquet column type here; use --output-format npy")),
    })
}

/// Whether a column of `dt` can feed `sig` (its element type, or binary).
fn fits(dt: &DataType, sig: &TensorSig) -> bool {
    let want = arrow_of(sig.dtype);
    match dt {
        DataType::FixedSizeList(f, _) | DataType::List(f) | DataType::LargeList(f) => {
            Some(f.data_type()) == want.as_ref()
        }
        DataType::Binary | DataType::LargeBinary => true,
        DataType::FixedSizeBinary(n) => usize::try_from(*n).ok() == Some(sig.row_bytes),
        _ => false,
    }
}

/// Opens a Parquet shard: its row count and each input's column index, or the reason it
/// cannot feed the model.
pub(crate) fn open(path: &Path, inputs: &[TensorSig]) -> Result<(u64, Vec<usize>), String> {
    let f = File::open(path).map_err(|e| e.to_string())?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| flat(&e.to_string()))?;
    let rows = u64::try_from(b.metadata().file_metadata().num_rows()).unwrap_or(0);
    let schema = b.schema();
    let fields = schema.fields();
    let mut cols = Vec::new();
    for sig in inputs {
        let idx = if fields.len() == 1 && inputs.len() == 1 {
            Some(0)
        } else {
            fields.iter().position(|f| f.name() == &sig.name)
        };
        let Some(i) = idx else {
            let have: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
            return Err(format!(
                "no column named `{}` (the model's input); the file holds: {}",
                sig.name,
                have.join(", ")
            ));
        };
        let dt = fields[i].data_type();
        if !fits(dt, sig) {
            return Err(format!(
                "column `{}` is {dt}; input `{}` takes a list of {} or binary cells of {} bytes",
                fields[i].name(),
                sig.name,
                arrow_of(sig.dtype).map_or_else(|| sig.dtype.to_string(), |d| d.to_string()),
                sig.row_bytes
            ));
        }
        cols.push(i);
    }
    Ok((rows, cols))
}

/// The little-endian bytes of cell `i`, or why it is refused.
fn cell(col: &ArrayRef, i: usize, sig: &TensorSig) -> Result<Vec<u8>, String> {
    if col.is_null(i) {
        return Err("null cell".to_owned());
    }
    let any = col.as_any();
    let values: ArrayRef = if let Some(a) = any.downcast_ref::<FixedSizeListArray>() {
        a.value(i)
    } else if let Some(a) = any.downcast_ref::<ListArray>() {
        a.value(i)
    } else if let Some(a) = any.downcast_ref::<LargeListArray>() {
        a.value(i)
    } else {
        let raw = if let Some(a) = any.downcast_ref::<BinaryArray>() {
            a.value(i)
        } else if let Some(a) = any.downcast_ref::<LargeBinaryArray>() {
            a.value(i)
        } else if let Some(a) = any.downcast_ref::<FixedSizeBinaryArray>() {
            a.value(i)
        } else {
            return Err(format!("column type {} is not supported", col.data_type()));
        };
        if raw.len() != sig.row_bytes {
            return Err(format!("{} bytes, the row takes {}", raw.len(), sig.row_bytes));
        }
        return Ok(raw.to_vec());
    };
    let elems = usize::try_from(sig.row_shape.iter().product::<u64>()).unwrap_or(usize::MAX);
    let width = sig.row_bytes.checked_div(elems).unwrap_or(0);
    if values.len() != elems {
        return Err(format!("{} values, the row takes {elems}", values.len()));
    }
    if values.null_count() > 0 {
        return Err("null values in the cell".to_owned());
    }
    let data = values.to_data();
    let buf = data.buffers().first().ok_or_else(|| "no value buffer".to_owned())?;
    let start = data.offset() * width;
    buf.as_slice()
        .get(start..start + sig.row_bytes)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| "value buffer shorter than the cell".to_owned())
}

/// Reads rows `start..end` of a Parquet shard.
pub(crate) fn read_rows(
    path: &Path,
    key: &str,
    cols: &[usize],
    inputs: &[TensorSig],
    start: u64,
    end: u64,
) -> ReadRows {
    let mut r = ReadRows { inputs: vec![Vec::new(); inputs.len()], ..ReadRows::default() };
    let n = usize::try_from(end - start).unwrap_or(0);
    let batches = (|| -> Result<Vec<arrow_array::RecordBatch>, String> {
        let f = File::open(path).map_err(|e| e.to_string())?;
        let b = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| e.to_string())?;
        let mask = ProjectionMask::roots(b.parquet_schema(), cols.iter().copied());
        let reader = b
            .with_projection(mask)
            .with_offset(usize::try_from(start).unwrap_or(usize::MAX))
            .with_limit(n)
            .with_batch_size(n.max(1))
            .build()
            .map_err(|e| e.to_string())?;
        reader.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())
    })();
    let batches = batches.and_then(|b| {
        let got: usize = b.iter().map(arrow_array::RecordBatch::num_rows).sum();
        if got == n { Ok(b) } else { Err(format!("{got} rows read where the metadata says {n}")) }
    });
    let batches = match batches {
        Ok(b) => b,
        Err(reason) => {
            let reason = flat(&reason);
            r.bad = (start..end)
                .map(|i| BadRow { key: format!("{key}:{i}"), reason: reason.clone() })
                .collect();
            return r;
        }
    };
    // The projection keeps the file's column order; map each input to its projected column.
    let mut sorted: Vec<usize> = cols.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let at: Vec<usize> =
        cols.iter().map(|c| sorted.iter().position(|s| s == c).unwrap_or(0)).collect();
    let mut row = start;
    for batch in &batches {
        for i in 0..batch.num_rows() {
            let cells: Result<Vec<Vec<u8>>, String> = at
                .iter()
                .zip(inputs)
                .map(|(&c, sig)| {
                    cell(batch.column(c), i, sig).map_err(|e| format!("input `{}`: {e}", sig.name))
                })
                .collect();
            match cells {
                Ok(cells) => {
                    for (buf, c) in r.inputs.iter_mut().zip(cells) {
                        buf.extend_from_slice(&c);
                    }
                    r.keys.push(format!("{key}:{row}"));
                }
                Err(reason) => r.bad.push(BadRow { key: format!("{key}:{row}"), reason }),
            }
            row += 1;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use arrow_array::RecordBatch;
    use arrow_array::builder::{BinaryBuilder, FixedSizeListBuilder, Float32Builder, ListBuilder};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::ArrowWriter;

    use super::*;

    fn sig(name: &str) -> TensorSig {
        TensorSig { name: name.into(), dtype: DType::F32, row_shape: vec![3], row_bytes: 12 }
    }

    fn le(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Rows: x as fixed-size lists, y as binary (row 2 short), z as variable lists (row 3 has
    /// 2 values); row 4 null in x.
    fn write(path: &Path) {
        let mut x = FixedSizeListBuilder::new(Float32Builder::new(), 3);
        let mut y = BinaryBuilder::new();
        let mut z = ListBuilder::new(Float32Builder::new());
        for r in 0..6u8 {
            let v: Vec<f32> = (0..3).map(|j| f32::from(r * 10 + j)).collect();
            if r == 4 {
                x.values().append_slice(&[0.0; 3]);
                x.append(false);
            } else {
                x.values().append_slice(&v);
                x.append(true);
            }
            if r == 2 {
                y.append_value(&le(&v)[..8])
            } else {
                y.append_value(le(&v))
            }
            z.values().append_slice(if r == 3 { &v[..2] } else { &v });
            z.append(true);
        }
        let (x, y, z) = (x.finish(), y.finish(), z.finish());
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", x.data_type().clone(), true),
            Field::new("y", y.data_type().clone(), false),
            Field::new("z", z.data_type().clone(), false),
        ]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(x), Arc::new(y), Arc::new(z)])
                .unwrap();
        let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    #[test]
    fn reads_lists_and_binary_cells_and_refuses_bad_ones() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.parquet");
        write(&p);
        let inputs = [sig("z"), sig("x"), sig("y")];
        let (rows, cols) = open(&p, &inputs).unwrap();
        assert_eq!((rows, cols.clone()), (6, vec![2, 0, 1]));
        let r = read_rows(&p, "t.parquet", &cols, &inputs, 1, 6);
        assert_eq!(r.keys, ["t.parquet:1", "t.parquet:5"]);
        let row = |n: u8| le(&[f32::from(n * 10), f32::from(n * 10 + 1), f32::from(n * 10 + 2)]);
        assert_eq!(r.inputs[0], [row(1), row(5)].concat());
        assert_eq!(r.inputs[1], r.inputs[0]);
        assert_eq!(r.inputs[2], r.inputs[0]);
        let bad: Vec<(&str, &str)> =
            r.bad.iter().map(|b| (b.key.as_str(), b.reason.as_str())).collect();
        assert_eq!(
            bad,
            [
                ("t.parquet:2", "input `y`: 8 bytes, the row takes 12"),
                ("t.parquet:3", "input `z`: 2 values, the row takes 3"),
                ("t.parquet:4", "input `x`: null cell"),
            ]
        );
        let e = open(&p, &[sig("w")]).unwrap_err();
        assert!(e.contains("no column named `w`"), "{e}");
        let wide = TensorSig { dtype: DType::F64, row_bytes: 24, ..sig("x") };
        let e = open(&p, &[wide]).unwrap_err();
        assert!(e.contains("list of Float64"), "{e}");
    }
}
