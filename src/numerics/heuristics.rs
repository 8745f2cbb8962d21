//! Choices of the diagonal matrix `A = diag(a)` for CEXP/HCEXP (REFERENCE.md, "Choosing a
//! diagonal A").

use crate::numerics::portable::Libm;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::dataset::SampleMoments;

/// Smallest diagonal entry an A heuristic may produce; smaller values are clamped up to it.
pub const A_MIN: f64 = 1e-3;
/// Largest diagonal entry an A heuristic may produce; larger values are clamped down to it.
///
/// Mean-only A grows like `|μ_x,i|^-1/2` as a query mean approaches 0 (seed paper, end of
/// section 3), and is undefined at 0; clamping keeps `A` and `A^-T` finite and invertible.
pub const A_MAX: f64 = 1e3;

/// How the diagonal of A is chosen from the sample statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AHeuristic {
    /// `a_i = 1`: CEXP becomes PRF.
    Identity,
    /// `a_i = sqrt(|μ_y,i| / |μ_x,i|)` (appendix of Hybrid Random Features).
    MeanOnly,
    /// `a_i = ((σ²_y,i + μ²_y,i) / (σ²_x,i + μ²_x,i))^(1/4)` (seed paper, Lemma 3.4).
    VarianceAdjusted,
}

impl AHeuristic {
    /// Every heuristic, in the order the page shows them.
    pub const ALL: [AHeuristic; 3] = [
        AHeuristic::Identity,
        AHeuristic::MeanOnly,
        AHeuristic::VarianceAdjusted,
    ];

    /// The name used on the command line (`--a`).
    pub fn cli_name(self) -> &'static str {
        match self {
            AHeuristic::Identity => "identity",
            AHeuristic::MeanOnly => "mean-only",
            AHeuristic::VarianceAdjusted => "variance-adjusted",
        }
    }

    /// The short name used in the URL's `est` list.
    pub fn url_name(self) -> &'static str {
        match self {
            AHeuristic::Identity => "prf",
            AHeuristic::MeanOnly => "mean",
            AHeuristic::VarianceAdjusted => "var",
        }
    }

    /// A human-readable description of the formula.
    pub fn formula(self) -> &'static str {
        match self {
            AHeuristic::Identity => r"a_i = 1",
            AHeuristic::MeanOnly => r"a_i = \sqrt{|\mu_{y,i}| / |\mu_{x,i}|}",
            AHeuristic::VarianceAdjusted => {
                r"a_i = \left(\frac{\sigma_{y,i}^2 + \mu_{y,i}^2}{\sigma_{x,i}^2 + \mu_{x,i}^2}\right)^{1/4}"
            }
        }
    }
}

/// An unknown heuristic name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownHeuristic(pub String);

impl fmt::Display for UnknownHeuristic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown A heuristic `{}` (expected identity, mean-only or variance-adjusted, or prf, mean, var)",
            self.0
        )
    }
}

impl std::error::Error for UnknownHeuristic {}

impl FromStr for AHeuristic {
    type Err = UnknownHeuristic;

    /// Accepts the command-line names and the URL's short names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "identity" | "prf" => Ok(AHeuristic::Identity),
            "mean-only" | "mean" => Ok(AHeuristic::MeanOnly),
            "variance-adjusted" | "var" => Ok(AHeuristic::VarianceAdjusted),
            other => Err(UnknownHeuristic(other.chars().take(40).collect())),
        }
    }
}

/// A diagonal A with the number of entries that had to be clamped into `[A_MIN, A_MAX]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagonalA {
    pub a: Vec<f64>,
    /// Entries whose formula gave a value outside `[A_MIN, A_MAX]`, or no value at all (0/0).
    pub clamped: usize,
}

