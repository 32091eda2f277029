//! A training step's arguments: which are the parameters and which carry an optimizer's state
//! for one of them.
//!
//! A framework's exported training step (`jax.jit(step, donate_argnums=...)` lowered with
//! `as_text(debug_info=True)`, or `jax.export`) takes the parameters, then the optimizer state
//! (AdamW's first and second moments: one tensor per parameter, same shape), then the batch.
//! The plan shards the parameters; each state tensor must be placed exactly like its
//! parameter, and is not a parameter itself (counting it would triple the weights).
//!
//! Three ways to tell them apart, in this order:
//!
//! 1. **Names.** JAX names an argument by its path in the call's arguments:
//!    `p['model.embed_tokens.weight']`, `mu['model.embed_tokens.weight']`,
//!    `opt_state[0].mu['params']['Dense_0']['kernel']` (optax),
//!    `state.opt_state[1][0].nu['Dense_0']['kernel']` (a Flax `TrainState`),
//!    `state['opt'][0].mu['Conv_0']['kernel']` next to `state['params']['Conv_0']['kernel']`.
//!    An argument with an optimizer word among its path's components ([`STATE_WORDS`] as a
//!    root or attribute, [`STATE_KEYS`] also as a quoted key) is state; the components after
//!    the last such word are its *leaf path*, and the parameter whose path ends with that leaf
//!    path and has the same shape is the one it belongs to.
//! 2. **Order within lists.** Keras 3's stateless step names list items only
//!    (`trainable[0]`, `opt_vars[4]`, or `state[2][4]` for the Keras guide's state tuple).
//!    When one list holds `copies` tensors per tensor of an
//!    earlier list, shaped like them in build order (Keras interleaves `m0, v0, m1, v1`;
//!    otherwise blocked `m0, m1, v0, v1`), the first list is the parameters; other lists
//!    (the model's non-trainable variables) are neither.
//! 3. **Repetition.** Without names (`%argN`), JAX still flattens `(params, mu, nu, batch)` in
//!    that order, each optimizer tree shaped like the parameters: when the non-scalar weight
//!    arguments are k ≥ 2 copies of the same sequence of shapes, the first copy is the
//!    parameters and copy j's i-th argument is the state of parameter i.
//!
//! Scalars (a step counter) and state of other shapes (Adafactor's factored rows and columns)
//! are neither: they stay replicated and are reported as not planned.

use serde::Serialize;

/// Words in an argument's root that mark optimizer state: optax's `mu`/`nu`/`trace`/`opt_state`,
/// torch's `exp_avg`/`exp_avg_sq`/`momentum_buffer`, and the usual `m`/`v`/`momentum`/`velocity`.
pub const STATE_WORDS: &[&str] = &[
    "mu",
    "nu",
    "m",
    "v",
    "opt_state",
    "optimizer",
    "optim",
    "opt",
    "trace",
    "momentum",
    "momentum_buffer",
    "velocity",
    "exp_avg",
    "exp_avg_sq",
    "accumulator",
    "moment1",
    "moment2",
];

/// The state words that also mark optimizer state as a quoted dictionary key (`state['opt']`).
pub const STATE_KEYS: &[&str] = &[
    "opt_state",
    "optimizer",
    "optimizer_state",
    "optim",
    "opt",
    "exp_avg",
    "exp_avg_sq",
    "momentum_buffer",
];

/// How the training step's weight-like arguments divide.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StepArgs {
    /// Indices (into the list given) of the parameters.
    pub params: Vec<usize>,
    /// (state argument, its parameter) index pairs.
    pub state: Vec<(usize, usize)>,
    /// How the state was recognised: `names`, `order` (lists) or `repetition`; `None` when
    /// there is none.
    pub by: Option<&'static str>,
}

/// One component of an argument's path: a root or attribute name (`mu` in
/// `opt_state[0].mu`), a subscript index (`0`), or a quoted key (`'fc.weight'`, quoted: true).
type Part = (String, bool);

