//! Where the formulas are in the source, shared by the build script (`build.rs` includes this
//! file) and the tests of [`super`]: the raw string literals of a Rust file, and a formula's
//! parts between top-level semicolons.
//!
//! Pure functions over text, no dependency: the build script cannot use the crate it builds.

use std::ops::Range;

/// Every raw string literal (`r"…"`, `r#"…"#`) of Rust `source`, in order, with its contents
/// as written (a raw string has no escapes). Comments, plain, byte and C strings, and character
/// literals are skipped, so a `r"` inside any of them is not taken for a formula.
pub fn raw_strings(source: &str) -> Vec<&str> {
    let bytes = source.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    // Every delimiter is ASCII, so walking bytes never splits a UTF-8 character wrongly: the
    // bytes of a multi-byte character are all ≥ 0x80 and match nothing below.
    while at < bytes.len() {
        match bytes[at] {
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                at = bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |end| at + end + 1);
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => at = skip_block_comment(bytes, at + 2),
            b'"' => at = skip_string(bytes, at + 1),
            b'\'' => at = skip_char_or_lifetime(source, at),
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let start = at;
                while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                    at += 1;
                }
                let prefix = &source[start..at];
                if matches!(prefix, "r" | "br" | "cr")
                    && let Some((contents, end)) = raw_string_at(source, at)
                {
                    if prefix == "r" {
                        found.push(contents);
                    }
                    at = end;
                }
            }
            _ => at += 1,
        }
    }
    found
}

/// After `/*` at `at`: the index past the matching `*/` (block comments nest in Rust).
fn skip_block_comment(bytes: &[u8], mut at: usize) -> usize {
    let mut depth = 1;
    while at < bytes.len() {
        if bytes[at] == b'/' && bytes.get(at + 1) == Some(&b'*') {
            depth += 1;
            at += 2;
        } else if bytes[at] == b'*' && bytes.get(at + 1) == Some(&b'/') {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    at
}

/// After the opening `"` of a string with escapes: the index past its closing `"`.
fn skip_string(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    at
}

/// At a `'`: past the character literal it opens, or past the `'` of a lifetime or label.
fn skip_char_or_lifetime(source: &str, at: usize) -> usize {
    let bytes = source.as_bytes();
    if bytes.get(at + 1) == Some(&b'\\') {
        // '\n', '\'', '\u{…}': the closing quote comes after the escaped character.
        return bytes[at + 3.min(bytes.len() - at)..]
            .iter()
            .position(|&b| b == b'\'')
            .map_or(bytes.len(), |end| at + 3 + end + 1);
    }
    let width = source
        .get(at + 1..)
        .and_then(|rest| rest.chars().next())
        .map_or(1, char::len_utf8);
    if bytes.get(at + 1 + width) == Some(&b'\'') {
        at + 2 + width
    } else {
        at + 1
    }
}

/// At the `#`s or `"` after an `r` prefix: the raw string's contents and the index past it,
/// or `None` if this is no raw string (a raw identifier `r#name`).
fn raw_string_at(source: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = source.as_bytes();
    let hashes = bytes[at..].iter().take_while(|&&b| b == b'#').count();
    let open = at + hashes;
    if bytes.get(open) != Some(&b'"') {
        return None;
    }
    let closing = format!("\"{}", "#".repeat(hashes));
    let start = open + 1;
    let end = source[start..].find(&closing).map(|end| start + end)?;
    Some((&source[start..end], end + closing.len()))
}

/// The parts of a LaTeX formula, cut after each semicolon and before each `\quad` or `\qquad`
/// outside any group or bracket (the semicolon stays with its part, the quad starts the next
/// one, so that a part carried to a new line is indented), each trimmed of white space: the page
/// sets each part as its own `<math>` with a breakable space between, so a long formula wraps
/// between its clauses where its box is narrow (MathML itself never breaks a line). A formula
/// without either is one part.
pub fn top_level_parts(latex: &str) -> Vec<Range<usize>> {
    let bytes = latex.as_bytes();
    let mut cuts = Vec::new();
    let (mut depth, mut at) = (0i32, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => {
                // A control word (`\quad`, `\left`) or symbol (`\;`, `\{`, `\\`): skipped whole,
                // so it neither groups nor cuts, except a quad at the top level.
                let name = bytes[at + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphabetic())
                    .count()
                    .max(1);
                let word = latex.get(at + 1..at + 1 + name).unwrap_or_default();
                if depth == 0 && matches!(word, "quad" | "qquad") {
                    cuts.push(at);
                }
                at += 1 + name;
                continue;
            }
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth -= 1,
            b';' if depth == 0 => cuts.push(at + 1),
            _ => {}
        }
        at += 1;
    }
    let mut parts = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([latex.len()]) {
        let part = &latex[start..cut];
        let trimmed = part.trim_start();
        let from = start + part.len() - trimmed.len();
        let to = from + trimmed.trim_end().len();
        if from < to {
            parts.push(from..to);
        }
        start = cut;
    }
    parts
}
