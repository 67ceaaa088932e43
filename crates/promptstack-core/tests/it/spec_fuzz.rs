//! Fixed-seed smoke runs of the spec and send fuzz bodies: mutations of the bundled examples
//! (byte flips, deletions, insertions of syntax characters, splices between examples).

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use promptstack_core::fuzzing::{conversation_load, provider_rules, send_load, spec_load};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SYNTAX: &[&[u8]] = &[
    b"{{",
    b"}}",
    b"{%",
    b"%}",
    b"[",
    b"]",
    b"\"",
    b"'''",
    b"\n",
    b"=",
    b",",
    b"{",
    b"}",
    b"\\",
    b"\xff",
    b"\xe2\x80\x8b",
    b"when = \"",
    b"template = \"{{ now.date }}\"",
    b"trust = \"user\"",
    b"stability = \"volatile\"",
    b"[[blocks]]\nid = \"x\"\n",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(8) {
        let at = rng.below(data.len() + 1);
        match rng.below(5) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let end = (at + rng.below(64)).min(data.len());
                data.drain(at.min(end)..end);
            }
            2 => {
                let piece = SYNTAX[rng.below(SYNTAX.len())];
                data.splice(at..at, piece.iter().copied());
            }
            3 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len());
                let end = (from + rng.below(256)).min(other.len());
                data.splice(at..at, other[from..end].iter().copied());
            }
            _ => {}
        }
    }
    data
}

fn seeds(extension: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out = Vec::new();
    let mut visit = vec![root];
    while let Some(dir) = visit.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "node_modules") {
                    visit.push(path);
                }
            } else if path.extension().is_some_and(|e| e == extension) {
                out.push(std::fs::read(&path).unwrap());
            }
        }
    }
    out.sort();
    assert!(!out.is_empty());
    out
}

#[test]
fn spec_fuzz_smoke() {
    let mut specs = seeds("toml");
    let jsons: Vec<Vec<u8>> = seeds("json")
        .into_iter()
        .filter(|s| s.len() < 20_000)
        .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for i in 0..600 {
        let toml = i % 3 != 2;
        let pool = if toml { &mut specs } else { &mut jsons.clone() };
        let mut data = vec![if toml { 0 } else { 1 }];
        data.extend(mutate(&mut rng, pool));
        spec_load(&data);
    }
    // The unmutated examples compile.
    for spec in specs {
        let mut data = vec![0];
        data.extend(spec);
        spec_load(&data);
    }
}

#[test]
fn send_fuzz_smoke() {
    let sends = seeds("json");
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for _ in 0..2000 {
        send_load(&mutate(&mut rng, &sends));
    }
}

#[test]
fn provider_rules_fuzz_smoke() {
    let seeds = vec![
        promptstack_core::provider::BUNDLED_RULES
            .as_bytes()
            .to_vec(),
    ];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    provider_rules(&seeds[0]);
    for _ in 0..400 {
        provider_rules(&mutate(&mut rng, &seeds));
    }
}

#[test]
fn conversation_fuzz_smoke() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../promptstack-cli/tests/data/conversations");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|entry| std::fs::read(entry.path()).unwrap())
        .collect();
    seeds.sort();
    let mut rng = Rng(0x9E6C_63D0_676A_9A99);
    for seed in &seeds {
        conversation_load(seed);
    }
    for _ in 0..2000 {
        conversation_load(&mutate(&mut rng, &seeds));
    }
}