/// The components of a JAX argument path (`state['opt'][0].mu['Conv_0']['kernel']` →
/// `state`, `'opt'`, `0`, `mu`, `'Conv_0'`, `'kernel'`).
fn parts(name: &str) -> Vec<Part> {
    let b = name.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                let end = name[i + 1..].find(char::from(q)).map_or(b.len(), |e| i + 1 + e);
                out.push((name[i + 1..end].to_owned(), true));
                i = end + 1;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                let end = name[i..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(b.len(), |e| i + e);
                out.push((name[i..end].to_owned(), false));
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether a component marks optimizer state. The short words (`mu`, `v`, `m`, `trace`) only
/// as a root or an attribute, as optax's state tuples spell them: a quoted key `'v'` is a
/// module (an attention's value projection), not a moment.
fn is_state_part((text, quoted): &Part) -> bool {
    let t = text.to_ascii_lowercase();
    if *quoted { STATE_KEYS.contains(&t.as_str()) } else { STATE_WORDS.contains(&t.as_str()) }
}

/// The part of a path after its last optimizer-state component, or `None` when it has none.
fn leaf_after_state(p: &[Part]) -> Option<&[Part]> {
    let at = p.iter().rposition(is_state_part)?;
    Some(&p[at + 1..])
}

/// Whether `path` ends with the components of `leaf`, quoted or not.
fn same_suffix(path: &[Part], leaf: &[Part]) -> bool {
    path.len() >= leaf.len()
        && path[path.len() - leaf.len()..].iter().zip(leaf).all(|((a, _), (b, _))| a == b)
}

/// Whether the argument is unnamed (`%arg3` or `arg3`).
fn unnamed(name: &str) -> bool {
    let n = name.trim_start_matches('%');
    n.strip_prefix("arg").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Divides the weight-like arguments of a training step, given as (name, shape) in argument
/// order, into parameters and their optimizer state (module docs). `copies` is how many
/// tensors the optimizer keeps per parameter with its shape (AdamW 2, SGD with momentum 1):
/// unnamed arguments are split only into exactly `1 + copies` equal runs, since a model's own
/// layers repeat shapes too.
#[must_use]
pub fn split(args: &[(String, Vec<u64>)], copies: usize) -> StepArgs {
    if let Some(s) = by_names(args) {
        return s;
    }
    if let Some(s) = by_lists(args, copies) {
        return s;
    }
    if let Some(s) = by_repetition(args, copies + 1) {
        return s;
    }
    StepArgs { params: (0..args.len()).collect(), state: Vec::new(), by: None }
}

/// Keras 3's stateless training step passes lists (`trainable[0]`, `opt_vars[4]`): no paths
/// to match, but the items of each list share its path. When one list's tensors are
/// `copies` per tensor of an earlier group, in the order the optimizer built them (Keras:
/// interleaved, `m0, v0, m1, v1, …`; else blocked, `m0, m1, …, v0, v1, …`), the earlier list
/// is the parameters and the later one their state. Scalars (Keras' iteration count and
/// learning rate) and the other lists belong to neither.
fn by_lists(args: &[(String, Vec<u64>)], copies: usize) -> Option<StepArgs> {
    if copies == 0 || args.iter().any(|(n, _)| unnamed(n)) {
        return None;
    }
    // Lists, in order of first appearance: (the path without its last index, indices of the
    // tensors in it). `trainable[3]` is item 3 of `trainable`, `state[2][5]` item 5 of
    // `state[2]` (the Keras guide's `(trainable, non_trainable, optimizer, metrics)` tuple).
    let mut groups: Vec<(Vec<Part>, Vec<usize>)> = Vec::new();
    for (i, (name, shape)) in args.iter().enumerate() {
        let mut path = parts(name);
        let indexed = path.last().is_some_and(|(t, q)| !q && t.bytes().all(|b| b.is_ascii_digit()));
        if shape.is_empty() || !indexed {
            continue;
        }
        path.pop();
        match groups.iter_mut().find(|(r, _)| *r == path) {
            Some((_, v)) => v.push(i),
            None => groups.push((path, vec![i])),
        }
    }
    let shape = |i: usize| &args[i].1;
    for (g, (_, params)) in groups.iter().enumerate() {
        for (_, state) in &groups[g + 1..] {
            if state.len() != copies * params.len() {
                continue;
            }
            let n = params.len();
            let interleaved = |k: usize| params[k / copies];
            let blocked = |k: usize| params[k % n];
            for owner in [&interleaved as &dyn Fn(usize) -> usize, &blocked] {
                if state.iter().enumerate().all(|(k, &i)| shape(i) == shape(owner(k))) {
                    let pairs = state.iter().enumerate().map(|(k, &i)| (i, owner(k))).collect();
                    // The other lists (a Keras model's non-trainable variables: seeds, batch
                    // statistics) carry no names to tell what they are: not parameters.
                    return Some(StepArgs {
                        params: params.clone(),
                        state: pairs,
                        by: Some("order"),
                    });
                }
            }
        }
    }
    None
}

fn by_names(args: &[(String, Vec<u64>)]) -> Option<StepArgs> {
    if args.iter().all(|(n, _)| unnamed(n)) {
        return None;
    }
    let paths: Vec<Vec<Part>> = args.iter().map(|(n, _)| parts(n)).collect();
    let (candidates, params): (Vec<usize>, Vec<usize>) =
        (0..args.len()).partition(|&i| leaf_after_state(&paths[i]).is_some());
    let mut state = Vec::new();
    for &i in &candidates {
        let Some(leaf) = leaf_after_state(&paths[i]).filter(|l| !l.is_empty()) else { continue };
        // The parameter whose path ends with the moment's leaf path, with its shape. State of
        // its own shape (a factored second moment, a counter) or of no parameter's path is in
        // neither list.
        // The components are compared by text: a module passed as an object is named by its
        // attributes (`model.layers[0].attn.kernel.value`) while optax keys its moments by the
        // same path quoted (`mu['layers'][0]['attn']['kernel'].value`).
        let owner = params
            .iter()
            .copied()
            .find(|&j| same_suffix(&paths[j], leaf) && args[j].1 == args[i].1);
        if let Some(j) = owner {
            state.push((i, j));
        }
    }
    if state.is_empty() {
        return None;
    }
    Some(StepArgs { params, state, by: Some("names") })
}

fn by_repetition(args: &[(String, Vec<u64>)], runs: usize) -> Option<StepArgs> {
    let tensors: Vec<usize> = (0..args.len()).filter(|&i| !args[i].1.is_empty()).collect();
    let len = tensors.len();
    if runs < 2 || len == 0 || !len.is_multiple_of(runs) {
        return None;
    }
    let n = len / runs;
    let first = &tensors[..n];
    let same = tensors
        .chunks(n)
        .skip(1)
        .all(|c| c.iter().zip(first).all(|(&a, &b)| args[a].1 == args[b].1));
    if !same {
        return None;
    }
    let state = tensors
        .chunks(n)
        .skip(1)
        .flat_map(|c| c.iter().zip(first).map(|(&a, &b)| (a, b)))
        .collect();
    Some(StepArgs { params: first.to_vec(), state, by: Some("repetition") })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn args(v: &[(&str, &[u64])]) -> Vec<(String, Vec<u64>)> {
        v.iter().map(|(n, s)| ((*n).to_owned(), s.to_vec())).collect()
    }

    #[test]
    fn jax_names_pair_each_moment_with_its_parameter() {
        // As `jax.jit(step, donate_argnums=(0, 1, 2)).lower(p, mu, nu, ids)` names them.
        let a = args(&[
            ("p['fc.weight']", &[16, 16]),
            ("p['wte.weight']", &[100, 16]),
            ("mu['fc.weight']", &[16, 16]),
            ("mu['wte.weight']", &[100, 16]),
            ("nu['fc.weight']", &[16, 16]),
            ("nu['wte.weight']", &[100, 16]),
        ]);
        let s = split(&a, 2);
        assert_eq!(s.params, vec![0, 1]);
        assert_eq!(s.state, vec![(2, 0), (3, 1), (4, 0), (5, 1)]);
        assert_eq!(s.by, Some("names"));
    }

    #[test]
    fn optax_and_train_state_roots_are_state_and_counters_are_neither() {
        let a = args(&[
            ("state.params['Dense_0']['kernel']", &[4, 8]),
            ("state.params['Dense_0']['bias']", &[8]),
            ("state.opt_state[0].count", &[]),
            ("state.opt_state[0].mu['Dense_0']['kernel']", &[4, 8]),
            ("state.opt_state[0].mu['Dense_0']['bias']", &[8]),
            ("state.opt_state[0].nu['Dense_0']['kernel']", &[4, 8]),
            ("state.opt_state[0].nu['Dense_0']['bias']", &[8]),
        ]);
        let s = split(&a, 2);
        // The counter is optimizer state of no parameter: in neither list.
        assert_eq!(s.params, vec![0, 1]);
        assert_eq!(s.state, vec![(3, 0), (4, 1), (5, 0), (6, 1)]);
    }

    #[test]
    fn a_nested_optax_state_under_a_dict_key_finds_its_parameter() {
        // As `jax.export` names `train_step(state, x, y)` with
        // `state = {"params": ..., "batch_stats": ..., "opt": optax.adam(...).init(params)}`.
        let a = args(&[
            ("state['batch_stats']['BatchNorm_0']['mean']", &[64]),
            ("state['opt'][0].count", &[]),
            ("state['opt'][0].mu['BatchNorm_0']['scale']", &[64]),
            ("state['opt'][0].mu['Conv_0']['kernel']", &[3, 3, 3, 64]),
            ("state['opt'][0].nu['BatchNorm_0']['scale']", &[64]),
            ("state['opt'][0].nu['Conv_0']['kernel']", &[3, 3, 3, 64]),
            ("state['params']['BatchNorm_0']['scale']", &[64]),
            ("state['params']['Conv_0']['kernel']", &[3, 3, 3, 64]),
        ]);
        let s = split(&a, 2);
        assert_eq!(s.params, vec![0, 6, 7]);
        assert_eq!(s.state, vec![(2, 6), (3, 7), (4, 6), (5, 7)]);
    }

    #[test]
    fn flax_nnx_params_with_an_optax_state_pair_through_value_leaves() {
        // `nnx.split(model, nnx.Param, ...)` params and `optax.adamw(...).init(params)`, as
        // `jax.jit(step).lower(params, opt_state, ids).as_text(debug_info=True)` names them;
        // `['value']` is a value projection, `.value` the variable's payload.
        let a = args(&[
            ("params['blocks'][0]['attn']['value']['kernel'].value", &[64, 4, 16]),
            ("params['blocks'][1]['attn']['value']['kernel'].value", &[64, 4, 16]),
            ("opt_state[0].count", &[]),
            ("opt_state[0].mu['blocks'][0]['attn']['value']['kernel'].value", &[64, 4, 16]),
            ("opt_state[0].mu['blocks'][1]['attn']['value']['kernel'].value", &[64, 4, 16]),
            ("opt_state[0].nu['blocks'][0]['attn']['value']['kernel'].value", &[64, 4, 16]),
            ("opt_state[0].nu['blocks'][1]['attn']['value']['kernel'].value", &[64, 4, 16]),
        ]);
        let s = split(&a, 2);
        assert_eq!(s.params, vec![0, 1]);
        // Same shapes in both layers: the layer index in the path decides, not the shape.
        assert_eq!(s.state, vec![(3, 0), (4, 1), (5, 0), (6, 1)]);
    }

    #[test]
    fn a_module_passed_whole_pairs_its_attributes_with_quoted_moments() {
        // Flax's Gemma example (`examples/gemma/train.py`) hands `jax.jit` the `nnx.Module` and
        // the `nnx.Optimizer` themselves: parameters are named by attribute, the optax moments
        // by quoted key, `optimizer.step` and the metrics' totals are neither.
        let a = args(&[
            ("model.embedder.embedding.value", &[35008, 256]),
            ("model.layers[0].attn.kv_einsum.kernel.value", &[2, 1, 256, 128]),
            ("model.layers[1].attn.kv_einsum.kernel.value", &[2, 1, 256, 128]),
            ("optimizer.opt_state[0].count.value", &[]),
            ("optimizer.opt_state[0].mu['embedder']['embedding'].value", &[35008, 256]),
            (
                "optimizer.opt_state[0].mu['layers'][1]['attn']['kv_einsum']['kernel'].value",
                &[2, 1, 256, 128],
            ),
            (
                "optimizer.opt_state[0].nu['layers'][0]['attn']['kv_einsum']['kernel'].value",
                &[2, 1, 256, 128],
            ),
            ("optimizer.step.value", &[]),
            ("train_metrics.loss.total.value", &[]),
        ]);
        let s = split(&a, 2);
        assert_eq!(s.by, Some("names"));
        assert_eq!(s.state, vec![(4, 0), (5, 2), (6, 1)]);
        assert_eq!(s.params, vec![0, 1, 2, 8]);
    }

    #[test]
    fn keras_lists_pair_interleaved_moments_in_build_order() {
        // `jax.jit(train_step).lower(trainable, non_trainable, opt_vars, x, y)` of a Keras 3
        // model with `keras.optimizers.AdamW`: opt_vars are the iteration, the learning rate,
        // then each variable's momentum and velocity in turn.
        let a = args(&[
            ("trainable[0]", &[16, 32]),
            ("trainable[1]", &[32]),
            ("trainable[2]", &[32, 4]),
            ("trainable[3]", &[4]),
            ("opt_vars[0]", &[]),
            ("opt_vars[1]", &[]),
            ("opt_vars[2]", &[16, 32]),
            ("opt_vars[3]", &[16, 32]),
            ("opt_vars[4]", &[32]),
            ("opt_vars[5]", &[32]),
            ("opt_vars[6]", &[32, 4]),
            ("opt_vars[7]", &[32, 4]),
            ("opt_vars[8]", &[4]),
            ("opt_vars[9]", &[4]),
        ]);
        let s = split(&a, 2);
        assert_eq!(s.params, vec![0, 1, 2, 3]);
        assert_eq!(
            s.state,
            vec![(6, 0), (7, 0), (8, 1), (9, 1), (10, 2), (11, 2), (12, 3), (13, 3)]
        );
        assert_eq!(s.by, Some("order"));
        // Same shapes in the blocked order (m0, m1, v0, v1) where interleaving does not fit.
        let b = args(&[
            ("w[0]", &[8, 8]),
            ("w[1]", &[8]),
            ("s[0]", &[8, 8]),
            ("s[1]", &[8]),
            ("s[2]", &[8, 8]),
            ("s[3]", &[8]),
        ]);
        assert_eq!(split(&b, 2).state, vec![(2, 0), (3, 1), (4, 0), (5, 1)]);
        // A list that is not `copies` per parameter is no state.
        assert!(split(&b[..4], 2).state.is_empty());
        // The Keras guide's `train_step(state, data)`, `state = (trainable, non_trainable,
        // optimizer_variables, metrics)`: lists one level down.
        let c = args(&[
            ("state[0][0]", &[16, 32]),
            ("state[0][1]", &[32]),
            ("state[2][0]", &[]),
            ("state[2][1]", &[16, 32]),
            ("state[2][2]", &[16, 32]),
            ("state[2][3]", &[32]),
            ("state[2][4]", &[32]),
            ("state[3][0]", &[]),
        ]);
        let s = split(&c, 2);
        assert_eq!(s.params, vec![0, 1]);
        assert_eq!(s.state, vec![(3, 0), (4, 0), (5, 1), (6, 1)]);
    }

    #[test]
    fn a_parameter_named_like_a_moment_stays_a_parameter() {
        // `mu` and `v` inside the quoted path are modules (a value projection), not moments.
        let a = args(&[("params['mu']['kernel']", &[4, 4]), ("params['v']['kernel']", &[4, 4])]);
        let s = split(&a, 2);
        assert_eq!(s.params, vec![0, 1]);
        assert!(s.state.is_empty());
        assert_eq!(s.by, None);
    }

    #[test]
    fn a_factored_moment_matches_no_parameter() {
        let a = args(&[
            ("p['w']", &[64, 32]),
            ("opt_state.v_row['w']", &[64]),
            ("opt_state.mu['w']", &[64, 32]),
        ]);
        let s = split(&a, 2);
        assert_eq!(s.params, vec![0]);
        assert_eq!(s.state, vec![(2, 0)]);
    }

    #[test]
    fn unnamed_arguments_split_by_repeated_shapes() {
        let a = args(&[
            ("%arg0", &[16, 16]),
            ("%arg1", &[100, 16]),
            ("%arg2", &[16, 16]),
            ("%arg3", &[100, 16]),
            ("%arg4", &[]),
            ("%arg5", &[16, 16]),
            ("%arg6", &[100, 16]),
        ]);
        let s = split(&a, 2);
        assert_eq!(s.params, vec![0, 1]);
        assert_eq!(s.state, vec![(2, 0), (3, 1), (5, 0), (6, 1)]);
        assert_eq!(s.by, Some("repetition"));
        // No repetition: all parameters.
        let b = args(&[("%arg0", &[16, 16]), ("%arg1", &[100, 16]), ("%arg2", &[16])]);
        assert_eq!(split(&b, 2).params, vec![0, 1, 2]);
        assert!(split(&b, 2).state.is_empty());
        // Two identical layers under AdamW: three runs of two layers, not six of one.
        let layer: [(&str, &[u64]); 2] = [("%arg0", &[8, 8]), ("%arg1", &[8, 8])];
        let c = args(&layer.repeat(3));
        let s = split(&c, 2);
        assert_eq!(s.params, vec![0, 1]);
        assert_eq!(s.state, vec![(2, 0), (3, 1), (4, 0), (5, 1)]);
        // Without optimizer state (plain SGD) nothing is state.
        assert!(split(&c, 0).state.is_empty());
    }
}
