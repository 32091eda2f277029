#![allow(clippy::unwrap_used)]
#[test]
#[ignore]
fn dump() {
    let p = std::env::var("DUMP").unwrap();
    let m = tpuport_formats::open(std::path::Path::new(&p), &Default::default()).unwrap();
    let mut gs = vec![&m.graph];
    gs.extend(m.functions.iter());
    for g in gs {
        println!("== {}", g.name);
        for n in g.walk_nodes() {
            let ins: Vec<String> = n.inputs.iter().flatten().map(|v| format!("{}", v.0)).collect();
            println!(
                "{} {:?} -> {:?} attrs={:?} subs={}",
                n.op,
                ins,
                n.outputs,
                n.attrs,
                n.subgraphs.len()
            );
        }
    }
}
