//! Keeps docs/url-parameters.md's tables true: each row is generated from the parameter's entry
//! in the table of `src/lab/config/params.rs` (key, meaning, what it accepts, its default), and
//! the file must hold exactly those rows, in that order. When it does not, the test prints the
//! rows to paste.

use softmax_kernel_lab::lab::config::{ExperimentConfig, Param, Section};

/// The row of one parameter, as docs/url-parameters.md writes it.
fn row(param: Param, defaults: &ExperimentConfig) -> String {
    let default = defaults.get(param);
    // A list of ids reads best as code.
    // A default of several lines (the retrieval set) as one cell.
    let default = if default.contains('\n') {
        default.lines().collect::<Vec<_>>().join("<br>")
    } else if default.contains(',') {
        format!("`{default}`")
    } else {
        default
    };
    format!(
        "| `{}` | {} | {} | {} |",
        param.key(),
        param.spec().meaning,
        param.allowed_in_docs(),
        default
    )
}

#[test]
fn the_docs_table_is_the_parameter_table() {
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/url-parameters.md"
    ))
    .expect("docs/url-parameters.md is readable");
    let defaults = ExperimentConfig::default();
    for section in [Section::Kernel, Section::Attention] {
        let expected: Vec<String> = Param::in_section(section)
            .map(|p| row(p, &defaults))
            .collect();
        let keys: Vec<String> = Param::in_section(section)
            .map(|p| format!("| `{}` |", p.key()))
            .collect();
        let found: Vec<&str> = docs
            .lines()
            .filter(|line| keys.iter().any(|k| line.starts_with(k.as_str())))
            .collect();
        assert_eq!(
            found,
            expected,
            "docs/url-parameters.md's {section:?} table differs from the parameter table; its rows should be:\n{}",
            expected.join("\n")
        );
    }
}
