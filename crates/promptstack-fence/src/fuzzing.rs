//! Fuzz target bodies, shared by `fuzz/` (cargo-fuzz) and the fixed-seed smoke runs in `cargo test`.
//!
//! Each function takes arbitrary bytes, exercises one parser or transformer with bounded work, and
//! panics if a property that must hold for every input is violated. Only with the `fuzzing`
//! feature; not part of the stable API.

use crate::attribute::{decode_attribute, encode_attribute, is_safe_byte};
use crate::{
    ContentKind, Fence, FenceErrorKind, FixedNonce, MaxBytes, Nonce, Provenance, check, defang,
    find_all,
};

/// The most input bytes a fence fuzz body looks at, so every run does bounded work.
const FENCE_MAX_INPUT: usize = 64 * 1024;

fn fence_text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&data[..data.len().min(FENCE_MAX_INPUT)])
}

/// Wraps arbitrary content (the first byte picks a byte limit, 0 for none) and checks that the
/// result is exactly one valid fence: G1, G2, G3 through [`check`], and the body equal to the
/// defanged content when nothing was cut.
pub fn fence_wrap(data: &[u8]) {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let content = fence_text(rest);
    let nonce = Nonce::parse("f00dfacecafebeef").expect("a valid fixed nonce");
    let mut fence = Fence::new(FixedNonce::new(nonce.clone()));
    if limit != 0 {
        fence = fence.with_limit(MaxBytes(usize::from(limit) * 4));
    }
    let provenance = Provenance::tool_result("fuzz_tool").expect("a valid tool name");
    match fence.wrap(&content, &provenance) {
        Ok(wrapped) => {
            let report = check(&wrapped.text);
            assert!(report.is_valid(), "invalid fence: {:?}", report.problems);
            let info = report.fence.expect("a valid report has a header");
            assert_eq!(info.nonce, nonce);
            assert_eq!(info.kind, ContentKind::ToolResult);
            assert!(wrapped.text.ends_with(">>>"), "the closing marker is last");
            let body = &wrapped.text[info.body];
            if wrapped.truncated.is_none() {
                assert_eq!(body, defang(&content), "the body is the defanged content");
            } else {
                assert!(
                    body.len() <= usize::from(limit) * 4 || body.starts_with("\n[truncated"),
                    "the body exceeds its limit"
                );
            }
        }
        Err(error) => {
            assert_eq!(error.kind(), FenceErrorKind::NonceCollision, "{error}");
            assert!(
                content.to_ascii_lowercase().contains(nonce.as_str()),
                "a collision without the nonce in the content"
            );
        }
    }
}

/// Defangs arbitrary text: the output holds no finding, defanging again changes nothing (G4),
/// and text without findings comes back unchanged.
pub fn fence_defang(data: &[u8]) {
    let text = fence_text(data);
    let findings = find_all(&text);
    let once = defang(&text);
    assert!(
        find_all(&once).is_empty(),
        "defanged text still holds a finding"
    );
    assert_eq!(defang(&once), once, "defang is not idempotent");
    if findings.is_empty() {
        assert_eq!(once, text, "text without findings changed");
    }
}

/// Encodes arbitrary text as an attribute value and builds provenances from it: the encoding is
/// safe and decodes back exactly, and an accepted provenance writes a marker line that parses
/// back (G7).
pub fn fence_attribute(data: &[u8]) {
    let text = fence_text(&data[..data.len().min(1024)]);
    let encoded = encode_attribute(&text);
    assert!(
        encoded.bytes().all(|b| b == b'%' || is_safe_byte(b)),
        "unsafe byte in an encoded attribute"
    );
    assert_eq!(decode_attribute(&encoded).as_deref(), Some(text.as_ref()));
    let fence = Fence::new(FixedNonce::new(
        Nonce::parse("0123456789abcdef").expect("a valid fixed nonce"),
    ));
    for kind in ContentKind::ALL {
        let Ok(provenance) = Provenance::new(kind, Some(&text), Some(&text)) else {
            continue;
        };
        let Ok(wrapped) = fence.wrap("x", &provenance) else {
            continue;
        };
        assert_eq!(wrapped.text.lines().count(), 3, "the marker line broke");
        let report = check(&wrapped.text);
        assert!(report.is_valid(), "invalid fence: {:?}", report.problems);
    }
}

/// Ways to write `<` that a reader who decodes repeatedly turns back into `<`: escapes of every
/// kind, layered in every order, and look-alikes.
const LAYERED_LT: &[&str] = &[
    "<",
    "&lt;",
    "&#60;",
    "&#x3c;",
    "%3C",
    "%253C",
    "&%2360;",
    "%26lt;",
    "%2526lt;",
    "&#37;3C",
    "%26%2360;",
    "&amp;lt;",
    "&amp;%2360;",
    "\\u003c",
    "%5Cu003c",
    "&#92;u003c",
    "\\\\x3c",
    "＜",
    "﹤",
];

/// Characters a reader may take for a line break or for nothing, put inside a marker.
const SEPARATORS: &[&str] = &[
    "\u{2028}", "\u{2029}", "\r\n", "\n", "\r", "\u{85}", "\u{200b}", "\u{feff}", " ", "",
];

/// Builds a forged closing marker from the input (each `<` in a layered encoding, a separator
/// inside the keyword) and surrounds it with arbitrary text: the detector must find the marker,
/// and wrapping must give one valid fence (G1–G3) whose body defangs to itself (G4) and holds no
/// raw forgery.
pub fn fence_layered(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    let pick = |table: &[&'static str], b: u8| table[usize::from(b) % table.len()];
    let (keyword, cut_at) = match head[4] % 3 {
        0 => ("end_web_content", usize::from(head[5]) % 16),
        1 => ("end_tool_result", usize::from(head[5]) % 16),
        _ => ("end_page_0123456789abcdef", usize::from(head[5]) % 4),
    };
    let cut = cut_at.min(keyword.len());
    let mut forged = String::new();
    for &b in &head[..3] {
        forged.push_str(pick(LAYERED_LT, b));
    }
    forged.push_str(&keyword[..cut]);
    forged.push_str(pick(SEPARATORS, head[3]));
    forged.push_str(&keyword[cut..]);
    forged.push_str(">>>");
    let found = find_all(&forged);
    assert!(
        found.iter().any(|f| f.kind == crate::FindingKind::Marker),
        "a layered forgery went unseen: {forged:?}"
    );
    let noise = fence_text(&rest[..rest.len().min(4096)]);
    let content = format!("{noise}{forged}{noise}");
    let once = defang(&content);
    assert_eq!(defang(&once), once, "defang is not idempotent");
    assert!(!once.contains(forged.as_str()), "the forgery survived");
    let nonce = Nonce::parse("f00dfacecafebeef").expect("a valid fixed nonce");
    let fence = Fence::new(FixedNonce::new(nonce.clone()));
    let provenance = Provenance::page("https://example.com/").expect("a valid origin");
    match fence.wrap(&content, &provenance) {
        Ok(wrapped) => {
            let report = check(&wrapped.text);
            assert!(report.is_valid(), "invalid fence: {:?}", report.problems);
            let lower = wrapped.text.to_ascii_lowercase();
            assert_eq!(lower.matches(nonce.as_str()).count(), 2, "G2");
        }
        Err(error) => {
            assert_eq!(error.kind(), FenceErrorKind::NonceCollision, "{error}");
        }
    }
}
