//! The public surface of the facade and of the crates it re-exports, as a snapshot: any change to
//! a public item (added, removed, renamed, or a changed signature) changes the snapshot, so it is
//! visible in review.
//!
//! The list is read from the sources with `syn`: for every module of `promptstack`,
//! `promptstack-core`, `promptstack-fence`, `promptstack-stream` and `promptstack-template` (the
//! core's template layer, whose records and layers the core re-exports), each `pub` item with its
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

/// The facade and the crates whose public items it reaches: (crate name, folder under `crates/`).
const CRATES: [(&str, &str); 5] = [
    ("promptstack", "promptstack"),
    ("promptstack_core", "promptstack-core"),
    ("promptstack_fence", "promptstack-fence"),
    ("promptstack_stream", "promptstack-stream"),
    ("promptstack_template", "promptstack-template"),
];

#[test]
fn public_api() {
    let mut all = String::new();
    for (name, dir) in CRATES {
        all.push_str(&surface(name, dir));
    }
    insta::assert_snapshot!(all);
}

// ---------------------------------------------------------------------------------------------
// One path per item. The rule: the crate root holds the headline types, each defined in a module
// that is not public (or in a private submodule of a public one); every other public item is
// reached only through the public module that defines or re-exports it. A `pub use` that makes
// an item (or a module) reachable a second time — a root re-export of an item whose module is
// public, a module alias next to a glob re-export, a re-export of another public module's item —
// fails the check below, which follows every `pub use` (renames and globs included) to what it
// names.
// ---------------------------------------------------------------------------------------------

/// What a name is bound to in a module.
#[derive(Clone, Debug)]
enum Binding {
    /// An item defined here: its id (`crate::module::Name`).
    Item(String),
    /// A module declared here: its path.
    Module(String),
    /// A `use` of this path.
    Use(Vec<String>),
}

/// What a path names in the end.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Target {
    Item(String),
    Module(String),
    /// Something outside the crates read (`std`, `serde_json`, …), by the path written.
    External(String),
}

#[derive(Default)]
struct Namespace {
    /// `(name, binding, public)` in source order.
    names: Vec<(String, Binding, bool)>,
    /// `(path, public)` of glob imports.
    globs: Vec<(Vec<String>, bool)>,
    parent: Option<String>,
    krate: String,
}

/// The modules of the crates read, by path (`promptstack_core::spec`).
#[derive(Default)]
struct Crates {
    modules: std::collections::HashMap<String, Namespace>,
}

fn flatten_use(
    tree: &syn::UseTree,
    prefix: &[String],
    names: &mut Vec<(String, Vec<String>)>,
    globs: &mut Vec<Vec<String>>,
) {
    let with = |ident: &syn::Ident| {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        path
    };
    match tree {
        syn::UseTree::Path(p) => flatten_use(&p.tree, &with(&p.ident), names, globs),
        syn::UseTree::Name(n) => {
            let path = with(&n.ident);
            names.push((path.last().cloned().unwrap_or_default(), path));
        }
        syn::UseTree::Rename(r) => names.push((r.rename.to_string(), with(&r.ident))),
        syn::UseTree::Glob(_) => globs.push(prefix.to_vec()),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                flatten_use(item, prefix, names, globs);
            }
        }
    }
}

