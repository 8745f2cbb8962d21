//! How the page presents the configuration, apart from what it computes: the guided tour's
//! step (`tour=N`), the presenter mode (`present=1`) and a single embedded figure
//! (`embed=FIGURE`). These keys live in the URL beside [`ExperimentConfig`]'s but are not part
//! of it: no worker and no command line reads them, and a link without them computes the same.

use std::fmt;

use crate::lab::attention::report::AttentionPart;
use crate::lab::config::{ExperimentConfig, ParamError, View};

/// The figures a course page can embed alone (`?embed=ID`), each with its own few controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmbedFigure {
    /// Figure 1: true against estimated kernel values, one panel per estimator.
    Scatter,
    /// Figures 2–3: MSE and maximum relative error over many datasets (boxplots).
    Errors,
    /// The MSE against m, measured beside Lemma 3.1's line.
    MseVsM,
    /// Attention rows: exact against approximate attention matrices (the attention view).
    Rows,
    /// Where linear attention pays: time against sequence length.
    Lengths,
}

impl EmbedFigure {
    /// Every embeddable figure, in the order docs/teaching.md lists them.
    pub const ALL: [EmbedFigure; 5] = [
        EmbedFigure::Scatter,
        EmbedFigure::Errors,
        EmbedFigure::MseVsM,
        EmbedFigure::Rows,
        EmbedFigure::Lengths,
    ];

    /// The URL value.
    pub fn id(self) -> &'static str {
        match self {
            EmbedFigure::Scatter => "scatter",
            EmbedFigure::Errors => "errors",
            EmbedFigure::MseVsM => "mse-vs-m",
            EmbedFigure::Rows => "rows",
            EmbedFigure::Lengths => "lengths",
        }
    }

    /// The figure whose URL value is `id`.
    pub fn from_id(id: &str) -> Option<EmbedFigure> {
        EmbedFigure::ALL.into_iter().find(|f| f.id() == id)
    }

    /// The view whose computation draws the figure (an embed opens on it, whatever the URL's
    /// `view` says, so that the link to the full lab opens the same view).
    pub fn view(self) -> View {
        match self {
            EmbedFigure::Scatter | EmbedFigure::Errors | EmbedFigure::MseVsM => View::Kernel,
            EmbedFigure::Rows | EmbedFigure::Lengths => View::Attention,
        }
    }

    /// The attention view's parts the figure shows (the others are not computed in its frame);
    /// none for a kernel figure, whose job computes the kernel view's parts as the full page's.
    pub fn attention_parts(self) -> &'static [AttentionPart] {
        match self {
            EmbedFigure::Rows => &[AttentionPart::Main],
            EmbedFigure::Lengths => &[AttentionPart::Lengths],
            EmbedFigure::Scatter | EmbedFigure::Errors | EmbedFigure::MseVsM => &[],
        }
    }

    /// The figure's title (the frame's heading and the page's title).
    pub fn title(self) -> &'static str {
        match self {
            EmbedFigure::Scatter => "True against estimated softmax kernel",
            EmbedFigure::Errors => "Errors over many random datasets",
            EmbedFigure::MseVsM => "The MSE against the number of features m",
            EmbedFigure::Rows => "Attention matrices: exact against approximate",
            EmbedFigure::Lengths => "Where linear attention pays: time against sequence length",
        }
    }
}

/// How the page shows itself. `Default` is the full lab.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageMode {
    /// The tour's step on screen, 0-based (`tour=1` in the URL is step 0).
    pub tour: Option<usize>,
    /// Presenter mode: larger type, ← and → step through the tour.
    pub present: bool,
    /// One figure alone, for an `<iframe>`.
    pub embed: Option<EmbedFigure>,
}

/// The URL keys of [`PageMode`].
pub const TOUR_KEY: &str = "tour";
pub const PRESENT_KEY: &str = "present";
pub const EMBED_KEY: &str = "embed";

/// A URL value of a [`PageMode`] key that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageModeError {
    pub key: &'static str,
    pub message: String,
}

impl fmt::Display for PageModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl From<PageModeError> for ParamError {
    fn from(error: PageModeError) -> Self {
        ParamError {
            key: error.key.to_string(),
            message: error.message,
        }
    }
}

/// A URL query split into the page's mode and the rest (what [`ExperimentConfig::from_query`]
/// reads).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitQuery {
    pub mode: PageMode,
    /// Values of the mode's keys that were refused (the key is then left at its default).
    pub errors: Vec<PageModeError>,
    /// The query without the mode's keys, `application/x-www-form-urlencoded`.
    pub rest: String,
}

