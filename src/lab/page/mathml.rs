//! Formulas as MathML (native in current browsers; no JavaScript math library, no font or
//! stylesheet to download).
//!
//! Every formula of the lab is written once, in LaTeX, as a raw string literal (`r"…"`) in
//! [`crate::lab::page::formulas`], an estimator's or attention method's own file, or
//! [`crate::numerics::heuristics`]. The build script (`build.rs`) finds those raw strings and
//! renders each one with pulldown-latex into a table that this module includes, so the page
//! links a lookup, not a LaTeX parser. The command line prints the same LaTeX.

/// One part of a formula: `latex[start..end]` and its MathML, without the `<math>` element.
struct Part {
    start: usize,
    end: usize,
    mathml: &'static str,
}

/// A formula as the build script rendered it: its parts, or the parser's error.
struct Formula {
    latex: &'static str,
    rendered: Result<&'static [Part], &'static str>,
}

// `static FORMULAS: &[Formula]`, sorted by `latex`.
include!(concat!(env!("OUT_DIR"), "/formulas_mathml.rs"));

/// The build script's rendering of `latex`, if it found that formula.
fn lookup(latex: &str) -> Option<&'static Formula> {
    FORMULAS
        .binary_search_by(|formula| formula.latex.cmp(latex))
        .ok()
        .and_then(|at| FORMULAS.get(at))
}

/// A formula whose MathML came at run time: the split page's `view-formulas.txt` (build.rs
/// writes it: every formula the first view does not show; the parts that show them fetch it
/// with their code).
#[derive(Debug)]
struct FetchedFormula {
    latex: String,
    /// `(start, end, mathml)` of each part.
    parts: Vec<(usize, usize, String)>,
}

/// The fetched formulas, sorted by `latex`, once added.
static FETCHED: std::sync::OnceLock<Vec<FetchedFormula>> = std::sync::OnceLock::new();

/// Adds the formulas of a `view-formulas.txt` ([`parse_formulas`]; a second table is ignored).
/// Returns how many it holds, or why the text is not such a table.
pub fn add_formulas(text: &str) -> Result<usize, String> {
    let formulas = parse_formulas(text)?;
    let count = formulas.len();
    let _ = FETCHED.set(formulas);
    Ok(count)
}

/// The formulas of a `view-formulas.txt`: records ended by U+001E, their fields by U+001F, the
/// LaTeX then each part's start, end and MathML, the records in the order of their LaTeX
/// (build.rs writes them so: the page looks one up by binary search, and links no sort for
/// it); or why the text is not such a table.
fn parse_formulas(text: &str) -> Result<Vec<FetchedFormula>, String> {
    let bad = |record: usize| format!("view-formulas.txt: record {record} is not a formula");
    let mut formulas = Vec::new();
    for (index, record) in text.split_terminator('\u{1e}').enumerate() {
        let fields: Vec<&str> = record.split_terminator('\u{1f}').collect();
        let Some((latex, parts)) = fields.split_first() else {
            return Err(bad(index));
        };
        if parts.is_empty() || parts.len() % 3 != 0 {
            return Err(bad(index));
        }
        let parts = parts
            .chunks_exact(3)
            .map(|part| {
                let start = part[0].parse::<usize>().map_err(|_| bad(index))?;
                let end = part[1].parse::<usize>().map_err(|_| bad(index))?;
                Ok((start, end, part[2].to_string()))
            })
            .collect::<Result<Vec<_>, String>>()?;
        formulas.push(FetchedFormula {
            latex: latex.to_string(),
            parts,
        });
    }
    if let Some(at) = formulas.windows(2).position(|w| w[0].latex >= w[1].latex) {
        return Err(format!(
            "view-formulas.txt: record {} is not after record {at} in order",
            at + 1
        ));
    }
    Ok(formulas)
}

/// Whether the fetched formulas are in (see [`add_formulas`]).
pub fn formulas_added() -> bool {
    FETCHED.get().is_some()
}