impl Crates {
    fn read(&mut self, krate: &str, dir: &str) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(dir)
            .join("src");
        let source = std::fs::read_to_string(root.join("lib.rs")).unwrap();
        let parsed = syn::parse_file(&source).unwrap();
        self.module(&parsed.items, &root, krate, None, krate);
    }

    fn module(
        &mut self,
        items: &[Item],
        dir: &Path,
        path: &str,
        parent: Option<&str>,
        krate: &str,
    ) {
        let mut ns = Namespace {
            parent: parent.map(str::to_owned),
            krate: krate.to_owned(),
            ..Namespace::default()
        };
        for item in items {
            let (name, vis) = match item {
                Item::Struct(i) => (&i.ident, &i.vis),
                Item::Enum(i) => (&i.ident, &i.vis),
                Item::Union(i) => (&i.ident, &i.vis),
                Item::Trait(i) => (&i.ident, &i.vis),
                Item::Fn(i) => (&i.sig.ident, &i.vis),
                Item::Const(i) => (&i.ident, &i.vis),
                Item::Static(i) => (&i.ident, &i.vis),
                Item::Type(i) => (&i.ident, &i.vis),
                Item::Mod(module) => {
                    if is_test(&module.attrs) {
                        continue;
                    }
                    let name = module.ident.to_string();
                    let child = format!("{path}::{name}");
                    match &module.content {
                        Some((_, inner)) => {
                            self.module(inner, &dir.join(&name), &child, Some(path), krate)
                        }
                        None => {
                            let (file, child_dir) = module_file(dir, &name);
                            let source = std::fs::read_to_string(&file)
                                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
                            let parsed = syn::parse_file(&source).unwrap();
                            self.module(&parsed.items, &child_dir, &child, Some(path), krate);
                        }
                    }
                    ns.names
                        .push((name, Binding::Module(child), is_pub(&module.vis)));
                    continue;
                }
                Item::Use(using) => {
                    if is_test(&using.attrs) {
                        continue;
                    }
                    let (mut names, mut globs) = (Vec::new(), Vec::new());
                    flatten_use(&using.tree, &[], &mut names, &mut globs);
                    let public = is_pub(&using.vis);
                    for (name, target) in names {
                        if name != "_" {
                            ns.names.push((name, Binding::Use(target), public));
                        }
                    }
                    ns.globs.extend(globs.into_iter().map(|g| (g, public)));
                    continue;
                }
                _ => continue,
            };
            if is_test(item_attrs(item)) {
                continue;
            }
            ns.names.push((
                name.to_string(),
                Binding::Item(format!("{path}::{name}")),
                is_pub(vis),
            ));
        }
        self.modules.insert(path.to_owned(), ns);
    }

    /// What `name` means in `module`, through its own bindings, then its glob imports.
    fn lookup(&self, module: &str, name: &str, depth: u32) -> Vec<Target> {
        assert!(depth < 64, "the re-exports of {module} loop");
        let Some(ns) = self.modules.get(module) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (bound, binding, _) in &ns.names {
            if bound == name {
                found.extend(self.binding(module, binding, depth + 1));
            }
        }
        if found.is_empty() {
            for (glob, _) in &ns.globs {
                for target in self.resolve(module, glob, depth + 1) {
                    if let Target::Module(inner) = target {
                        found.extend(self.lookup_public(&inner, name, depth + 1));
                    }
                }
            }
        }
        found
    }

    /// What `name` means as a path prefix in `module`: a module declared there if there is one
    /// (a prefix names a module, so a function of the same name does not count).
    fn lookup_module(&self, module: &str, name: &str, depth: u32) -> Vec<Target> {
        let declared: Vec<Target> = self.modules[module]
            .names
            .iter()
            .filter(|(bound, binding, _)| bound == name && matches!(binding, Binding::Module(_)))
            .flat_map(|(_, binding, _)| self.binding(module, binding, depth + 1))
            .collect();
        if declared.is_empty() {
            self.lookup(module, name, depth)
        } else {
            declared
        }
    }

    /// What `name` means in `module` from outside it: its public bindings and public globs.
    fn lookup_public(&self, module: &str, name: &str, depth: u32) -> Vec<Target> {
        self.public_names(module, depth)
            .into_iter()
            .filter(|(bound, _)| bound == name)
            .flat_map(|(_, target)| target)
            .collect()
    }

    fn binding(&self, module: &str, binding: &Binding, depth: u32) -> Vec<Target> {
        match binding {
            Binding::Item(id) => vec![Target::Item(id.clone())],
            Binding::Module(path) => vec![Target::Module(path.clone())],
            Binding::Use(path) => self.resolve(module, path, depth),
        }
    }

    /// What `path` (as written in a `use` in `module`) names.
    fn resolve(&self, module: &str, path: &[String], depth: u32) -> Vec<Target> {
        let Some((first, rest)) = path.split_first() else {
            return vec![Target::Module(module.to_owned())];
        };
        let ns = &self.modules[module];
        let start = match first.as_str() {
            "crate" => vec![Target::Module(ns.krate.clone())],
            "self" => vec![Target::Module(module.to_owned())],
            "super" => vec![Target::Module(
                ns.parent.clone().expect("super of a crate root"),
            )],
            // Another crate read here (none of them names a module after a crate).
            name if self.modules.get(name).is_some_and(|m| m.parent.is_none()) => {
                vec![Target::Module(name.to_owned())]
            }
            name => {
                let local = if rest.is_empty() {
                    self.lookup(module, name, depth)
                } else {
                    self.lookup_module(module, name, depth)
                };
                if local.is_empty() {
                    return vec![Target::External(path.join("::"))];
                }
                local
            }
        };
        let mut current = start;
        for (i, segment) in rest.iter().enumerate() {
            let mut next = Vec::new();
            for target in &current {
                if let Target::Module(inner) = target {
                    next.extend(if segment == "super" {
                        vec![Target::Module(self.modules[inner].parent.clone().unwrap())]
                    } else if i + 1 < rest.len() {
                        self.lookup_module(inner, segment, depth)
                    } else {
                        self.lookup(inner, segment, depth)
                    });
                }
            }
            if next.is_empty() {
                if current.iter().any(|t| matches!(t, Target::External(_))) {
                    return vec![Target::External(path.join("::"))];
                }
                panic!(
                    "in {module}: `{}` does not resolve at `{segment}` (segment {})",
                    path.join("::"),
                    i + 1
                );
            }
            current = next;
        }
        current
    }

    /// Every name a module shows to the outside, with what it names: its public bindings, then
    /// what its public globs bring in (unless a binding of its own shadows it).
    fn public_names(&self, module: &str, depth: u32) -> Vec<(String, Vec<Target>)> {
        assert!(depth < 64, "the glob re-exports of {module} loop");
        let Some(ns) = self.modules.get(module) else {
            return Vec::new();
        };
        let mut out: Vec<(String, Vec<Target>)> = ns
            .names
            .iter()
            .filter(|(_, _, public)| *public)
            .map(|(name, binding, _)| (name.clone(), self.binding(module, binding, depth + 1)))
            .collect();
        let own: HashSet<&str> = ns.names.iter().map(|(n, _, _)| n.as_str()).collect();
        for (glob, public) in &ns.globs {
            if !public {
                continue;
            }
            for target in self.resolve(module, glob, depth + 1) {
                if let Target::Module(inner) = target {
                    for (name, targets) in self.public_names(&inner, depth + 1) {
                        if !own.contains(name.as_str()) {
                            out.push((name, targets));
                        }
                    }
                }
            }
        }
        out
    }

    /// Every public path of crate `krate`, by what it names.
    fn paths(&self, krate: &str) -> std::collections::BTreeMap<Target, Vec<String>> {
        let mut found: std::collections::BTreeMap<Target, Vec<String>> = Default::default();
        let mut seen = HashSet::new();
        let mut queue = vec![(krate.to_owned(), krate.to_owned())];
        seen.insert(krate.to_owned());
        while let Some((module, shown)) = queue.pop() {
            for (name, targets) in self.public_names(&module, 0) {
                let path = format!("{shown}::{name}");
                for target in targets {
                    if let Target::Module(inner) = &target
                        && seen.insert(inner.clone())
                    {
                        queue.push((inner.clone(), path.clone()));
                    }
                    found.entry(target).or_default().push(path.clone());
                }
            }
        }
        found
    }

    /// Each item (or module) reachable by more than one public path of `krate`.
    fn duplicates(&self, krate: &str) -> Vec<String> {
        self.paths(krate)
            .into_iter()
            .filter(|(_, paths)| paths.len() > 1)
            .map(|(target, mut paths)| {
                paths.sort();
                format!("{target:?} is reachable as {}", paths.join(" and "))
            })
            .collect()
    }
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Struct(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Const(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        _ => &[],
    }
}

