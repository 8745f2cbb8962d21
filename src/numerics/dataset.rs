//! The seed paper's synthetic query/key datasets (section 4), with every parameter adjustable.
//!
//! Per dataset (REFERENCE.md, "The seed paper's experiment"):
//! `μ_x,j ~ Laplace(0, b_x)`, `μ_y,j ~ Laplace(0, b_y)` (the paper: one `b` for both sides), `v_x,j ~ Gamma(k_x, 1)`, `v_y,j ~ Gamma(k_y, 1)`,
//! `x_i ~ N(μ_x, diag(v_x))`, `y_i ~ N(μ_y, diag(v_y))`, then every `x_i` is multiplied by
//! `t_x / mean_i |x_i|` and every `y_i` by `t_y / mean_i |y_i|` so that the mean norms are the
//! targets `t_x`, `t_y` (5 and 0.5 in the paper).

use std::fmt;

use super::portable::{Exp1, Gamma, StandardNormal};
use rand::Rng;

/// Parameters of the generator. Build with [`DatasetParams::new`], which validates them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DatasetParams {
    d: usize,
    n: usize,
    x_mean_scale: f64,
    y_mean_scale: f64,
    x_shape: f64,
    y_shape: f64,
    x_norm: f64,
    y_norm: f64,
}

/// Why a dataset could not be generated.
#[derive(Clone, Debug, PartialEq)]
pub enum DatasetError {
    /// A parameter is outside what the generator can use.
    InvalidParameter { name: &'static str, reason: String },
    /// All samples of one side are zero, so they cannot be rescaled to a target norm.
    DegenerateSample { side: &'static str },
}

impl fmt::Display for DatasetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetError::InvalidParameter { name, reason } => {
                write!(f, "dataset parameter `{name}`: {reason}")
            }
            DatasetError::DegenerateSample { side } => write!(
                f,
                "every {side} sample is the zero vector, so it cannot be rescaled to its target norm"
            ),
        }
    }
}

impl std::error::Error for DatasetError {}

fn positive_finite(name: &'static str, value: f64) -> Result<f64, DatasetError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(DatasetError::InvalidParameter {
            name,
            reason: format!("must be a positive finite number, got {value}"),
        })
    }
}

impl DatasetParams {
    /// Validates: `d ≥ 1`, `n ≥ 2` (sample variances need two samples), and the Laplace scale,
    /// Gamma shapes and target norms positive and finite.
    pub fn new(
        d: usize,
        n: usize,
        mean_scale: f64,
        x_shape: f64,
        y_shape: f64,
        x_norm: f64,
        y_norm: f64,
    ) -> Result<Self, DatasetError> {
        if d == 0 {
            return Err(DatasetError::InvalidParameter {
                name: "d",
                reason: "the dimension must be at least 1".into(),
            });
        }
        if n < 2 {
            return Err(DatasetError::InvalidParameter {
                name: "n",
                reason: "at least 2 pairs are needed for sample variances".into(),
            });
        }
        Ok(Self {
            d,
            n,
            x_mean_scale: positive_finite("mean_scale", mean_scale)?,
            y_mean_scale: mean_scale,
            x_shape: positive_finite("x_shape", x_shape)?,
            y_shape: positive_finite("y_shape", y_shape)?,
            x_norm: positive_finite("x_norm", x_norm)?,
            y_norm: positive_finite("y_norm", y_norm)?,
        })
    }

    /// Separate Laplace scales for the query means (`b_x`) and the key means (`b_y`), in place
    /// of the one `mean_scale` given to [`DatasetParams::new`]: how far each side's means
    /// spread, set apart. Both must be positive and finite.
    pub fn with_mean_scales(
        self,
        x_mean_scale: f64,
        y_mean_scale: f64,
    ) -> Result<Self, DatasetError> {
        Ok(Self {
            x_mean_scale: positive_finite("x_mean_scale", x_mean_scale)?,
            y_mean_scale: positive_finite("y_mean_scale", y_mean_scale)?,
            ..self
        })
    }

    /// The dimension of queries and keys.
    pub fn d(&self) -> usize {
        self.d
    }

    /// The number of (x, y) pairs.
    pub fn n(&self) -> usize {
        self.n
    }
}

/// `n` queries and `n` keys in `R^d`, row-major (`x[i * d + j]` is component j of query i).
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub d: usize,
    pub n: usize,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Dataset {
    /// Query `i`.
    pub fn query(&self, i: usize) -> &[f64] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// Key `i`.
    pub fn key(&self, i: usize) -> &[f64] {
        &self.y[i * self.d..(i + 1) * self.d]
    }

    /// Component-wise sample means and unbiased sample variances of queries and keys.
    pub fn moments(&self) -> SampleMoments {
        let (mean_x, var_x) = column_moments(&self.x, self.n, self.d);
        let (mean_y, var_y) = column_moments(&self.y, self.n, self.d);
        SampleMoments {
            mean_x,
            var_x,
            mean_y,
            var_y,
        }
    }
}