impl PageMode {
    /// Takes the mode's keys out of `query` (with or without its `?`). `steps` is the number
    /// of the tour's steps: `tour=N` must name one of them (1-based, as a reader counts).
    pub fn split(query: &str, steps: usize) -> SplitQuery {
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(query.trim_start_matches('?')).unwrap_or_default();
        let mut mode = PageMode::default();
        let mut errors = Vec::new();
        let mut rest = Vec::new();
        for (key, value) in pairs {
            match key.as_str() {
                TOUR_KEY => match value.trim().parse::<usize>() {
                    Ok(step) if (1..=steps).contains(&step) => mode.tour = Some(step - 1),
                    _ => errors.push(PageModeError {
                        key: TOUR_KEY,
                        message: format!("the tour's step is a whole number from 1 to {steps}"),
                    }),
                },
                PRESENT_KEY => match value.trim() {
                    "1" | "true" => mode.present = true,
                    "0" | "false" => mode.present = false,
                    _ => errors.push(PageModeError {
                        key: PRESENT_KEY,
                        message: "presenter mode is 1 (on) or 0 (off)".to_string(),
                    }),
                },
                EMBED_KEY => match EmbedFigure::from_id(value.trim()) {
                    Some(figure) => mode.embed = Some(figure),
                    None => errors.push(PageModeError {
                        key: EMBED_KEY,
                        message: format!(
                            "the figure is one of {}",
                            EmbedFigure::ALL.map(EmbedFigure::id).join(", ")
                        ),
                    }),
                },
                _ => rest.push((key, value)),
            }
        }
        SplitQuery {
            mode,
            errors,
            rest: serde_urlencoded::to_string(rest).unwrap_or_default(),
        }
    }

    /// The mode's keys as a query (empty for the full lab), to write before the configuration's.
    pub fn to_query(&self) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(figure) = self.embed {
            pairs.push((EMBED_KEY, figure.id().to_string()));
        }
        if let Some(step) = self.tour {
            pairs.push((TOUR_KEY, (step + 1).to_string()));
        }
        if self.present {
            pairs.push((PRESENT_KEY, "1".to_string()));
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }

    /// The whole query of a page in this mode showing `config`: the mode's keys, then the
    /// configuration's (which always writes every kernel parameter, so the link is whole).
    pub fn query_with(&self, config: &ExperimentConfig) -> String {
        let mode = self.to_query();
        let config = config.to_query();
        match (mode.is_empty(), config.is_empty()) {
            (true, _) => config,
            (false, true) => mode,
            (false, false) => format!("{mode}&{config}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_keys_are_taken_out_and_the_rest_is_kept_in_order() {
        let split = PageMode::split("?m=64&tour=3&present=1&seed=2&embed=errors", 10);
        assert_eq!(
            split.mode,
            PageMode {
                tour: Some(2),
                present: true,
                embed: Some(EmbedFigure::Errors)
            }
        );
        assert!(split.errors.is_empty());
        assert_eq!(split.rest, "m=64&seed=2");
    }

    #[test]
    fn bad_values_are_refused_with_what_is_allowed() {
        let split = PageMode::split("tour=0&present=yes&embed=pie&tour=11", 10);
        assert_eq!(split.mode, PageMode::default());
        let keys: Vec<_> = split.errors.iter().map(|e| e.key).collect();
        assert_eq!(keys, [TOUR_KEY, PRESENT_KEY, EMBED_KEY, TOUR_KEY]);
        assert!(split.errors[0].message.contains("1 to 10"));
        assert!(split.errors[2].to_string().contains("mse-vs-m"));
    }

    #[test]
    fn a_written_query_reads_back() {
        let config = ExperimentConfig {
            m: 64,
            ..ExperimentConfig::default()
        };
        for mode in [
            PageMode::default(),
            PageMode {
                tour: Some(4),
                present: true,
                embed: None,
            },
            PageMode {
                tour: None,
                present: false,
                embed: Some(EmbedFigure::Lengths),
            },
        ] {
            let query = mode.query_with(&config);
            let split = PageMode::split(&query, 10);
            assert_eq!(split.mode, mode, "{query}");
            let (parsed, notices) = ExperimentConfig::from_query(&split.rest);
            assert!(notices.is_empty(), "{notices:?}");
            assert_eq!(parsed, config);
        }
    }

    #[test]
    fn every_figure_id_reads_back() {
        for figure in EmbedFigure::ALL {
            assert_eq!(EmbedFigure::from_id(figure.id()), Some(figure));
        }
    }

    #[test]
    fn an_attention_figure_computes_only_its_own_parts_and_a_kernel_figure_none() {
        for figure in EmbedFigure::ALL {
            let parts = figure.attention_parts();
            match figure.view() {
                View::Kernel => assert!(parts.is_empty(), "{figure:?}"),
                View::Attention => {
                    assert_eq!(parts.len(), 1, "{figure:?}");
                    assert!(AttentionPart::ALL.contains(&parts[0]));
                }
                View::Lm => panic!("no figure of the language model is embeddable yet"),
            }
            assert!(!figure.title().is_empty());
        }
    }

    #[test]
    fn any_embed_value_is_either_a_figure_or_a_notice() {
        for value in [
            "",
            " ",
            "Scatter",
            "rows ",
            "mse_vs_m",
            "%00",
            "lengths\u{0}",
            "éé",
        ] {
            let split = PageMode::split(&format!("embed={value}"), 10);
            assert_eq!(
                split.mode.embed.is_some(),
                split.errors.is_empty(),
                "{value:?}: {split:?}"
            );
        }
        let split = PageMode::split("embed=rows%20", 10);
        assert_eq!(split.mode.embed, Some(EmbedFigure::Rows));
    }
}
