//! ARCHITECTURE.md lists `core/src`'s modules bottom to top; each module may import only
//! modules listed before it. This test reads that list and every module's imports
//! (`crate::<module>` paths, outside tests and comments) and fails on an upward import,
//! which is also how an import circle would start. It also fails on a module the list
//! leaves out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The documented order: the `* \`name.rs\`` / `* \`name/\`` items of the core's code map.
fn documented_order() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("../ARCHITECTURE.md")).unwrap();
    let start = text.find("Bottom to top").expect("the core's code map");
    let end = text[start..]
        .find("### `cli/`")
        .map_or(text.len(), |e| start + e);
    text[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("* `"))
        .filter_map(|l| l.split('`').next())
        .map(|m| m.trim_end_matches(".rs").trim_end_matches('/').to_string())
        .collect()
}

/// Source without comments and without the `#[cfg(test)]` part.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a source file refers to as `crate::<module>`, or inside `use crate::{...}`.
fn imports(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // use crate::{a::X, b::{Y, Z}, c};
            let group = &group[..group.find("};").unwrap_or(group.len())];
            let mut depth = 0;
            let mut item = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(item.trim()));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(ch);
                }
            }
            out.insert(ident(item.trim()));
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

#[test]
fn no_module_imports_a_module_above_it() {
    let order = documented_order();
    assert!(order.len() > 20, "documented order: {order:?}");
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let src = root().join("src");
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let module = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if module == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut deps = imports(&code(&text));
            deps.remove(&module);
            modules.entry(module).or_default().extend(deps);
        }
    }
    let mut problems = Vec::new();
    for (module, deps) in &modules {
        let Some(at) = order.iter().position(|m| m == module) else {
            problems.push(format!("{module} is not in ARCHITECTURE.md's code map"));
            continue;
        };
        for d in deps {
            if let Some(dep_at) = order.iter().position(|m| m == d)
                && dep_at > at
            {
                problems.push(format!("{module} imports {d}, listed above it"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
