//! Token counts are exact: the engine's count of every text the examples give it equals the
//! tokenizer library's own, for both bundled encodings.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use promptstack_core::tokens::Encoding;

use crate::support::examples;

#[test]
fn every_example_text_counts_as_the_library_counts_it() {
    let corpus =
        examples::example_texts(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples"));
    assert!(
        corpus.len() > 100,
        "the examples give {} texts",
        corpus.len()
    );
    let whole = corpus.concat();
    for (encoding, tokenizer) in [
        (Encoding::O200k, bpe_openai::o200k_base()),
        (Encoding::Cl100k, bpe_openai::cl100k_base()),
    ] {
        for text in &corpus {
            assert_eq!(
                encoding.count(text),
                tokenizer.count(text.as_str()),
                "{encoding:?}: {text:?}"
            );
        }
        // Once more with every piece memoised, and as one text.
        for text in &corpus {
            assert_eq!(encoding.count(text), tokenizer.count(text.as_str()));
        }
        assert_eq!(encoding.count(&whole), tokenizer.count(whole.as_str()));
    }
}