/// Component-wise sample statistics, the input of the A heuristics.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SampleMoments {
    pub mean_x: Vec<f64>,
    pub var_x: Vec<f64>,
    pub mean_y: Vec<f64>,
    pub var_y: Vec<f64>,
}

impl SampleMoments {
    /// The moments of a single pair: its components are the means and the variances are 0
    /// (how the command line's single-pair mode feeds the heuristics).
    pub fn of_pair(x: &[f64], y: &[f64]) -> Self {
        Self {
            mean_x: x.to_vec(),
            var_x: vec![0.0; x.len()],
            mean_y: y.to_vec(),
            var_y: vec![0.0; y.len()],
        }
    }
}

/// Means and unbiased variances (divisor n − 1) of the columns of a row-major n × d matrix.
fn column_moments(rows: &[f64], n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut mean = vec![0.0; d];
    for row in rows.chunks_exact(d) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += v;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let mut var = vec![0.0; d];
    for row in rows.chunks_exact(d) {
        for ((s, v), m) in var.iter_mut().zip(row).zip(&mean) {
            *s += (v - m) * (v - m);
        }
    }
    let divisor = (n.max(2) - 1) as f64;
    var.iter_mut().for_each(|s| *s /= divisor);
    (mean, var)
}

/// A Laplace(0, b) draw as `b · (E₁ − E₂)` with independent standard exponentials: the
/// difference of two i.i.d. Exp(1) variables is standard Laplace.
fn laplace<R: Rng + ?Sized>(rng: &mut R, scale: f64) -> f64 {
    let e1: f64 = Exp1.sample(rng);
    let e2: f64 = Exp1.sample(rng);
    scale * (e1 - e2)
}

/// Draws one side (queries or keys): Laplace(0, `mean_scale`) means, Gamma variances, Gaussian samples,
/// rescaled to mean norm `target_norm`.
fn sample_side<R: Rng + ?Sized>(
    rng: &mut R,
    params: &DatasetParams,
    mean_scale: f64,
    shape: f64,
    target_norm: f64,
    side: &'static str,
) -> Result<Vec<f64>, DatasetError> {
    let d = params.d;
    let gamma = Gamma::new(shape, 1.0).map_err(|e| DatasetError::InvalidParameter {
        name: if side == "query" {
            "x_shape"
        } else {
            "y_shape"
        },
        reason: e.to_string(),
    })?;
    let means: Vec<f64> = (0..d).map(|_| laplace(rng, mean_scale)).collect();
    let std_devs: Vec<f64> = (0..d).map(|_| gamma.sample(rng).sqrt()).collect();
    let mut samples = Vec::with_capacity(params.n * d);
    for _ in 0..params.n {
        for (mu, sd) in means.iter().zip(&std_devs) {
            let z: f64 = StandardNormal.sample(rng);
            samples.push(mu + sd * z);
        }
    }
    let mean_norm = samples
        .chunks_exact(d)
        .map(|row| row.iter().map(|v| v * v).sum::<f64>().sqrt())
        .sum::<f64>()
        / params.n as f64;
    if !(mean_norm.is_finite() && mean_norm > 0.0) {
        return Err(DatasetError::DegenerateSample { side });
    }
    let factor = target_norm / mean_norm;
    samples.iter_mut().for_each(|v| *v *= factor);
    Ok(samples)
}

