//! The core's modules form layers: no module imports, directly or through others, a module that
//! imports it. The graph is read from the sources with `syn`.
//!
//! - A node is a module of the core with a file of its own (`agent`, `spec::load`, …); inline
//!   `#[cfg(test)]` modules are left out, and so is the crate root (`lib.rs`), which only declares
//!   and re-exports.
//! - An edge `a → b` is a path in `a` that names `b` or an item of `b`: a `use` (every leaf of a
//!   grouped `use`), or a `crate::…` or `super::…` path anywhere in the code, macros included. A
//!   path through a re-export of the crate root (`crate::Agent`) counts as naming the module the
//!   root re-exports it from.
//! - A module and its own ancestors are one namespace (a parent presents its submodules, which
//!   may use the parent's items), so paths between them are not edges.
//!
//! A cycle is reported with the files that make each of its edges.
//!
//! The server crate's modules are held to the same two rules.
//!
//! The same graph lifted to top-level modules (every module named by its first path segment,
//! edges inside one top-level module dropped) has no cycle either: each top-level module imports
//! only modules below it.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::{Item, UseTree};

type Module = Vec<String>;

/// Every module with its own file: its path from the crate root and its file.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap();
            let mut module: Module = relative
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module == ["lib"] {
                module.clear();
            }
            out.insert(module, path);
        }
    }
    out
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.to_token_stream().to_string().contains("test"))
}

/// The leaves of a `use` tree, each as its path segments (`self` resolved to the prefix).
fn use_paths(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) if n.ident == "self" => out.push(prefix.clone()),
        UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(path);
        }
        UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push(path);
        }
        UseTree::Glob(_) => out.push(prefix.clone()),
        UseTree::Group(g) => {
            for item in &g.items {
                use_paths(item, prefix, out);
            }
        }
    }
}

/// The `crate::…` and `super::…` paths in printed code (`crate :: a :: b`). Paths inside string
/// literals (doc links) are not tokens of this form, so they are not read.
fn code_paths(code: &str, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<&str> = code.split_whitespace().collect();
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i], "crate" | "super") && tokens.get(i + 1) == Some(&"::") {
            let mut path = vec![tokens[i].to_owned()];
            let mut j = i + 1;
            while tokens.get(j) == Some(&"::") {
                match tokens.get(j + 1) {
                    Some(t) if t.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                        path.push((*t).to_owned());
                        j += 2;
                    }
                    _ => break,
                }
            }
            out.push(path);
            i = j;
        } else {
            i += 1;
        }
    }
}

/// The paths of a file's items, leaving out test modules.
fn item_paths(items: &[Item], out: &mut Vec<Vec<String>>) {
    for item in items {
        match item {
            Item::Use(u) => use_paths(&u.tree, &mut Vec::new(), out),
            Item::Mod(m) if is_test(&m.attrs) => {}
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    item_paths(inner, out);
                }
            }
            Item::Fn(f) if is_test(&f.attrs) => {}
            other => code_paths(&other.to_token_stream().to_string(), out),
        }
    }
}

/// What the crate root re-exports: a name and the module it comes from.
fn root_reexports(lib: &syn::File) -> BTreeMap<String, Module> {
    let mut out = BTreeMap::new();
    for item in &lib.items {
        if let Item::Use(u) = item {
            let mut paths = Vec::new();
            use_paths(&u.tree, &mut Vec::new(), &mut paths);
            for path in paths {
                if let [module @ .., name] = path.as_slice() {
                    out.insert(name.clone(), module.to_vec());
                }
            }
        }
    }
    out
}

/// The module a path (already made absolute, without `crate`) lands in: its longest prefix that
/// is a module, after following the root's re-exports.
fn resolve(
    path: &[String],
    modules: &BTreeMap<Module, PathBuf>,
    reexports: &BTreeMap<String, Module>,
) -> Option<Module> {
    let path: Vec<String> = match path.first().and_then(|first| reexports.get(first)) {
        Some(module) if !modules.contains_key(&path[..1].to_vec()) => {
            module.iter().chain(&path[1..]).cloned().collect()
        }
        _ => path.to_vec(),
    };
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains_key(prefix))
}

