//! The bundled examples, loaded the same way for every bench and test that needs them: each
//! example's compiled agent (with the registry capabilities of its `capabilities/` folder) and its
//! sends, the examples' text as the token counter meets it, and the chat assistant's agent and
//! sends on their own.

// Each bench, test and example that includes this file uses some of it.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use promptstack_core::inject::manifests::{Manifest, Registry};
use promptstack_core::{Agent, SendContext, SpecFormat};

/// One example: its folder's name, its compiled agent, and its sends by file stem.
pub type Example = (String, Agent, Vec<(String, SendContext)>);

/// The entries of `dir` (none when it cannot be read), sorted by path.
pub fn sorted(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.sort();
    paths
}

/// Every example under `root` that has an `agent.toml` and a `sends/` folder, in name order,
/// with its JSON sends in name order.
pub fn examples(root: &Path) -> Vec<Example> {
    let mut out = Vec::new();
    for dir in sorted(root) {
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
        let sends = sorted(&sends)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| {
                let ctx =
                    SendContext::from_json(&std::fs::read(&p).unwrap(), &p.display().to_string())
                        .unwrap();
                (p.file_stem().unwrap().to_string_lossy().into_owned(), ctx)
            })
            .collect();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, agent, sends));
    }
    out
}

/// Every distinct text that assembling the examples' sends gives a token count to: each block's
/// text and each assembly's stable and volatile halves, in a fixed order. Shared by the tokens
/// bench and the exactness test so both count the same corpus.
pub fn example_texts(root: &Path) -> Vec<String> {
    let mut texts = BTreeSet::new();
    for (_, agent, sends) in examples(root) {
        for (_, ctx) in &sends {
            let assembly = agent.assemble_fresh(ctx).unwrap();
            texts.extend(assembly.blocks().map(|b| b.text.clone()));
            texts.insert(assembly.stable().to_owned());
            texts.insert(assembly.volatile().to_owned());
        }
    }
    texts.remove("");
    texts.into_iter().collect()
}

/// The chat assistant example's folder.
pub fn chat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant")
}

/// The chat assistant example's agent.
pub fn chat_agent() -> Agent {
    let spec = std::fs::read(chat_dir().join("agent.toml")).expect("read agent.toml");
    Agent::from_source(&spec, "agent.toml", SpecFormat::Toml).expect("the example spec loads")
}

/// The bytes of the chat assistant example's send `sends/{name}.json`.
pub fn chat_send_bytes(name: &str) -> Vec<u8> {
    std::fs::read(chat_dir().join("sends").join(format!("{name}.json"))).expect("read the send")
}