/// `ratio^(exponent)` clamped into `[A_MIN, A_MAX]`; `numerator / denominator` with both zero
/// (no information either way) gives 1. Returns the entry and whether it was clamped.
fn clamped_power_ratio(numerator: f64, denominator: f64, exponent: f64) -> (f64, bool) {
    if numerator == 0.0 && denominator == 0.0 {
        return (1.0, true);
    }
    let value = (numerator / denominator).libm_powf(exponent);
    if value.is_nan() {
        (1.0, true)
    } else if value < A_MIN {
        (A_MIN, true)
    } else if value > A_MAX {
        (A_MAX, true)
    } else {
        (value, false)
    }
}

/// The diagonal of A chosen by `heuristic` from the sample statistics.
pub fn diagonal_a(heuristic: AHeuristic, moments: &SampleMoments) -> DiagonalA {
    let d = moments.mean_x.len();
    let entries: Vec<(f64, bool)> = match heuristic {
        AHeuristic::Identity => vec![(1.0, false); d],
        AHeuristic::MeanOnly => mean_only_entries(moments),
        AHeuristic::VarianceAdjusted => variance_adjusted_entries(moments),
    };
    DiagonalA {
        clamped: entries.iter().filter(|(_, c)| *c).count(),
        a: entries.into_iter().map(|(a, _)| a).collect(),
    }
}

fn mean_only_entries(moments: &SampleMoments) -> Vec<(f64, bool)> {
    moments
        .mean_y
        .iter()
        .zip(&moments.mean_x)
        .map(|(my, mx)| clamped_power_ratio(my.abs(), mx.abs(), 0.5))
        .collect()
}

fn variance_adjusted_entries(moments: &SampleMoments) -> Vec<(f64, bool)> {
    (0..moments.mean_x.len())
        .map(|i| {
            let second_moment_y = moments.var_y[i] + moments.mean_y[i] * moments.mean_y[i];
            let second_moment_x = moments.var_x[i] + moments.mean_x[i] * moments.mean_x[i];
            clamped_power_ratio(second_moment_y, second_moment_x, 0.25)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments() -> SampleMoments {
        SampleMoments {
            mean_x: vec![4.0, -1.0, 0.0, 0.0],
            var_x: vec![9.0, 0.0, 1.0, 0.0],
            mean_y: vec![1.0, 4.0, 2.0, 0.0],
            var_y: vec![0.0, 0.0, 0.0, 0.0],
        }
    }

    #[test]
    fn mean_only_matches_the_formula_and_guards_zero_means() {
        let a = diagonal_a(AHeuristic::MeanOnly, &moments());
        assert!((a.a[0] - 0.5).abs() < 1e-12);
        assert!((a.a[1] - 2.0).abs() < 1e-12);
        assert_eq!(a.a[2], A_MAX, "zero query mean clamps to A_MAX");
        assert_eq!(a.a[3], 1.0, "0/0 gives 1");
        assert_eq!(a.clamped, 2);
    }

    #[test]
    fn variance_adjusted_matches_lemma_3_4() {
        let a = diagonal_a(AHeuristic::VarianceAdjusted, &moments());
        // (0 + 1) / (9 + 16) = 1/25, fourth root = 1/sqrt(5)
        assert!((a.a[0] - 1.0 / 5f64.sqrt()).abs() < 1e-12);
        assert!((a.a[1] - 2.0).abs() < 1e-12);
        assert!((a.a[2] - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(a.clamped, 1);
    }

    #[test]
    fn heuristics_agree_when_variances_vanish() {
        // Seed paper: "the same entries in the case where variance equals 0".
        let m = SampleMoments::of_pair(&[0.3, -2.0, 5.0], &[1.2, 0.7, -0.1]);
        let mean = diagonal_a(AHeuristic::MeanOnly, &m);
        let var = diagonal_a(AHeuristic::VarianceAdjusted, &m);
        for (p, q) in mean.a.iter().zip(&var.a) {
            assert!((p - q).abs() < 1e-12);
        }
    }

    #[test]
    fn names_round_trip() {
        for h in AHeuristic::ALL {
            assert_eq!(h.cli_name().parse::<AHeuristic>().unwrap(), h);
            assert_eq!(h.url_name().parse::<AHeuristic>().unwrap(), h);
        }
        assert!("bogus".parse::<AHeuristic>().is_err());
    }
}
