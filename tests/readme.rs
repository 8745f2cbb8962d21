//! Keeps docs/url-parameters.md's table true: every parameter is documented with the range
//! and default that the code enforces.

use softmax_kernel_lab::lab::config::{ExperimentConfig, Param};

#[test]
fn readme_documents_every_url_parameter_with_its_range_and_default() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/url-parameters.md"
    ))
    .expect("docs/url-parameters.md is readable");
    let defaults = ExperimentConfig::default();
    for param in Param::every() {
        let prefix = format!("| `{}` |", param.key());
        let row = readme
            .lines()
            .find(|line| line.starts_with(&prefix))
            .unwrap_or_else(|| {
                panic!(
                    "docs/url-parameters.md has no table row for `{}`",
                    param.key()
                )
            });
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | key | meaning | allowed | default |
        assert_eq!(
            cells[3],
            param.allowed(),
            "allowed values of `{}`",
            param.key()
        );
        assert_eq!(
            cells[4].trim_matches('`'),
            defaults.get(param),
            "default of `{}`",
            param.key()
        );
    }
}
