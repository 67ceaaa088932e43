//! The examples' text, as the token counter meets it: every distinct block text and half of every
//! send of every bundled example, assembled from scratch. Shared by the tokens bench and the
//! exactness test so both count the same corpus.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use promptstack_core::inject::manifests::{Manifest, Registry};
use promptstack_core::{Agent, SendContext, SpecFormat};

fn sorted(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.sort();
    paths
}

/// Every distinct text that assembling the examples' sends gives a token count to: each block's
/// text and each assembly's stable and volatile halves, in a fixed order.
pub fn example_texts(examples: &Path) -> Vec<String> {
    let mut texts = BTreeSet::new();
    for dir in sorted(examples) {
        let spec = dir.join("agent.toml");
        let sends = dir.join("sends");
        if !spec.exists() || !sends.exists() {
            continue;
        }
        let mut registry = Registry::new();
        for path in sorted(&dir.join("capabilities")) {
            let text = std::fs::read_to_string(&path).unwrap();
            registry.insert(Manifest::from_toml(&text, &path.display().to_string()).unwrap());
        }
        let agent = Agent::from_source_with_registry(
            &std::fs::read(&spec).unwrap(),
            &spec.display().to_string(),
            SpecFormat::Toml,
            &registry,
        )
        .expect("example spec compiles");
        for send in sorted(&sends) {
            if send.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let ctx =
                SendContext::from_json(&std::fs::read(&send).unwrap(), &send.display().to_string())
                    .unwrap();
            let assembly = agent.assemble_fresh(&ctx).unwrap();
            texts.extend(assembly.blocks().map(|b| b.text.clone()));
            texts.insert(assembly.stable().to_owned());
            texts.insert(assembly.volatile().to_owned());
        }
    }
    texts.remove("");
    texts.into_iter().collect()
}