/// The facade and the crates it re-exports, read from their sources.
fn workspace_crates() -> Crates {
    let mut crates = Crates::default();
    for (name, dir) in CRATES {
        crates.read(name, dir);
    }
    crates
}

#[test]
fn each_public_item_is_reachable_by_one_path() {
    let crates = workspace_crates();
    let mut duplicates = Vec::new();
    for (krate, _) in CRATES {
        duplicates.extend(crates.duplicates(krate));
    }
    assert!(
        duplicates.is_empty(),
        "public items reachable by more than one path:\n{}",
        duplicates.join("\n")
    );
}

/// The check itself: it finds each way of reaching an item twice.
#[test]
fn the_one_path_check_finds_every_kind_of_duplicate() {
    let source = r#"
        pub mod block { pub struct Block; pub enum Origin { A } }
        mod agent { pub struct Agent; }
        pub mod report { pub use crate::block::Origin as Source; }
        pub use agent::Agent;
        pub use block::Block;
        pub use self::block as blocks;
    "#;
    let mut crates = Crates::default();
    let parsed = syn::parse_file(source).unwrap();
    crates.module(&parsed.items, Path::new("/nonexistent"), "lib", None, "lib");
    let facade = "pub mod extra { pub use lib::Agent; } pub use lib as core; pub use lib::*;";
    let parsed = syn::parse_file(facade).unwrap();
    crates.module(&parsed.items, Path::new("/nonexistent"), "app", None, "app");

    let found = crates.duplicates("lib").join("\n");
    // A root re-export of an item whose module is public.
    assert!(
        found.contains("lib::Block and lib::block::Block"),
        "{found}"
    );
    // A re-export (renamed) of another public module's item.
    assert!(
        found.contains("lib::block::Origin and lib::report::Source"),
        "{found}"
    );
    // A module alias.
    assert!(found.contains("lib::block and lib::blocks"), "{found}");
    // An item in a private module, re-exported once, is fine.
    assert!(!found.contains("lib::agent::Agent"), "{found}");

    let found = crates.duplicates("app").join("\n");
    // A crate alias next to a glob re-export of the same crate.
    assert!(found.contains("app::Agent and app::core::Agent"), "{found}");
    assert!(found.contains("and app::extra::Agent"), "{found}");
}