/// The core's import graph.
fn graph() -> BTreeMap<Module, BTreeMap<Module, String>> {
    graph_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The import graph of the crate whose sources are in `src`: each module with the modules it
/// names, and the reason (file) of each edge.
fn graph_of(src: &Path) -> BTreeMap<Module, BTreeMap<Module, String>> {
    let src = src.to_path_buf();
    let modules = modules(&src);
    let lib = syn::parse_file(&std::fs::read_to_string(src.join("lib.rs")).unwrap()).unwrap();
    let reexports = root_reexports(&lib);
    let mut graph: BTreeMap<Module, BTreeMap<Module, String>> = BTreeMap::new();
    for (module, file) in &modules {
        if module.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Vec::new();
        item_paths(&parsed.items, &mut paths);
        let edges = graph.entry(module.clone()).or_default();
        for path in paths {
            let absolute: Vec<String> = match path.first().map(String::as_str) {
                Some("crate") => path[1..].to_vec(),
                Some("super") => {
                    let mut base = module.clone();
                    let mut rest = &path[..];
                    while rest.first().is_some_and(|s| s == "super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.extend(rest.iter().cloned());
                    base
                }
                _ => continue,
            };
            let Some(target) = resolve(&absolute, &modules, &reexports) else {
                continue;
            };
            let related = target.starts_with(module) || module.starts_with(&target);
            if !related {
                let at = file.strip_prefix(&src).unwrap().display().to_string();
                edges.entry(target).or_insert(at);
            }
        }
    }
    graph
}

fn name(module: &Module) -> String {
    module.join("::")
}

/// A cycle of the graph, if it has one (depth-first search, white/grey/black).
fn find_cycle(graph: &BTreeMap<Module, BTreeMap<Module, String>>) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &BTreeMap<Module, BTreeMap<Module, String>>,
        done: &mut BTreeSet<Module>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(at) = stack.iter().position(|m| m == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

/// The graph lifted to top-level modules: an edge `a → b` for every edge between a module under
/// `a` and one under `b`, `a ≠ b`, with the files that make it.
fn lifted(
    graph: &BTreeMap<Module, BTreeMap<Module, String>>,
) -> BTreeMap<Module, BTreeMap<Module, String>> {
    let mut out: BTreeMap<Module, BTreeMap<Module, String>> = BTreeMap::new();
    for (from, edges) in graph {
        let from_top = from[..1].to_vec();
        let outgoing = out.entry(from_top.clone()).or_default();
        for (to, at) in edges {
            let to_top = to[..1].to_vec();
            if to_top == from_top {
                continue;
            }
            let files = outgoing.entry(to_top).or_default();
            if !files.split(", ").any(|f| f == at) {
                if !files.is_empty() {
                    files.push_str(", ");
                }
                files.push_str(at);
            }
        }
    }
    out
}

/// Fails with the cycle, each edge with the files that make it.
fn assert_acyclic(graph: &BTreeMap<Module, BTreeMap<Module, String>>, what: &str) {
    if let Some(cycle) = find_cycle(graph) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|pair| {
                format!(
                    "  {} → {} (in {})",
                    name(&pair[0]),
                    name(&pair[1]),
                    graph[&pair[0]][&pair[1]]
                )
            })
            .collect();
        panic!("import cycle among {what}:\n{}", steps.join("\n"));
    }
}

#[test]
fn the_core_has_no_import_cycle() {
    assert_acyclic(&graph(), "the core's modules");
}

#[test]
fn the_top_level_modules_have_no_import_cycle() {
    assert_acyclic(&lifted(&graph()), "the core's top-level modules");
}

/// The server's modules layer too: handlers above the engine's steps, the engine's steps above
/// the shared state and the caches, those above the contract, the configuration and problems.
#[test]
fn the_server_has_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../promptstack-server/src");
    let graph = graph_of(&src);
    assert!(graph.contains_key(&vec!["evals".to_owned(), "worker".to_owned()]));
    assert_acyclic(&graph, "the server's modules");
    assert_acyclic(&lifted(&graph), "the server's top-level modules");
}

