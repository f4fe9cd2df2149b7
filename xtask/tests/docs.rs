//! The docs hold together: every relative link in a tracked Markdown file names a file or
//! folder that exists, and every results folder says what it is (a README).

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};
use {
    affinity as _, anyhow as _, clap as _, exchange as _, floor as _, hotpath as _, inject as _,
    market as _, netns as _, paths as _, report as _, results as _, serde as _, serde_json as _,
    signal_hook as _, trader as _, tuning as _, wire as _,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

/// The repository's tracked Markdown files (git's view: what a clean clone has), or `None`
/// outside a git checkout (a source archive), where the test has nothing to hold to.
fn markdown_files(root: &Path) -> Option<Vec<PathBuf>> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "*.md",
        ])
        .current_dir(root)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        out.stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
            .filter(|p| p.exists())
            .collect(),
    )
}

/// The targets of the inline links `[text](target)` in `text`, outside code blocks and spans.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'`' => in_code = !in_code,
                b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                    if let Some(end) = line[i + 2..].find(')') {
                        let target = line[i + 2..i + 2 + end].trim();
                        // `[x](path "title")`: the path.
                        let target = target.split_whitespace().next().unwrap_or("");
                        found.push(target.to_owned());
                        i += 2 + end;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    found
}

/// Whether a link leaves the repository (or stays on its own page).
fn external(target: &str) -> bool {
    target.is_empty()
        || target.starts_with('#')
        || target.contains("://")
        || target.starts_with("mailto:")
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = root();
    let Some(files) = markdown_files(&root) else {
        eprintln!("skipped: not a git checkout");
        return;
    };
    assert!(files.len() > 10, "found the docs: {}", files.len());
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = fs::read_to_string(file).expect("a Markdown file reads as UTF-8");
        let dir = file.parent().expect("a file is in a folder");
        for target in links(&text) {
            if external(&target) {
                continue;
            }
            let path = target.split('#').next().unwrap_or("");
            let path = path.replace("%20", " ");
            checked += 1;
            if !dir.join(&path).exists() {
                broken.push(format!(
                    "{}: {target}",
                    file.strip_prefix(&root).unwrap_or(file).display()
                ));
            }
        }
    }
    assert!(checked > 100, "the links were found: {checked}");
    assert!(
        broken.is_empty(),
        "{} link(s) name nothing:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens, punctuation but `-` and `_`
/// dropped (inline code and links keep their text).
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut chars = heading.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // [text](target): the text only.
            ']' if chars.peek() == Some(&'(') => {
                for d in chars.by_ref() {
                    if d == ')' {
                        break;
                    }
                }
            }
            c => text.push(c),
        }
    }
    text.trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks), duplicates numbered as
/// GitHub numbers them.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading.trim_end_matches('#'));
        let n = seen
            .iter()
            .filter(|s| {
                **s == base
                    || s.strip_prefix(&format!("{base}-"))
                        .is_some_and(|r| r.parse::<u32>().is_ok())
            })
            .count();
        seen.push(if n == 0 { base } else { format!("{base}-{n}") });
    }
    seen
}

#[test]
fn every_anchor_a_link_names_is_a_heading_of_its_file() {
    let root = root();
    let Some(files) = markdown_files(&root) else {
        eprintln!("skipped: not a git checkout");
        return;
    };
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = fs::read_to_string(file).expect("a Markdown file reads as UTF-8");
        let dir = file.parent().expect("a file is in a folder");
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let Some((path, anchor)) = target.split_once('#') else {
                continue;
            };
            let named = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path.replace("%20", " "))
            };
            if named.extension().is_none_or(|e| e != "md") || !named.is_file() {
                continue;
            }
            checked += 1;
            let heads = anchors(&fs::read_to_string(&named).expect("a Markdown file"));
            if !heads.iter().any(|h| h == anchor) {
                broken.push(format!(
                    "{}: {target}",
                    file.strip_prefix(&root).unwrap_or(file).display()
                ));
            }
        }
    }
    assert!(checked > 10, "the anchored links were found: {checked}");
    assert!(
        broken.is_empty(),
        "{} link(s) name an anchor their file has no heading for:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(
        slug(" How long a fresh setup, the bench and CI take"),
        "how-long-a-fresh-setup-the-bench-and-ci-take"
    );
    assert_eq!(
        slug(" The next tick's trigger (`src/trigger.rs`)"),
        "the-next-ticks-trigger-srctriggerrs"
    );
    assert_eq!(slug(" See [docs](x.md) here"), "see-docs-here");
    assert_eq!(
        anchors("# A\n## A\n```\n# B\n```\n### A\n"),
        ["a", "a-1", "a-2"]
    );
}

#[test]
fn every_results_folder_has_a_readme() {
    let results = root().join("docs/results");
    let mut missing = Vec::new();
    let mut folders = 0;
    for entry in fs::read_dir(&results).expect("docs/results") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            folders += 1;
            if !path.join("README.md").exists() {
                missing.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    assert!(folders > 0);
    assert!(
        missing.is_empty(),
        "results folders without a README: {missing:?}"
    );
}

#[test]
fn the_link_reader_finds_links_and_skips_code() {
    let text = "see [a](x.md) and [b](../y/z.rs#L3 \"t\")\n`[c](no.md)`\n```\n[d](no.md)\n```\n[e](https://x)";
    assert_eq!(links(text), ["x.md", "../y/z.rs#L3", "https://x"]);
    assert!(external("https://x") && external("#anchor") && !external("x.md"));
}
