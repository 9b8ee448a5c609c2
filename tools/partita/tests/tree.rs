//! The shape of the tree, checked like behaviour: the hypervisor's modules
//! form layers (no import cycle of more than two files), and every folder
//! README's module table names exactly the modules that exist.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, as paths relative to it.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    files
}

/// The module path a source file defines: `main.rs`/`lib.rs` is the crate
/// root (empty), `a/mod.rs` and `a.rs` are `a`, `a/b.rs` is `a::b`.
fn module_of(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    match last.trim_end_matches(".rs") {
        "mod" | "main" | "lib" => {}
        name => parts.push(name.to_string()),
    }
    parts
}

/// Source without comments: an import named in prose is not an import.
fn code_of(source: &str) -> String {
    source.lines().map(|line| line.split("//").next().unwrap()).collect::<Vec<_>>().join("\n")
}

/// Expands a `use` tree (`a::{b, c::{d, self}}`) into full paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap();
        return vec![path.chars().filter(|c| !c.is_whitespace()).collect()];
    };
    let prefix: String = tree[..open].chars().filter(|c| !c.is_whitespace()).collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.trim().is_empty())
        .flat_map(expand)
        .map(|item| if item == "self" { prefix.trim_end_matches("::").to_string() } else { format!("{prefix}{item}") })
        .collect()
}

/// Paths a file names: its `use` trees, `crate::`/`super::` paths in code,
/// and paths through the child modules it declares.
fn referenced_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let body = statement.strip_prefix("pub ").unwrap_or(statement);
        let body = body.strip_prefix("pub(crate) ").unwrap_or(body);
        if let Some(tree) = body.strip_prefix("use ") {
            paths.extend(expand(tree));
        }
    }
    let children: Vec<&str> = code
        .lines()
        .filter_map(|l| l.trim().trim_start_matches("pub ").strip_prefix("mod "))
        .map(|name| name.trim_end_matches(';').trim())
        .collect();
    let bytes = code.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if word(bytes[i]) && (i == 0 || !word(bytes[i - 1]) && bytes[i - 1] != b':') {
            let mut end = i;
            while end < bytes.len() && (word(bytes[end]) || code[end..].starts_with("::")) {
                end += if code[end..].starts_with("::") { 2 } else { 1 };
            }
            let path = code[i..end].trim_end_matches(':');
            let first = path.split("::").next().unwrap();
            if path.contains("::") && (first == "crate" || first == "super" || children.contains(&first)) {
                paths.push(path.to_string());
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    paths
}

/// The file a path from module `from` leads to: the longest prefix that
/// is a module of the crate.
fn resolve(path: &str, from: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut parts: Vec<&str> = path.split("::").collect();
    let mut base: Vec<String> = match *parts.first()? {
        "crate" => {
            parts.remove(0);
            Vec::new()
        }
        "super" => {
            parts.remove(0);
            from[..from.len().saturating_sub(1)].to_vec()
        }
        "self" => {
            parts.remove(0);
            from.to_vec()
        }
        _ => from.to_vec(),
    };
    let mut found = None;
    for part in parts {
        base.push(part.to_string());
        if modules.contains(&base) {
            found = Some(base.clone());
        } else {
            break;
        }
    }
    found
}

/// Each module's imports of other modules of the crate rooted at `src`.
fn import_graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = rust_files(src);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let from = module_of(file);
        let code = code_of(&fs::read_to_string(src.join(file)).unwrap());
        let targets: BTreeSet<Vec<String>> = referenced_paths(&code)
            .iter()
            .filter_map(|p| resolve(p, &from, &modules))
            .filter(|t| *t != from && !t.is_empty())
            .collect();
        graph.insert(from, targets);
    }
    graph
}

/// The strongly connected components with more than one module.
fn cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<BTreeSet<Vec<String>>> {
    let reach = |start: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<_, _> = graph.keys().map(|k| (k.clone(), reach(k))).collect();
    let mut components: Vec<BTreeSet<Vec<String>>> = Vec::new();
    for node in graph.keys() {
        let component: BTreeSet<Vec<String>> = graph
            .keys()
            .filter(|other| reachable[node].contains(*other) && reachable[*other].contains(node))
            .cloned()
            .collect();
        if component.len() > 1 && !components.contains(&component) {
            components.push(component);
        }
    }
    components
}

