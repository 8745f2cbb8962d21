//! Build script: every formula of the lab rendered from LaTeX to MathML by pulldown-latex, at
//! build time, into `OUT_DIR/formulas_mathml.rs`, a table that `src/lab/page/mathml.rs` includes.
//!
//! The page links the table, not the LaTeX parser: the page module and the first worker are
//! held to a download budget, and a formula never changes at run time. The formulas are the raw
//! string literals (`r"…"`) of the files in [`SOURCES`]: in those files a raw string is LaTeX and
//! a plain string is prose. `src/lab/page/mathml.rs` tests that every formula the page can show is
//! in the table and rendered without error.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

use pulldown_latex::{Parser, RenderConfig, Storage, push_mathml};

/// The text functions shared with the crate's tests (raw strings, parts).
#[path = "src/lab/page/mathml/source.rs"]
mod source;

/// Files, and folders whose `.rs` files (at any depth), hold formulas. A new estimator or
/// attention method is a new file in one of these folders, found without editing this list.
const SOURCES: [&str; 5] = [
    "src/lab/page/formulas.rs",
    "src/lab/page/view_formulas.rs",
    "src/numerics/heuristics.rs",
    "src/numerics/estimators",
    "src/numerics/attention/methods",
];

/// The sources whose formulas the first view does not show (the attention and language model
/// views', the kernel view's panels below its first screen, where "What is computed" shows the
/// estimators' formulas, and the guided tour's; the heuristics' formulas the page never shows):
/// with the feature `formulas-on-demand` their MathML goes to `OUT_DIR/view-formulas.txt`
/// (fetched with those parts) instead of the table, unless a formula of another source is the
/// same. What stays in the table is `src/lab/page/formulas.rs`'s: the theory charts'.
const ON_DEMAND_SOURCES: [&str; 4] = [
    "src/lab/page/view_formulas.rs",
    "src/numerics/heuristics.rs",
    "src/numerics/estimators",
    "src/numerics/attention/methods",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The estimators' prose (`Describe::docs`: formula, notice, source) where it is shown: the
    // page, the command line, the native tests. The workers show no text and leave it out of
    // their modules (every estimator's strings, reached through the vtables they use: about
    // 1.2 KB gzipped of the first view's worker).
    println!("cargo:rustc-check-cfg=cfg(estimator_prose)");
    let page = env::var_os("CARGO_FEATURE_PAGE").is_some();
    if page || env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("wasm32") {
        println!("cargo:rustc-cfg=estimator_prose");
    }
    println!("cargo:rerun-if-changed=src/lab/page/mathml/source.rs");
    let mut files = Vec::new();
    for source in SOURCES {
        // A folder as well as its files: cargo then notices a file added to it.
        println!("cargo:rerun-if-changed={source}");
        rust_files(Path::new(source), &mut files);
    }
    files.sort();

    // Each formula once, sorted, so the page can look one up by binary search; with whether
    // every place that writes it is an on-demand source.
    let on_demand = env::var_os("CARGO_FEATURE_FORMULAS_ON_DEMAND").is_some();
    let mut formulas = BTreeMap::new();
    let mut elsewhere = std::collections::BTreeSet::new();
    for file in &files {
        let text = match fs::read_to_string(file) {
            Ok(text) => text,
            Err(error) => panic!("build.rs: cannot read {}: {error}", file.display()),
        };
        let deferred = ON_DEMAND_SOURCES.iter().any(|s| file.starts_with(s));
        for latex in source::raw_strings(&text) {
            if !deferred {
                elsewhere.insert(latex.to_string());
            }
            formulas
                .entry(latex.to_string())
                .or_insert_with(|| render(latex, file));
        }
    }
    // One record per formula, ended by RS (U+001E); its fields, ended by US (U+001F): the
    // LaTeX, then each part's start, end and MathML (neither LaTeX nor MathML holds a control
    // character, checked here), so the page splits it with no parser; in the order of their
    // LaTeX (the map's), which the page's binary search needs and checks.
    // Written with the feature or without it (the crate's tests read it); only with it are its
    // formulas left out of the table.
    let mut fetched = String::new();
    let deferred: Vec<String> = formulas
        .keys()
        .filter(|latex| !elsewhere.contains(*latex))
        .cloned()
        .collect();
    for latex in deferred {
        let Some(Ok(parts)) = formulas.get(&latex) else {
            continue;
        };
        let _ = write!(fetched, "{}\u{1f}", field(&latex));
        for (range, mathml) in parts {
            let _ = write!(
                fetched,
                "{}\u{1f}{}\u{1f}{}\u{1f}",
                range.start,
                range.end,
                field(mathml)
            );
        }
        fetched.push('\u{1e}');
        if on_demand {
            formulas.remove(&latex);
        }
    }

    let mut table = String::from(
        "// Generated by build.rs from the raw strings of its SOURCES: every formula's LaTeX and\n\
         // its parts as MathML (pulldown-latex). Do not edit.\n\
         static FORMULAS: &[Formula] = &[\n",
    );
    for (latex, rendered) in &formulas {
        let _ = write!(table, "    Formula {{ latex: {latex:?}, rendered: ");
        match rendered {
            Ok(parts) => {
                table.push_str("Ok(&[");
                for (range, mathml) in parts {
                    let _ = write!(
                        table,
                        "Part {{ start: {}, end: {}, mathml: {mathml:?} }}, ",
                        range.start, range.end
                    );
                }
                table.push_str("]) },\n");
            }
            Err(error) => {
                let _ = writeln!(table, "Err({error:?}) }},");
            }
        }
    }
    table.push_str("];\n");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(error) = fs::write(out.join("formulas_mathml.rs"), table) {
        panic!("build.rs: cannot write the formula table: {error}");
    }
    // scripts/build-page.sh copies it into the page (built with the feature).
    if let Err(error) = fs::write(out.join("view-formulas.txt"), fetched) {
        panic!("build.rs: cannot write view-formulas.txt: {error}");
    }
}

