//! Fixed-seed smoke runs of the fence fuzz bodies: a few thousand generated inputs each, built
//! from fragments that matter to the fence (brackets, escapes, invisible characters, keywords,
//! control tokens) mixed with random bytes.

use promptstack_fence::fuzzing::{fence_attribute, fence_defang, fence_layered, fence_wrap};

/// A small deterministic generator (xorshift64*), so failures reproduce exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "<",
    "<<",
    "<<<",
    ">",
    ">>>",
    "‹‹‹",
    "›››",
    "&lt;",
    "&gt;",
    "&lt",
    "&#60;",
    "&#x3c;",
    "&amp;",
    "%3C",
    "%3E",
    "%25",
    "%EF%BC%9C",
    "\\u003c",
    "\\x3e",
    "\\u{3c}",
    "\u{200b}",
    "\u{feff}",
    "\u{e0041}",
    "\u{301}",
    "⋘",
    "⋙",
    "≪",
    "《",
    "＜",
    "＞",
    "⟨",
    "〈",
    "«",
    "end",
    "_",
    "-",
    " ",
    "\n",
    "tool_result",
    "web_content",
    "file_content",
    "mcp_resource",
    "web_selection",
    "\"",
    "origin=\"",
    "|",
    "｜",
    "im_start",
    "eot_id",
    "[",
    "]",
    "INST",
    "/",
    "SYS",
    "f00dfacecafebeef",
    "0123456789abcdef",
    "é",
    "中",
    "&#6",
    "2;",
    "&%2360;",
    "%26lt;",
    "\u{2028}",
    "\r\n",
    "\\",
];

fn generate(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(24) {
        if rng.below(5) == 0 {
            out.push(rng.next() as u8);
        } else {
            out.extend_from_slice(FRAGMENTS[rng.below(FRAGMENTS.len())].as_bytes());
        }
    }
    out
}

fn smoke(seed: u64, runs: usize, body: fn(&[u8])) {
    let mut rng = Rng(seed);
    for _ in 0..runs {
        body(&generate(&mut rng));
    }
}

#[test]
fn fence_wrap_smoke() {
    smoke(0x5eed_0001, 3000, fence_wrap);
}

#[test]
fn fence_defang_smoke() {
    smoke(0x5eed_0002, 4000, fence_defang);
}

#[test]
fn fence_layered_smoke() {
    let mut rng = Rng(0x5eed_0004);
    for _ in 0..4000 {
        let mut input: Vec<u8> = (0..6).map(|_| rng.next() as u8).collect();
        input.extend(generate(&mut rng));
        fence_layered(&input);
    }
}

#[test]
fn fence_attribute_smoke() {
    smoke(0x5eed_0003, 3000, fence_attribute);
}

#[test]
fn fuzz_bodies_accept_edge_inputs() {
    for input in [
        &b""[..],
        b"\0",
        b"\xff\xfe",
        "<<<end_tool_result>>>".as_bytes(),
        &[b'<'; 5000],
    ] {
        fence_wrap(input);
        fence_defang(input);
        fence_attribute(input);
        fence_layered(input);
    }
}
