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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use tpuport_batch::{Loaded, Shard, Summary};

    fn summary(bad: u64) -> Summary {
        Summary {
            schema: tpuport_batch::SCHEMA,
            model: Loaded {
                name: "mnv2".into(),
                platform: "cpu".into(),
                buckets: vec![1, 8],
                batch: 8,
                load_seconds: 1.5,
            },
            output: PathBuf::from("out"),
            shard: Shard { index: 1, count: 3 },
            parts: 4,
            parts_skipped: 1,
            parts_written: 3,
            rows: 300,
            bad_rows: bad,
            batches: 38,
            padding_waste: 0.0133,
            seconds: 2.0,
            rows_per_second: 150.0,
            device_busy: 0.97,
            input_wait: 0.02,
            decode_seconds: 0.8,
            decoders: 2,
            in_flight: 2,
            manifest: PathBuf::from("out/_manifest.shard-00001-of-00003.json"),
            errors_file: PathBuf::from("out/_errors.shard-00001-of-00003.jsonl"),
        }
    }

    #[test]
    fn says_rows_speed_waits_and_where_the_files_are() {
        let t = super::render(&summary(0));
        assert!(t.starts_with("batch mnv2 on cpu: 300 rows written, 0 bad, in 3 part(s) (1 already done) of shard 1/3\n"), "{t}");
        assert!(t.contains("150.0 rows/s over 2.00 s; 38 batch(es) at bucket 8"), "{t}");
        assert!(t.contains("padding 1.3 %"), "{t}");
        assert!(t.contains("device busy 97.0 %, executors waiting for input 2.0 %"), "{t}");
        assert!(!t.contains("bad rows listed"), "{t}");
        assert!(
            super::render(&summary(2))
                .contains("bad rows listed in out/_errors.shard-00001-of-00003.jsonl")
        );
    }
}
