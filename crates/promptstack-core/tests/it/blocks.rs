//! Blocks and halves agree: an assembly writes each half once and makes its blocks only when asked,
//! so every example send checks that the blocks made afterwards tell exactly where their text is,
//! and that a reused stable part or volatile unit gives what rendering afresh gives.

#![allow(clippy::disallowed_methods)] // The test reads the examples from disk.

use std::path::Path;

use promptstack_core::spec::{Placement, Stability};
use promptstack_core::{Agent, Assembly, SendContext};

/// Every example with its sends.
fn examples() -> Vec<(String, Agent, Vec<SendContext>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    crate::support::examples::examples(&root)
        .into_iter()
        .map(|(name, agent, sends)| (name, agent, sends.into_iter().map(|(_, s)| s).collect()))
        .collect()
}

/// Everything observable about an assembly and its compositions, as one comparable value.
fn observe(agent: &Agent, assembly: &Assembly) -> String {
    let mut out = serde_json::to_string(assembly).unwrap();
    for target in agent.target_ids() {
        if let Ok(composition) = assembly.compose(target) {
            out.push_str(&serde_json::to_string(&composition).unwrap());
        }
    }
    out
}

/// The included body blocks, joined with the separator, are the body text; each one's range
/// slices its text out of it; every other block has no range, and an excluded one no text.
fn check_blocks(what: &str, assembly: &Assembly) {
    let full = assembly.full();
    // All body texts, then the stable and the volatile ones.
    let mut texts: [Vec<&str>; 3] = Default::default();
    for block in assembly.blocks() {
        if !block.is_included() {
            assert!(
                block.text.is_empty(),
                "{what}: excluded `{}` has text",
                block.id
            );
            assert!(
                block.range.is_none(),
                "{what}: excluded `{}` has a range",
                block.id
            );
            continue;
        }
        if block.placement != Placement::Body {
            assert!(
                block.range.is_none(),
                "{what}: placed `{}` has a range",
                block.id
            );
            continue;
        }
        texts[0].push(&block.text);
        texts[1 + usize::from(block.stability == Stability::Volatile)].push(&block.text);
        let range = block
            .range
            .clone()
            .expect("an included body block has a range");
        assert_eq!(
            &full[range], block.text,
            "{what}: the range of `{}`",
            block.id
        );
    }
    let [joined, stable, volatile] = texts.map(|t| t.join(assembly.separator()));
    assert_eq!(joined, full, "{what}: the body blocks joined");
    assert_eq!(stable, assembly.stable(), "{what}: the stable half");
    assert_eq!(volatile, assembly.volatile(), "{what}: the volatile half");
}

#[test]
fn blocks_tell_where_their_text_is_and_reuse_changes_nothing() {
    let mut checked = 0;
    for (name, agent, sends) in examples() {
        for (i, send) in sends.iter().enumerate() {
            let what = format!("{name} send {i}");
            let Ok(fresh) = agent.assemble_fresh(send) else {
                // A send the example keeps to show a refusal.
                assert!(agent.assemble(send).is_err(), "{what}");
                continue;
            };
            check_blocks(&what, &fresh);
            // The first `assemble` renders and remembers; the second reuses the stable part and
            // every volatile unit.
            let first = agent.assemble(send).unwrap();
            let again = agent.assemble(send).unwrap();
            check_blocks(&what, &again);
            let expected = observe(&agent, &fresh);
            assert_eq!(observe(&agent, &first), expected, "{what}: first assembly");
            assert_eq!(observe(&agent, &again), expected, "{what}: reused assembly");
            for target in agent.target_ids() {
                let Ok(composition) = again.compose(target) else {
                    continue;
                };
                for part in &composition.parts {
                    let text = match part.slot {
                        promptstack_core::compose::Slot::System => &composition.system,
                        promptstack_core::compose::Slot::User => &composition.user,
                    };
                    let block = again.block(&part.id).unwrap();
                    assert_eq!(&text[part.range.clone()], block.text, "{what}: {target}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} example sends were checked");
}
