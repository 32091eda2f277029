//! Sharded safetensors: `model.safetensors.index.json` =
//! `{"metadata": {"total_size": N, ...}, "weight_map": {"tensor": "model-00001-of-00002.safetensors"}}`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use tpuport_model::{Model, ModelFormat, NoteLevel};

use super::{add_tensors, apply_metadata, note_gaps, open_file};
use crate::{FormatError, Limits};

#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
    weight_map: BTreeMap<String, String>,
}

/// The index file in `dir` (`model.safetensors.index.json` preferred when several), else its
/// single `.safetensors` file.
pub(super) fn find_in_dir(dir: &Path) -> Option<PathBuf> {
    let mut indexes = Vec::new();
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).ok()?.flatten().take(100_000) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".safetensors.index.json") {
            indexes.push(e.path());
        } else if name.ends_with(".safetensors") {
            files.push(e.path());
        }
    }
    indexes.sort();
    if let Some(p) = indexes.iter().find(|p| p.ends_with("model.safetensors.index.json")) {
        return Some(p.clone());
    }
    if indexes.len() == 1 {
        return indexes.pop();
    }
    if indexes.is_empty() && files.len() == 1 { files.pop() } else { None }
}

fn check_shard_name(index: &Path, tensor: &str, shard: &str) -> Result<(), FormatError> {
    let p = Path::new(shard);
    let ok = !shard.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if ok {
        Ok(())
    } else {
        Err(FormatError::invalid(
            index,
            format!("weight_map entry for `{tensor}` names `{shard}`, outside the index's folder"),
        ))
    }
}

/// Imports a sharded checkpoint through its index.
pub(super) fn import(path: &Path, limits: &Limits) -> Result<Model, FormatError> {
    let len = std::fs::metadata(path).map_err(|e| FormatError::io(path, e))?.len();
    if len > limits.max_header_bytes {
        return Err(FormatError::invalid(
            path,
            format!("index is {len} bytes, over the limit of {} bytes", limits.max_header_bytes),
        ));
    }
    let text = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let idx: Index = serde_json::from_slice(&text)
        .map_err(|e| FormatError::invalid(path, format!("index is not valid: {e}")))?;
    if idx.weight_map.len() as u64 > limits.max_items {
        return Err(FormatError::invalid(path, "weight_map lists more tensors than the limit"));
    }
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut by_shard: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (t, s) in &idx.weight_map {
        check_shard_name(path, t, s)?;
        by_shard.entry(s.as_str()).or_default().push(t.as_str());
    }

    let mut model = Model::empty(ModelFormat::Safetensors);
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut total_bytes = 0u64;
    for (shard, wanted) in &by_shard {
        let spath = dir.join(shard);
        if !spath.is_file() {
            return Err(FormatError::invalid(
                path,
                format!("shard {shard} (holding `{}`) does not exist", wanted[0]),
            ));
        }
        let (map, h) = open_file(&spath, limits)?;
        for w in wanted {
            if !h.tensors.iter().any(|t| t.name == *w) {
                return Err(FormatError::invalid(
                    path,
                    format!("weight_map puts `{w}` in {shard}, but that shard does not hold it"),
                ));
            }
        }
        let mut skip: Vec<String> = Vec::new();
        for t in &h.tensors {
            match idx.weight_map.get(&t.name) {
                Some(s) if s == shard => {}
                Some(s) => {
                    model.note(
                        NoteLevel::Warning,
                        "shard-duplicate-tensor",
                        format!(
                            "`{}` is also in {shard}; the index maps it to {s}, that copy is used",
                            t.name
                        ),
                    );
                    skip.push(t.name.clone());
                }
                None => model.note(
                    NoteLevel::Warning,
                    "shard-unlisted-tensor",
                    format!(
                        "`{}` is in {shard} but not in the index's weight_map; imported anyway",
                        t.name
                    ),
                ),
            }
        }
        for t in &h.tensors {
            if skip.contains(&t.name) {
                continue;
            }
            if let Some(prev) = seen.insert(t.name.clone(), (*shard).to_owned()) {
                return Err(FormatError::invalid(
                    path,
                    format!("`{}` is held by both {prev} and {shard}", t.name),
                ));
            }
            total_bytes += t.end - t.begin;
        }
        apply_metadata(&mut model, &h.metadata);
        add_tensors(&mut model, &spath, &map, &h, Some(&|n: &str| !skip.iter().any(|s| s == n)));
        note_gaps(&mut model, &spath, &h);
    }
    if let Some(meta) = &idx.metadata {
        for (k, v) in meta {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            model.metadata.properties.push((format!("index.{k}"), v));
        }
        if let Some(declared) = meta.get("total_size").and_then(serde_json::Value::as_u64)
            && declared != total_bytes
        {
            model.note(
                NoteLevel::Warning,
                "index-total-size",
                format!("index declares total_size {declared} but the shards hold {total_bytes} tensor bytes"),
            );
        }
    }
    model.metadata.properties.push(("shards".to_owned(), by_shard.len().to_string()));
    Ok(model)
}
