//! The public surface of the facade and of the crates it re-exports, as a snapshot: any change to
//! a public item (added, removed, renamed, or a changed signature) changes the snapshot, so it is
//! visible in review.
//!
//! The list is read from the sources with `syn`: for every module of `promptstack`,
//! `promptstack-core`, `promptstack-fence` and `promptstack-stream`, each `pub` item with its
//! signature (bodies left out), each `pub` field and variant, each `pub` method of an inherent
//! `impl`, each trait `impl` header, and each `pub use`. A module that is not public is marked
//! `(private)`: its `pub` items are reachable only through the re-exports listed.
//!
//! After an intended change to the API, update the snapshot and review it:
//! `INSTA_UPDATE=always cargo test -p promptstack --test it public_api` then `git diff` (or
//! `cargo insta review`).

#![allow(clippy::disallowed_methods)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::{Attribute, ImplItem, Item, TraitItem, Visibility};

/// What the walk collects: lines, some of them about a type (its methods and trait impls), and
/// the names of the public types, so that impls of crate-private types are left out.
#[derive(Default)]
struct Surface {
    lines: Vec<(Option<String>, String)>,
    types: HashSet<String>,
}

impl Surface {
    fn push(&mut self, line: String) {
        self.lines.push((None, line));
    }
}

/// One crate's public items, one per line, in source order per module.
fn surface(crate_name: &str, dir: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src");
    let mut out = Surface::default();
    walk(&root.join("lib.rs"), &root, crate_name, true, &mut out);
    let mut text = String::new();
    for (about, line) in out.lines {
        if about.is_none_or(|name| out.types.contains(&name)) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

/// The last identifier of a type path (`Agent` for `crate::Agent<'a>`).
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// The `#[cfg(...)]` attributes of an item, as a prefix.
fn cfgs(attrs: &[Attribute]) -> String {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .map(|a| format!("{} ", tokens(a)))
        .collect()
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

fn is_test(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && tokens(a).contains("test"))
}

fn tokens(item: &impl ToTokens) -> String {
    item.to_token_stream().to_string()
}

/// Parses one module file and records its items; recurses into its submodules.
fn walk(file: &Path, dir: &Path, path: &str, public: bool, out: &mut Surface) {
    let source = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let parsed =
        syn::parse_file(&source).unwrap_or_else(|e| panic!("cannot parse {}: {e}", file.display()));
    module_items(&parsed.items, dir, path, public, out);
}

fn module_items(items: &[Item], dir: &Path, path: &str, public: bool, out: &mut Surface) {
    let here = if public {
        path.to_owned()
    } else {
        format!("{path} (private)")
    };
    for item in items {
        match item {
            Item::Mod(module) => {
                if is_test(&module.attrs) {
                    continue;
                }
                let name = module.ident.to_string();
                let child = format!("{path}::{name}");
                let child_public = public && is_pub(&module.vis);
                if is_pub(&module.vis) {
                    out.push(format!("{}{here}: pub mod {name}", cfgs(&module.attrs)));
                }
                match &module.content {
                    Some((_, inner)) => {
                        module_items(inner, &dir.join(&name), &child, child_public, out)
                    }
                    None => {
                        let (file, child_dir) = module_file(dir, &name);
                        walk(&file, &child_dir, &child, child_public, out);
                    }
                }
            }
            Item::Use(using) if is_pub(&using.vis) => {
                out.push(format!("{}{here}: {}", cfgs(&using.attrs), tokens(using)));
            }
            Item::Fn(function) if is_pub(&function.vis) => {
                out.push(format!(
                    "{}{here}: pub {}",
                    cfgs(&function.attrs),
                    tokens(&function.sig)
                ));
            }
            Item::Struct(item) if is_pub(&item.vis) => {
                out.types.insert(item.ident.to_string());
                let mut shown = item.clone();
                shown.attrs.retain(|a| !a.path().is_ident("doc"));
                shown.attrs.retain(|a| a.path().is_ident("non_exhaustive"));
                let fields: Vec<String> = item
                    .fields
                    .iter()
                    .filter(|f| is_pub(&f.vis))
                    .map(|f| {
                        format!(
                            "pub {}: {}",
                            f.ident
                                .as_ref()
                                .map(ToString::to_string)
                                .unwrap_or_default(),
                            tokens(&f.ty)
                        )
                    })
                    .collect();
                out.push(format!(
                    "{}{here}: {}pub struct {}{} {{ {} }}",
                    cfgs(&item.attrs),
                    shown
                        .attrs
                        .iter()
                        .map(|a| format!("{} ", tokens(a)))
                        .collect::<String>(),
                    item.ident,
                    tokens(&item.generics),
                    fields.join(", ")
                ));
            }
            Item::Enum(item) if is_pub(&item.vis) => {
                out.types.insert(item.ident.to_string());
                let marker: String = item
                    .attrs
                    .iter()
                    .filter(|a| a.path().is_ident("non_exhaustive"))
                    .map(|a| format!("{} ", tokens(a)))
                    .collect();
                let variants: Vec<String> = item
                    .variants
                    .iter()
                    .map(|v| {
                        let mut v = v.clone();
                        v.attrs.clear();
                        for field in v.fields.iter_mut() {
                            field.attrs.clear();
                        }
                        tokens(&v)
                    })
                    .collect();
                out.push(format!(
                    "{}{here}: {marker}pub enum {}{} {{ {} }}",
                    cfgs(&item.attrs),
                    item.ident,
                    tokens(&item.generics),
                    variants.join(", ")
                ));
            }
            Item::Trait(item) if is_pub(&item.vis) => {
                out.types.insert(item.ident.to_string());
                let members: Vec<String> = item
                    .items
                    .iter()
                    .map(|member| match member {
                        TraitItem::Fn(f) => tokens(&f.sig),
                        TraitItem::Type(t) => format!("type {}", t.ident),
                        TraitItem::Const(c) => format!("const {}: {}", c.ident, tokens(&c.ty)),
                        other => tokens(other),
                    })
                    .collect();
                out.push(format!(
                    "{}{here}: pub trait {}{} {{ {} }}",
                    cfgs(&item.attrs),
                    item.ident,
                    tokens(&item.generics),
                    members.join("; ")
                ));
            }
            Item::Const(item) if is_pub(&item.vis) => {
                out.push(format!(
                    "{}{here}: pub const {}: {}",
                    cfgs(&item.attrs),
                    item.ident,
                    tokens(&item.ty)
                ));
            }
            Item::Static(item) if is_pub(&item.vis) => {
                out.push(format!(
                    "{}{here}: pub static {}: {}",
                    cfgs(&item.attrs),
                    item.ident,
                    tokens(&item.ty)
                ));
            }
            Item::Type(item) if is_pub(&item.vis) => {
                out.types.insert(item.ident.to_string());
                out.push(format!(
                    "{}{here}: pub type {}{} = {}",
                    cfgs(&item.attrs),
                    item.ident,
                    tokens(&item.generics),
                    tokens(&item.ty)
                ));
            }
            Item::Impl(block) if !is_test(&block.attrs) => {
                let header = match &block.trait_ {
                    Some((bang, trait_path, _)) => format!(
                        "impl{} {}{} for {}",
                        tokens(&block.generics),
                        if bang.is_some() { "!" } else { "" },
                        tokens(trait_path),
                        tokens(&block.self_ty)
                    ),
                    None => format!("impl{} {}", tokens(&block.generics), tokens(&block.self_ty)),
                };
                let methods: Vec<String> = block
                    .items
                    .iter()
                    .filter_map(|member| match member {
                        ImplItem::Fn(f) if block.trait_.is_none() && is_pub(&f.vis) => {
                            Some(format!("pub {}", tokens(&f.sig)))
                        }
                        ImplItem::Const(c) if block.trait_.is_none() && is_pub(&c.vis) => {
                            Some(format!("pub const {}: {}", c.ident, tokens(&c.ty)))
                        }
                        _ => None,
                    })
                    .collect();
                let about = type_name(&block.self_ty);
                if block.trait_.is_some() {
                    let line = format!("{}{here}: {header}", cfgs(&block.attrs));
                    out.lines.push((about, line));
                } else {
                    for method in methods {
                        let line = format!("{}{here}: {header} {{ {method} }}", cfgs(&block.attrs));
                        out.lines.push((about.clone(), line));
                    }
                }
            }
            Item::Macro(item) if item.mac.path.is_ident("macro_rules") => {
                let exported = item.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                if exported {
                    let name = item
                        .ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    out.push(format!("{here}: macro {name}!"));
                }
            }
            _ => {}
        }
    }
}

/// The file of module `name` declared in `dir`, and the directory of its own submodules.
fn module_file(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        (flat, dir.join(name))
    } else {
        (dir.join(name).join("mod.rs"), dir.join(name))
    }
}

#[test]
fn public_api() {
    let mut all = String::new();
    for (name, dir) in [
        ("promptstack", "promptstack"),
        ("promptstack_core", "promptstack-core"),
        ("promptstack_fence", "promptstack-fence"),
        ("promptstack_stream", "promptstack-stream"),
    ] {
        all.push_str(&surface(name, dir));
    }
    insta::assert_snapshot!(all);
}