/// `latex` as `<math>` elements (inline), each with its LaTeX as its `alttext`: one per part of
/// the formula between top-level semicolons, so that a long formula wraps between its parts
/// where its box is narrow (MathML itself never breaks a line). A formula the build script did
/// not find or could not render, or one whose fetched MathML is not in yet, is shown as its
/// LaTeX in a `<code>`.
pub fn to_mathml(latex: &str) -> String {
    let parts: Vec<(usize, usize, &str)> = match lookup(latex) {
        Some(Formula {
            rendered: Ok(parts),
            ..
        }) => parts.iter().map(|p| (p.start, p.end, p.mathml)).collect(),
        _ => FETCHED
            .get()
            .and_then(|fetched| {
                let at = fetched
                    .binary_search_by(|f| f.latex.as_str().cmp(latex))
                    .ok()?;
                fetched.get(at)
            })
            .map(|f| {
                f.parts
                    .iter()
                    .map(|(start, end, mathml)| (*start, *end, mathml.as_str()))
                    .collect()
            })
            .unwrap_or_default(),
    };
    if parts.is_empty() {
        return format!("<code class=\"formula-source\">{}</code>", escape(latex));
    }
    parts
        .iter()
        .map(|&(start, end, mathml)| {
            format!(
                "<math display=\"inline\" alttext=\"{}\">{mathml}</math>",
                escape(latex.get(start..end).unwrap_or(latex)),
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Where the formulas are in the source (shared with `build.rs`).
#[cfg(test)]
mod source;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::page::formulas;
    use crate::numerics::heuristics::AHeuristic;

    /// A fetched table (the split page's `view-formulas.txt`, as build.rs writes it) answers
    /// for a formula the built-in table lacks, its parts with their own LaTeX as `alttext`; a
    /// text that is not such a table is refused with the reason.
    #[test]
    fn fetched_formulas_answer_after_the_built_in_table() {
        let latex = r"x_{\mathrm{fetched}};\quad y";
        assert!(to_mathml(latex).starts_with("<code"));
        let table = "x_{\\mathrm{fetched}};\\quad y\u{1f}0\u{1f}20\u{1f}<mi>x</mi>\u{1f}\
                     26\u{1f}28\u{1f}<mi>y</mi>\u{1f}\u{1e}";
        // A part without its MathML, a start that is not a number, records out of order (the
        // lookup is a binary search): refused, nothing kept.
        assert!(add_formulas("x\u{1f}0\u{1f}\u{1e}").is_err());
        assert!(add_formulas("x\u{1f}a\u{1f}1\u{1f}<mi>x</mi>\u{1f}\u{1e}").is_err());
        let b = "b\u{1f}0\u{1f}1\u{1f}<mi>b</mi>\u{1f}\u{1e}";
        assert_eq!(
            add_formulas(&format!("{table}{b}")),
            Err("view-formulas.txt: record 1 is not after record 0 in order".to_string())
        );
        assert!(!formulas_added());
        assert_eq!(add_formulas(&format!("{b}{table}")), Ok(2));
        assert!(formulas_added());
        assert_eq!(
            to_mathml(latex),
            "<math display=\"inline\" alttext=\"x_{\\mathrm{fetched}}\"><mi>x</mi></math> \
             <math display=\"inline\" alttext=\" y\"><mi>y</mi></math>"
        );
        assert_eq!(
            to_mathml("b"),
            "<math display=\"inline\" alttext=\"b\"><mi>b</mi></math>"
        );
        // The built-in table still answers first.
        assert!(to_mathml(formulas::MODEL_SCALING_D).contains("<msup>"));
    }

    /// The `view-formulas.txt` build.rs writes (beside the table; the page's split build fetches
    /// it instead of linking those formulas): read without error, it holds every formula the
    /// first view does not show, with the MathML the built-in table has for it, and none of the
    /// first view's own (the theory charts', `formulas.rs`).
    #[test]
    fn view_formulas_txt_holds_the_formulas_the_first_view_does_not_show() {
        let text = include_str!(concat!(env!("OUT_DIR"), "/view-formulas.txt"));
        let fetched = parse_formulas(text).unwrap_or_else(|e| panic!("{e}"));
        for formula in &fetched {
            let Some(Formula {
                rendered: Ok(parts),
                ..
            }) = lookup(&formula.latex)
            else {
                panic!("not rendered in the built-in table: {}", formula.latex);
            };
            let built_in: Vec<(usize, usize, String)> = parts
                .iter()
                .map(|p| (p.start, p.end, p.mathml.to_string()))
                .collect();
            assert_eq!(formula.parts, built_in, "{}", formula.latex);
        }
        let held = |latex: &str| fetched.iter().any(|f| f.latex == latex);
        let mut later: Vec<(String, &str)> = source::raw_strings(include_str!("view_formulas.rs"))
            .into_iter()
            .map(|latex| ("view_formulas.rs".to_string(), latex))
            .collect();
        for e in crate::numerics::estimators::REGISTRY {
            later.push((format!("estimator {}", e.id()), e.docs().formula));
        }
        for h in AHeuristic::ALL {
            later.push((format!("heuristic {}", h.cli_name()), h.formula()));
        }
        for m in crate::numerics::attention::methods::all() {
            later.push((format!("attention method {}", m.id()), m.formula()));
        }
        for (name, latex) in later {
            assert!(held(latex), "{name}: not in view-formulas.txt: {latex}");
        }
        let first_view = source::raw_strings(include_str!("formulas.rs"));
        assert!(!first_view.is_empty());
        for latex in first_view {
            assert!(
                !held(latex),
                "a first view's formula in view-formulas.txt: {latex}"
            );
        }
    }

    /// Every formula the page can show, with a name for the failure message.
    fn every_formula() -> Vec<(String, &'static str)> {
        let mut all: Vec<(String, &'static str)> = formulas::ALL
            .iter()
            .map(|(name, latex)| (format!("formulas::{name}"), *latex))
            .collect();
        for e in crate::numerics::estimators::REGISTRY {
            all.push((format!("estimator {}", e.id()), e.docs().formula));
        }
        for h in AHeuristic::ALL {
            all.push((format!("heuristic {}", h.cli_name()), h.formula()));
        }
        for m in crate::numerics::attention::methods::all() {
            all.push((format!("attention method {}", m.id()), m.formula()));
        }
        all
    }

    #[test]
    fn every_formula_the_page_shows_was_rendered_without_error() {
        for (name, latex) in every_formula() {
            let formula = lookup(latex).unwrap_or_else(|| {
                panic!("{name}: not in the build script's table (is it a raw string r\"…\" in one of build.rs's SOURCES?): {latex}")
            });
            let parts = formula
                .rendered
                .unwrap_or_else(|error| panic!("{name}: pulldown-latex: {error}"));
            assert!(!parts.is_empty(), "{name}: no part");
            for part in parts {
                assert!(!part.mathml.contains("<merror"), "{name}: {}", part.mathml);
                // pulldown-latex 0.8's slips, put right by build.rs.
                assert!(
                    !part.mathml.contains("\"minsize") && !part.mathml.contains("&amp;nbsp;"),
                    "{name}: {}",
                    part.mathml
                );
                // Firefox rejects (a page error) a script or fraction with the wrong number of
                // children: pulldown-latex writes `\operatorname{mean}_r` as an msub of three.
                if let Err(problem) = children_counts_hold(part.mathml) {
                    panic!("{name}: {problem} in {}", part.mathml);
                }
                // A script on a bare closing fence (TeX's `f(x)^2`) sets the fence apart from
                // what it closes: group it (`\left(x\right)^2`, `{(x)}^2`).
                for script in ["<msup><mo", "<msub><mo", "<msubsup><mo"] {
                    for (at, _) in part.mathml.match_indices(script) {
                        let base = part.mathml[at..].split("</mo>").next().unwrap_or_default();
                        assert!(
                            !base.ends_with([')', ']', '}']),
                            "{name}: a script on a bare closing fence in {}",
                            part.mathml
                        );
                    }
                }
            }
            let html = to_mathml(latex);
            assert_eq!(
                html.matches("<math ").count(),
                parts.len(),
                "{name}: {html}"
            );
            assert!(!html.contains("<code"), "{name}: {html}");
        }
    }

    /// Whether every `msub`, `msup`, `mfrac`, `munder`, `mover`, `mroot` has two element
    /// children and every `msubsup`, `munderover` three, as MathML requires.
    fn children_counts_hold(mathml: &str) -> Result<(), String> {
        let arity = |tag: &str| match tag {
            "msub" | "msup" | "mfrac" | "munder" | "mover" | "mroot" => Some(2),
            "msubsup" | "munderover" => Some(3),
            _ => None,
        };
        // (tag, children seen) of every open element.
        let mut open: Vec<(String, usize)> = Vec::new();
        for piece in mathml.split('<').skip(1) {
            let tag_text = piece.split('>').next().unwrap_or_default();
            let name: String = tag_text
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if tag_text.starts_with('/') {
                let (tag, children) = open.pop().ok_or("a closing tag without an opening one")?;
                if let Some(n) = arity(&tag).filter(|&n| n != children) {
                    return Err(format!("<{tag}> with {children} children, not {n}"));
                }
            } else {
                if let Some(parent) = open.last_mut() {
                    parent.1 += 1;
                }
                if !tag_text.ends_with('/') {
                    open.push((name, 0));
                }
            }
        }
        Ok(())
    }

    #[test]
    fn the_child_count_check_catches_what_firefox_rejects() {
        assert!(children_counts_hold("<msub><mi>x</mi><mi>i</mi></msub>").is_ok());
        assert!(
            children_counts_hold(
                "<msub><mspace width=\"0.1667em\" /><mi>mean</mi><mi>r</mi></msub>"
            )
            .is_err()
        );
        assert!(children_counts_hold("<mfrac><mn>1</mn></mfrac>").is_err());
    }

    #[test]
    fn lemma_3_1_groups_its_parentheses_under_their_squares() {
        // SM(x, y)² and (1 − e^{−|z|²})²: the square applies to the bracketed group, so the
        // closing parenthesis sits with what it closes (attributes left out of the comparison).
        let html = to_mathml(formulas::LEMMA_3_1_HCEXP_MSE)
            .replace(" symmetric=\"false\"", "")
            .replace(" stretchy=\"false\"", "")
            .replace(" stretchy=\"true\"", "");
        assert!(
            html.contains("<msup><mrow><mo>(</mo><mi>x</mi><mo>,</mo><mi>y</mi><mo>)</mo></mrow><mn>2</mn></msup>"),
            "{html}"
        );
        assert!(
            html.contains("<msup><mrow><mo>(</mo><mn>1</mn><mo>−</mo><msup><mi>e</mi><mrow><mi>−</mi><mi>|</mi><mi>z</mi><msup><mi>|</mi><mn>2</mn></msup></mrow></msup><mo>)</mo></mrow><mn>2</mn></msup>"),
            "{html}"
        );
    }

    #[test]
    fn a_long_formula_is_one_math_element_per_top_level_part() {
        // Two parts, with a breakable space between them.
        let html = to_mathml(formulas::ATTENTION_MATRICES);
        assert_eq!(html.matches("<math ").count(), 2, "{html}");
        assert!(html.contains("alttext=\"P_{ij} = "), "{html}");
        assert!(html.contains("</math> <math "), "{html}");
        assert_eq!(source::top_level_parts("x = 1").len(), 1);
        let parts = |latex: &'static str| -> Vec<&'static str> {
            source::top_level_parts(latex)
                .into_iter()
                .map(|range| &latex[range])
                .collect()
        };
        assert_eq!(
            parts(r"a = (b; c);\quad \text{d; e} = f\;g ;"),
            [r"a = (b; c);", r"\quad \text{d; e} = f\;g ;"]
        );
        assert_eq!(
            parts(r"a,\quad {b \quad c}\qquad d\quadx; \left(e; f\right)"),
            [
                r"a,",
                r"\quad {b \quad c}",
                r"\qquad d\quadx;",
                r"\left(e; f\right)"
            ]
        );
        assert_eq!(parts(r"\quad x; ;"), [r"\quad x;", ";"]);
    }

    #[test]
    fn the_inline_scaling_is_one_small_math_element() {
        let html = to_mathml(formulas::MODEL_SCALING_D);
        assert_eq!(
            html,
            "<math display=\"inline\" alttext=\"d^{-1/4}\"><msup><mi>d</mi><mrow><mi>−</mi><mn>1</mn><mo>/</mo><mn>4</mn></mrow></msup></math>"
        );
    }

    #[test]
    fn an_unknown_formula_is_its_escaped_source_never_a_panic() {
        for latex in ["", "x^", "{a", "<b> & \"c\"", r"\notacommand"] {
            let html = to_mathml(latex);
            assert!(
                html.starts_with("<code") && html.ends_with("</code>"),
                "{html}"
            );
            assert!(!html.contains("<b>") && !html.contains("\"c\""), "{html}");
        }
    }

    #[test]
    fn the_build_script_finds_exactly_the_raw_strings() {
        // The two formulas files: their raw strings are ALL's formulas.
        let mut found = source::raw_strings(include_str!("formulas.rs"));
        found.extend(source::raw_strings(include_str!("view_formulas.rs")));
        let mut expected: Vec<&str> = formulas::ALL.iter().map(|(_, latex)| *latex).collect();
        found.sort_unstable();
        expected.sort_unstable();
        assert_eq!(found, expected);
        // Not in comments, strings, characters; with hashes; not raw identifiers or byte strings.
        let rust = r##"
            // r"in a comment"
            /* r"in /* a nested */ block" */
            let a = "r\"in a string\"";
            let b = '"'; let c = '\''; fn f<'a>(x: &'a str) {}
            let r#type = br"bytes";
            let d = r"one";
            let e = r#"two "quoted""#;
        "##;
        assert_eq!(source::raw_strings(rust), ["one", r#"two "quoted""#]);
    }
}