fn show(module: &[String]) -> String {
    if module.is_empty() {
        "crate".into()
    } else {
        module.join("::")
    }
}

#[test]
fn the_hypervisor_has_no_import_cycle_of_more_than_two_files() {
    let graph = import_graph(&repo().join("hypervisor/src"));
    assert!(graph.len() > 10, "the hypervisor's modules were not found: {graph:?}");
    // The checker must see the edges it checks: the trap handler imports
    // the scheduler it hands vCPUs to.
    let trap = graph.get(&vec!["trap".to_string()]).expect("trap module");
    assert!(trap.contains(&vec!["scheduler".to_string()]), "{trap:?}");
    let all = cycles(&graph);
    for cycle in &all {
        eprintln!("import cycle: {:?}", cycle.iter().map(|m| show(m)).collect::<Vec<_>>());
    }
    let large: Vec<Vec<String>> =
        all.into_iter().filter(|c| c.len() > 2).map(|c| c.iter().map(|m| show(m)).collect()).collect();
    assert!(large.is_empty(), "import cycles of more than two files: {large:?}");
}

#[test]
fn the_cycle_finder_finds_a_planted_cycle() {
    let m = |s: &str| vec![s.to_string()];
    let graph: BTreeMap<_, _> = [
        (m("a"), [m("b")].into_iter().collect()),
        (m("b"), [m("c")].into_iter().collect()),
        (m("c"), [m("a")].into_iter().collect()),
        (m("d"), [m("a")].into_iter().collect()),
    ]
    .into_iter()
    .collect();
    let found = cycles(&graph);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0], [m("a"), m("b"), m("c")].into_iter().collect());
}

#[test]
fn use_trees_expand_to_full_paths() {
    let mut paths = expand("crate::scheduler::{self, runnable::{rank, wants_cpu}}");
    paths.sort();
    assert_eq!(
        paths,
        ["crate::scheduler", "crate::scheduler::runnable::rank", "crate::scheduler::runnable::wants_cpu"]
    );
    let code = "use crate::health::log as hm_log;\nfn f() { super::state::system(); fixed::choose(); }\nmod fixed;";
    let found = referenced_paths(code);
    for expected in ["crate::health::log", "super::state::system", "fixed::choose"] {
        assert!(found.iter().any(|p| p == expected), "{expected} not in {found:?}");
    }
}

/// The backticked names in the first column of a README's tables.
fn table_entries(readme: &str) -> Vec<String> {
    readme
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|--") && !l.starts_with("| --"))
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// A crate README's module table lists every module of `src` by its path
/// (`config::model`), and nothing else.
fn check_module_table(folder: &str) {
    let root = repo().join(folder);
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let listed: BTreeSet<String> = table_entries(&readme).into_iter().collect();
    let modules: BTreeSet<String> = rust_files(&root.join("src"))
        .iter()
        .map(|f| module_of(f))
        .filter(|m| !m.is_empty())
        .map(|m| m.join("::"))
        .collect();
    let missing: Vec<_> = modules.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&modules).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "{folder}/README.md: not listed {missing:?}, not in the tree {stale:?}"
    );
}

#[test]
fn the_core_readme_lists_its_modules() {
    check_module_table("crates/core");
}

#[test]
fn the_arch_readme_lists_its_modules() {
    check_module_table("crates/arch");
}

#[test]
fn the_hypervisor_readme_lists_its_modules() {
    check_module_table("hypervisor");
}

/// The tool's README lists every source and test file by its path (a
/// folder entry, ending in `/`, covers what is in it), and nothing else.
#[test]
fn the_tool_readme_lists_its_files() {
    let root = repo().join("tools/partita");
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let listed: Vec<String> = table_entries(&readme).into_iter().filter(|e| e.contains('/')).collect();
    let stale: Vec<&String> = listed.iter().filter(|entry| !root.join(entry).exists()).collect();
    let files: Vec<String> = ["src", "tests"]
        .iter()
        .flat_map(|dir| rust_files(&root.join(dir)).into_iter().map(move |f| format!("{dir}/{}", f.display())))
        .collect();
    let covered =
        |file: &String| listed.iter().any(|e| e == file || (e.ends_with('/') && file.starts_with(e.as_str())));
    let missing: Vec<&String> = files.iter().filter(|f| !covered(f)).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "tools/partita/README.md: not listed {missing:?}, not in the tree {stale:?}"
    );
}
