//! Ready-made setups for a lecture. A preset is only a URL query: choosing one sets the
//! configuration it names (every other parameter at its default), and a link to it is the
//! page's address with that query.

use super::experiment::ExperimentConfig;

/// One preset: a link and the line a teacher would say about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// Stable id (`data-preset`).
    pub id: &'static str,
    pub label: &'static str,
    /// The URL query (without `?`); parameters it does not name keep their defaults.
    pub query: &'static str,
    /// Shown when the preset is chosen.
    pub explanation: &'static str,
}

/// Every preset, in the page's order.
pub const PRESETS: [Preset; 8] = [
    Preset {
        id: "paper",
        label: "the paper's Figures 1–3",
        query: "",
        explanation: "The seed paper's experiment (section 4): d = 50, means Laplace with rate 50 (scale 0.02), Gamma variances, norms 5 and 0.5, m = 1024. PRF is poor, the mean-only A better, the variance-adjusted A best by far.",
    },
    Preset {
        id: "scale-50",
        label: "Laplace scale 50",
        query: "scale=50",
        explanation: "The other reading of the paper's \"Laplace(0, 50)\": scale 50 instead of rate 50. The means now dominate the variances, so both data-chosen A's nearly coincide and PRF falls far behind (README, \"The Laplace parameter\").",
    },
    Preset {
        id: "mean-only-explodes",
        label: "mean-only A explodes",
        query: "scale=0.001&xshape=1&yshape=1&xnorm=1.5&ynorm=1.5",
        explanation: "Means near zero next to unit spreads, and equal norms, so A = I is already balanced: the mean-only A divides by |μ_x,i| ≈ 0, its a_i scatter over decades, and its median MSE is about 20 times A = I's, while the variance-adjusted A (it uses σ² + μ²) stays best.",
    },
    Preset {
        id: "notebook",
        label: "the author's notebook",
        query: "omega=fresh",
        explanation: "As the seed author's notebook does it: fresh ω for every pair instead of one ω per dataset (what linear attention does). The expected MSE is the same; the estimates of one dataset are no longer correlated.",
    },
    Preset {
        id: "large-norms",
        label: "large norms",
        query: "xnorm=50&ynorm=50",
        explanation: "Query and key norms of 50: SM(x, y) = exp(x·y) reaches far beyond f64's range (e⁷⁰⁹). The lab computes every estimate and error in the log domain, so nothing overflows; the relative errors stay meaningful.",
    },
    Preset {
        id: "high-dimension",
        label: "high dimension",
        query: "d=200",
        explanation: "d = 200 instead of 50: |z|² = |Ax + A⁻ᵀy|² grows with d, so every estimator's MSE grows as exp(|z|²); a good A matters more.",
    },
    Preset {
        id: "few-features",
        label: "few features",
        query: "m=16",
        explanation: "m = 16 random features instead of 1024: the MSE is 64 times larger (it falls like 1/m), and the scatter spreads accordingly; the ordering of the estimators does not change.",
    },
    Preset {
        id: "previous-token-head",
        label: "attention: a real head",
        query: "view=attention&src=minilm&layer=0&head=2",
        explanation: "A real head of all-MiniLM-L6-v2 (layer 0, head 2) that puts nearly all of each row's weight on the previous token: a sharp P that every linear method blurs.",
    },
];

impl Preset {
    /// The configuration the preset names (every other parameter at its default).
    pub fn config(&self) -> ExperimentConfig {
        ExperimentConfig::from_query(self.query).0
    }

    /// The preset whose configuration equals `config` (ignoring the probed pair), if any.
    pub fn matching(config: &ExperimentConfig) -> Option<&'static Preset> {
        let mut config = config.clone();
        config.probe = None;
        PRESETS.iter().find(|p| p.config() == config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explanations_and_estimator_notes_are_prose_without_tex() {
        // They are shown as text, not through the MathML converter: no braces, `sqrt(` or
        // `^` (superscripts are Unicode: e⁷⁰⁹, A⁻ᵀ).
        let notices = crate::numerics::estimators::REGISTRY
            .iter()
            .map(|e| e.docs().notice);
        for text in PRESETS.iter().map(|p| p.explanation).chain(notices) {
            assert!(
                !text.contains(['{', '}', '^']) && !text.contains("sqrt("),
                "{text}"
            );
        }
    }

    #[test]
    fn every_preset_is_a_clean_link_and_they_differ() {
        for preset in &PRESETS {
            let (config, notices) = ExperimentConfig::from_query(preset.query);
            assert!(notices.is_empty(), "{}: {notices:?}", preset.id);
            assert!(config.validate().is_ok(), "{}", preset.id);
            assert_eq!(Preset::matching(&config).map(|p| p.id), Some(preset.id));
        }
        let mut ids: Vec<&str> = PRESETS.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), PRESETS.len());
        let other = ExperimentConfig {
            m: 999,
            ..ExperimentConfig::default()
        };
        assert_eq!(Preset::matching(&other), None);
    }

    #[test]
    fn mean_only_explodes_where_its_preset_says() {
        // The preset as the page runs it (its default sizes), on three seeds.
        let preset = PRESETS
            .iter()
            .find(|p| p.id == "mean-only-explodes")
            .unwrap();
        for seed in 0..3 {
            let config = ExperimentConfig::from_query(&format!("{}&seed={seed}", preset.query)).0;
            let result = crate::lab::kernel::experiment::run_experiment(&config).unwrap();
            let log_median = |id: &str| {
                result
                    .summaries
                    .iter()
                    .find(|s| s.estimator.id() == id)
                    .unwrap()
                    .log_median_mse
            };
            // Measured at seeds 0, 1, 2: mean-only 1.21, 1.22, 2.15; A = I 0.062, 0.059,
            // 0.105; variance-adjusted 0.031, 0.033, 0.051. Mean-only at least 5 times A = I's
            // median, the variance-adjusted A below A = I's.
            let (mean_only, identity) = (log_median("hcexp-mean"), log_median("prf-hyp"));
            assert!(
                mean_only > identity + 5f64.ln(),
                "seed {seed}: {mean_only} vs {identity}"
            );
            assert!(identity > log_median("hcexp-var"), "seed {seed}");
        }
    }
}