/// `text` as a field of view-formulas.txt: it must hold no control character.
fn field(text: &str) -> &str {
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        panic!("build.rs: a formula holds the control character {c:?}: {text}");
    }
    text
}

/// The `.rs` files of `path` (itself if it is one), depth first.
fn rust_files(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_file() {
        files.push(path.to_path_buf());
        return;
    }
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(error) => panic!("build.rs: cannot list {}: {error}", path.display()),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// A formula's parts (their byte ranges in `latex` and their MathML, without the `<math>`
/// element, which the page writes with the part's LaTeX as its `alttext`), or pulldown-latex's
/// first error. A formula that does not render is a warning here, not a failed build: the
/// page shows its LaTeX instead, and the crate's test of every formula names it.
fn render(latex: &str, file: &Path) -> Result<Vec<(std::ops::Range<usize>, String)>, String> {
    let mut parts = Vec::new();
    for range in source::top_level_parts(latex) {
        let part = &latex[range.clone()];
        let storage = Storage::new();
        let events: Vec<_> = Parser::new(part, &storage).collect();
        if let Some(Err(error)) = events.iter().find(|event| event.is_err()) {
            let error = format!("`{part}`: {error}");
            println!(
                "cargo:warning=a formula in {} does not render: {}",
                file.display(),
                error.replace('\n', " ")
            );
            return Err(error);
        }
        let mut mathml = String::new();
        if let Err(error) = push_mathml(&mut mathml, events.into_iter(), RenderConfig::default()) {
            return Err(format!("`{part}`: {error}"));
        }
        parts.push((range, inner(&mathml)));
    }
    Ok(parts)
}

/// The contents of a `<math …>…</math>` element, with two slips of pulldown-latex 0.8 put
/// right: the missing space between attributes (`stretchy="true"minsize="1.8em"` from `\Big(`:
/// the HTML parser recovers from it, but it is a parse error), and the no-break space of `\ `
/// and `~`, which it escapes a second time (`&amp;nbsp;`, shown as the text "&nbsp;").
fn inner(mathml: &str) -> String {
    let body = mathml
        .split_once('>')
        .map_or(mathml, |(_, rest)| rest)
        .strip_suffix("</math>")
        .unwrap_or(mathml);
    body.replace("\"minsize=", "\" minsize=")
        .replace("&amp;nbsp;", "&nbsp;")
}