#[test]
fn the_graph_sees_imports_and_would_report_a_cycle() {
    let graph = graph();
    // The API boundary imports the implementation modules, and nothing imports it.
    let agent = vec!["agent".to_owned()];
    for below in ["assemble", "ir", "caches"] {
        assert!(
            graph[&agent].contains_key(&vec![below.to_owned()]),
            "agent → {below} not seen"
        );
    }
    // `refresh` holds an `Agent` (named through the crate root's re-export).
    assert!(graph[&vec!["refresh".to_owned()]].contains_key(&agent));
    // Adding the reverse edge of a real one makes a cycle the search finds and prints.
    let mut cyclic = graph.clone();
    cyclic
        .get_mut(&vec!["assemble".to_owned()])
        .unwrap()
        .insert(agent.clone(), "test".into());
    let cycle = find_cycle(&cyclic).expect("a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&agent));

    // Lifted, an edge between submodules is an edge between their top-level modules, with the
    // file that makes it: `spec::span` locates with `diagnostic::Location`.
    let top = |name: &str| vec![name.to_owned()];
    let tops = lifted(&graph);
    assert!(
        tops[&top("spec")][&top("diagnostic")]
            .split(", ")
            .any(|f| f == "spec/span.rs"),
        "spec → diagnostic not seen in spec/span.rs"
    );
    assert!(tops[&top("assemble")].contains_key(&top("inject")));
    // The reverse of a lifted edge closes a lifted cycle: compose reads the injected block ids,
    // so `inject::manifests → compose` would make one.
    let mut reverse = graph.clone();
    reverse
        .get_mut(&vec!["inject".to_owned(), "manifests".to_owned()])
        .unwrap()
        .insert(top("compose"), "test".into());
    let cycle = find_cycle(&lifted(&reverse)).expect("a lifted cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&top("inject")) && cycle.contains(&top("compose")));
}

/// The template layer is its own crate, below the core: `promptstack-template` depends on no
/// promptstack crate (its dependencies go down), and the core depends on it.
#[test]
fn the_template_layer_is_a_crate_below_the_core() {
    let tree = crate::purity::cargo_tree("promptstack-template", "none", "{p}", &[]);
    let packages: BTreeSet<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(
        packages.contains("promptstack-template") && packages.contains("minijinja"),
        "the dependency list was read: {packages:?}"
    );
    let promptstack: Vec<_> = packages
        .iter()
        .filter(|p| p.starts_with("promptstack") && **p != "promptstack-template")
        .collect();
    assert!(
        promptstack.is_empty(),
        "promptstack-template depends on {promptstack:?}"
    );
    let core = crate::purity::cargo_tree("promptstack-core", "depth", "{p}", &[]);
    assert!(
        core.lines()
            .any(|line| line.starts_with("1promptstack-template ")),
        "the core depends on the template layer directly"
    );
}

/// The public modules of the template layer, besides its root: the records, layers and limits
/// the core re-exports at its own paths. `testing` (its test hooks) is named only by the core's
/// test module `template_tests`.
const TEMPLATE_MODULES: &[&str] = &["context", "layers", "sites", "spec", "text"];

/// Every `promptstack_template::…` path in a file's items, leaving out test modules.
fn template_paths(items: &[Item], out: &mut Vec<Vec<String>>) {
    let mut paths = Vec::new();
    for item in items {
        match item {
            Item::Use(u) => use_paths(&u.tree, &mut Vec::new(), &mut paths),
            Item::Mod(m) if is_test(&m.attrs) => {}
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    template_paths(inner, out);
                }
            }
            Item::Fn(f) if is_test(&f.attrs) => {}
            other => {
                let code = other.to_token_stream().to_string();
                let tokens: Vec<&str> = code.split_whitespace().collect();
                for (i, token) in tokens.iter().enumerate() {
                    if *token == "promptstack_template" && tokens.get(i + 1) == Some(&"::") {
                        let next = tokens.get(i + 2).copied().unwrap_or_default();
                        paths.push(vec![(*token).to_owned(), next.to_owned()]);
                    }
                }
            }
        }
    }
    out.extend(
        paths
            .into_iter()
            .filter(|path| path.first().is_some_and(|p| p == "promptstack_template")),
    );
}

/// The core reaches the template layer through its root (`TemplateSet`, `Context`, `Val`, …) and
/// the public modules it re-exports, never through a path that names anything else; the test
/// hooks are named by the core's differential tests alone.
#[test]
fn the_core_names_the_template_layer_through_its_root_and_public_modules() {
    // The template layer's public modules, as its root declares them.
    let layer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../promptstack-template/src/lib.rs");
    let layer = syn::parse_file(&std::fs::read_to_string(layer).unwrap()).unwrap();
    let layer_modules: BTreeSet<String> = layer
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Mod(m) if matches!(m.vis, syn::Visibility::Public(_)) => {
                Some(m.ident.to_string())
            }
            _ => None,
        })
        .collect();
    assert!(layer_modules.contains("testing") && layer_modules.contains("spec"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut named = BTreeSet::new();
    for (module, file) in modules(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Vec::new();
        template_paths(&parsed.items, &mut paths);
        for path in paths {
            let Some(second) = path.get(1) else { continue };
            if second == "testing" {
                assert_eq!(
                    module,
                    vec!["template_tests".to_owned()],
                    "{} names the template layer's test hooks",
                    name(&module)
                );
            } else if layer_modules.contains(second) {
                named.insert(second.clone());
            }
        }
    }
    let expected: BTreeSet<String> = TEMPLATE_MODULES.iter().map(|m| (*m).to_owned()).collect();
    assert_eq!(
        named, expected,
        "the template layer's modules the core names"
    );
}
