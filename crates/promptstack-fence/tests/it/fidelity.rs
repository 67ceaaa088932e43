//! Fidelity: benign text with bracket runs, shifts, quoting and escapes passes through the fence
//! byte for byte. The fixtures are files under `tests/data/fence/benign/`.

use std::path::PathBuf;

use promptstack_fence::{Fence, FixedNonce, Nonce, Provenance, check, defang, find_all};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fence/benign")
}

/// Reads every fixture; the core forbids file IO in its code, not in the tests that feed it.
#[allow(clippy::disallowed_methods)]
pub fn fixtures() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(data_dir())
        .expect("fixture folder")
        .map(|entry| {
            let path = entry.expect("fixture entry").path();
            let name = path
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).expect("UTF-8 fixture");
            (name, text)
        })
        .collect();
    out.sort();
    out
}

fn check_fixture(name: &str, text: &str) {
    assert!(
        find_all(text).is_empty(),
        "{name}: findings {:?}",
        find_all(text)
    );
    assert_eq!(defang(text), text, "{name}: defang changed benign text");
    let fence = Fence::new(FixedNonce::new(
        Nonce::parse("a1b2c3d4e5f60718").expect("nonce"),
    ));
    let provenance = Provenance::file(name).expect("provenance");
    let wrapped = fence.wrap(text, &provenance).expect("wrap");
    let report = check(&wrapped.text);
    assert!(report.is_valid(), "{name}: {:?}", report.problems);
    let body = report.fence.expect("header").body;
    assert_eq!(
        &wrapped.text[body], text,
        "{name}: body is not byte-identical"
    );
    assert_eq!(wrapped.defanged, 0);
}

#[test]
fn at_least_twenty_fixtures() {
    assert!(fixtures().len() >= 20, "{} fixtures", fixtures().len());
}

#[test]
fn benign_fixtures_pass_through_byte_identical() {
    for (name, text) in fixtures() {
        check_fixture(&name, &text);
    }
}