/// Generates one dataset; queries are drawn before keys from the same stream.
pub fn generate<R: Rng + ?Sized>(
    params: &DatasetParams,
    rng: &mut R,
) -> Result<Dataset, DatasetError> {
    let p = params;
    let x = sample_side(rng, p, p.x_mean_scale, p.x_shape, p.x_norm, "query")?;
    let y = sample_side(rng, p, p.y_mean_scale, p.y_shape, p.y_norm, "key")?;
    Ok(Dataset {
        d: params.d,
        n: params.n,
        x,
        y,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::rng::{StreamPurpose, stream_rng};

    fn paper_params(n: usize) -> DatasetParams {
        DatasetParams::new(50, n, 50.0, 0.02, 0.01, 5.0, 0.5).unwrap()
    }

    #[test]
    fn rescaled_mean_norms_hit_the_targets() {
        let data = generate(
            &paper_params(300),
            &mut stream_rng(1, StreamPurpose::Dataset, 0, 0),
        )
        .unwrap();
        let mean_norm = |rows: &[f64]| {
            rows.chunks_exact(50)
                .map(|r| r.iter().map(|v| v * v).sum::<f64>().sqrt())
                .sum::<f64>()
                / 300.0
        };
        assert!((mean_norm(&data.x) - 5.0).abs() < 1e-9);
        assert!((mean_norm(&data.y) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn same_seed_same_dataset() {
        let a = generate(
            &paper_params(10),
            &mut stream_rng(9, StreamPurpose::Dataset, 2, 0),
        );
        let b = generate(
            &paper_params(10),
            &mut stream_rng(9, StreamPurpose::Dataset, 2, 0),
        );
        assert_eq!(a, b);
    }

    #[test]
    fn laplace_draws_have_the_right_mean_absolute_value_and_variance() {
        // For Laplace(0, b): E|X| = b, Var X = 2b². With N = 200k draws the standard error of the
        // mean of |X| is b/sqrt(N) (Var|X| = b²), so 4 standard errors is 4b/sqrt(N).
        let mut rng = stream_rng(3, StreamPurpose::Trial, 0, 0);
        let b = 2.5;
        let n = 200_000;
        let draws: Vec<f64> = (0..n).map(|_| laplace(&mut rng, b)).collect();
        let mean_abs = draws.iter().map(|v| v.abs()).sum::<f64>() / n as f64;
        assert!(
            (mean_abs - b).abs() < 4.0 * b / (n as f64).sqrt(),
            "{mean_abs}"
        );
        let mean = draws.iter().sum::<f64>() / n as f64;
        // sd of the mean: sqrt(2) b / sqrt(N)
        assert!(
            mean.abs() < 4.0 * 2f64.sqrt() * b / (n as f64).sqrt(),
            "{mean}"
        );
    }

    #[test]
    fn moments_are_the_unbiased_sample_statistics() {
        let data = Dataset {
            d: 2,
            n: 3,
            x: vec![1.0, 0.0, 2.0, 0.0, 3.0, 3.0],
            y: vec![0.0; 6],
        };
        let m = data.moments();
        assert_eq!(m.mean_x, vec![2.0, 1.0]);
        assert_eq!(m.var_x, vec![1.0, 3.0]);
        assert_eq!(m.var_y, vec![0.0, 0.0]);
    }

    #[test]
    fn per_side_mean_scales_move_only_their_side() {
        let both = DatasetParams::new(40, 400, 0.5, 1.0, 1.0, 5.0, 0.5).unwrap();
        let apart = both.with_mean_scales(0.5, 100.0).unwrap();
        let draw = |p: &DatasetParams| {
            generate(p, &mut stream_rng(4, StreamPurpose::Dataset, 0, 0)).unwrap()
        };
        let (same, keys_apart) = (draw(&both), draw(&apart));
        // Queries are drawn first from the same stream with the same parameters: identical.
        assert_eq!(same.x, keys_apart.x);
        assert_ne!(same.y, keys_apart.y);
        // Mean over components of |sample mean| / sample sd. With b = 100 against a standard
        // deviation near 1 (Gamma(1, 1) variances) it is about E|Laplace(0, 100)| = 100 over a
        // typical sd; with b = 0.5 about 0.5. The rescaling to a target norm multiplies means
        // and sds alike, so the ratio survives it.
        let mean_to_sd = |data: &Dataset, keys: bool| {
            let m = data.moments();
            let (mean, var) = if keys {
                (&m.mean_y, &m.var_y)
            } else {
                (&m.mean_x, &m.var_x)
            };
            mean.iter()
                .zip(var)
                .map(|(mu, v)| mu.abs() / v.sqrt())
                .sum::<f64>()
                / mean.len() as f64
        };
        assert!(
            mean_to_sd(&keys_apart, true) > 20.0,
            "{}",
            mean_to_sd(&keys_apart, true)
        );
        assert!(mean_to_sd(&same, true) < 3.0, "{}", mean_to_sd(&same, true));
        assert!(
            both.with_mean_scales(0.0, 1.0)
                .unwrap_err()
                .to_string()
                .contains("x_mean_scale")
        );
        assert!(both.with_mean_scales(1.0, f64::INFINITY).is_err());
    }

    #[test]
    fn invalid_parameters_are_rejected_with_their_name() {
        let err = DatasetParams::new(50, 10, f64::NAN, 0.02, 0.01, 5.0, 0.5).unwrap_err();
        assert!(err.to_string().contains("mean_scale"));
        assert!(DatasetParams::new(0, 10, 1.0, 1.0, 1.0, 1.0, 1.0).is_err());
        assert!(DatasetParams::new(5, 1, 1.0, 1.0, 1.0, 1.0, 1.0).is_err());
        assert!(DatasetParams::new(5, 5, 1.0, -1.0, 1.0, 1.0, 1.0).is_err());
    }
}
