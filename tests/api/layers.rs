//! The server crate's layers, checked from its sources: each top-level module imports
//! only modules of lower layers (its own aside), so the HTTP layer stays the only one
//! that knows HTTP, the realm knows nothing above it, and no import cycle crosses a
//! module boundary. Test modules (`#[cfg(test)]` onward) are not counted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;

/// Each top-level module's layer, lowest first. A module may import modules of a lower
/// layer only.
const LAYERS: &[(&str, u32)] = &[
    // Leaves.
    ("error", 0),
    ("escape", 0),
    ("version", 0),
    ("locks", 0),
    ("gzip", 0),
    ("health", 0),
    // Incoming webhooks: pure functions of a request, knowing nothing of the server.
    ("integrations", 0),
    ("metrics", 1),
    ("limits", 1),
    ("logging", 1),
    ("passwords", 1),
    ("push_relay", 1),
    ("mail", 1),
    // The domain.
    ("realm", 2),
    ("storage", 3),
    ("config", 4),
    ("hub", 4),
    ("actor", 5),
    ("registry", 6),
    ("archive", 6),
    // The outbox worker (outgoing webhooks): reads the registry's realms, writes
    // through their actors.
    ("outbox", 7),
    // The mail worker (missed-message emails): the same shape as the outbox.
    ("missed_mail", 7),
    // HTTP.
    ("api", 7),
    ("admin", 8),
    ("startup", 9),
    ("ops", 10),
];

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The `crate::<module>` paths a source file names before its tests, comments aside.
fn imports(source: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in source.lines() {
        let line = line.trim_start();
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if line.starts_with("//") {
            continue;
        }
        for (i, _) in line.match_indices("crate::") {
            // `hearth_tools::crate::` cannot occur; skip `$crate::` in macros.
            if line[..i].ends_with('$') {
                continue;
            }
            let rest = &line[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                out.insert(name);
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None`: the crate root, the binary).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    let name = first.trim_end_matches(".rs").to_owned();
    (!matches!(name.as_str(), "lib" | "main" | "cli")).then_some(name)
}

#[test]
fn every_module_imports_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut upward = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let own = layer(&module)
            .unwrap_or_else(|| panic!("{module} (src/{module}) has no layer in LAYERS"));
        let source = std::fs::read_to_string(file).unwrap();
        for used in imports(&source) {
            if used == module || used == "self" {
                continue;
            }
            let Some(theirs) = layer(&used) else {
                continue; // a crate-root item (none today) or a macro path
            };
            if theirs >= own {
                upward.push(format!(
                    "{} ({module}, layer {own}) imports crate::{used} (layer {theirs})",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up or across:\n{}",
        upward.join("\n")
    );
}

/// The HTTP layer names no storage: what it needs of the data folder (an export's
/// folder, the message rows) comes through the realm's client and ports.
#[test]
fn the_http_layer_names_no_storage() {
    let api = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
    let mut files = Vec::new();
    rust_files(&api, &mut files);
    let naming: Vec<String> = files
        .iter()
        .filter(|f| imports(&std::fs::read_to_string(f).unwrap()).contains("storage"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        naming.is_empty(),
        "api files naming crate::storage: {naming:?}"
    );
}

#[test]
fn the_check_sees_an_upward_import() {
    let found = imports("use crate::api::AppState;\n#[cfg(test)]\nuse crate::startup;\n");
    assert_eq!(found, BTreeSet::from(["api".to_owned()]));
    assert!(layer("api") > layer("realm"));
}
