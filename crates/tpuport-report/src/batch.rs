//! The text summary of `tpuport batch`.

use std::fmt::Write as _;

use tpuport_batch::Summary;

/// A few lines: what ran, how fast, where the pipeline waited, where the files are.
#[must_use]
pub fn render(s: &Summary) -> String {
    let mut out = format!(
        "batch {} on {}: {} rows written, {} bad, in {} part(s) ({} already done) of shard {}/{}\n",
        s.model.name,
        s.model.platform,
        s.rows,
        s.bad_rows,
        s.parts_written,
        s.parts_skipped,
        s.shard.index,
        s.shard.count,
    );
    let _ = writeln!(
        out,
        "  {:.1} rows/s over {:.2} s; {} batch(es) at bucket {} (buckets {:?}), padding {:.1} %",
        s.rows_per_second,
        s.seconds,
        s.batches,
        s.model.batch,
        s.model.buckets,
        s.padding_waste * 100.0
    );
    let _ = writeln!(
        out,
        "  device busy {:.1} %, executors waiting for input {:.1} %, decode {:.2} s on {} thread(s), {} in flight; load {:.2} s",
        s.device_busy * 100.0,
        s.input_wait * 100.0,
        s.decode_seconds,
        s.decoders,
        s.in_flight,
        s.model.load_seconds
    );
    let _ = writeln!(out, "  manifest {}", s.manifest.display());
    if s.bad_rows > 0 {
        let _ = writeln!(out, "  bad rows listed in {}", s.errors_file.display());
    }
    out
}
