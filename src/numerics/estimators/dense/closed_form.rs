//! The closed-form dense P of `derf-dense` and `hderf-dense`, from the data's second moments.
//!
//! **Derivation.** PRF's second moment of a pair is `exp(|x'|² + |y'|² + 4x·y)`; the part a
//! transform `(Px, P^{−T}y)` controls is `S = |Px|² + |P^{−T}y|² = xᵀGx + yᵀG⁻¹y` with
//! `G = PᵀP`. Its mean over the dataset is `J(G) = tr(G Mx) + tr(G⁻¹ My)`, with
//! `Mx = mean_i x_i x_iᵀ` (queries) and `My = mean_i y_i y_iᵀ` (keys): Lemma 3.4's objective,
//! minimised over all symmetric positive definite G instead of diagonal ones. J is convex
//! (`tr(G Mx)` is linear, `G ↦ tr(G⁻¹ My)` convex), and `dJ = tr((Mx − G⁻¹ My G⁻¹) dG)`
//! vanishes where `G Mx G = My`. With `Mx` positive definite its one solution is the matrix
//! geometric mean `G = Mx⁻¹ # My = Mx^{−1/2} (Mx^{1/2} My Mx^{1/2})^{1/2} Mx^{−1/2}`:
//! `G Mx G = Mx^{−1/2} R Mx^{−1/2} Mx Mx^{−1/2} R Mx^{−1/2} = Mx^{−1/2} R² Mx^{−1/2} = My` with
//! `R = (Mx^{1/2} My Mx^{1/2})^{1/2}`. For diagonal `Mx`, `My` it is
//! `G = diag(√(my_i/mx_i))`, `P = G^{1/2} = diag((my_i/mx_i)^{1/4})`: Lemma 3.4's
//! variance-adjusted `a_i` (with `mx_i = σ²_{x,i} + μ²_{x,i}`; the lab's σ² has divisor
//! n − 1, `mean_i x_i x_iᵀ` has n, so on a dataset the two differ by that factor). Checked by
//! tests: J at G is below J at random SPD perturbations of G, and the diagonal case equals
//! `heuristics::diagonal_a` to 1e-12.
//!
//! **Regularisation.** `Mx` or `My` is singular when n < d, a column is constant 0, or a side
//! is all zeros. Each matrix whose smallest eigenvalue is below [`RIDGE`]·τ, with τ the mean
//! eigenvalue of both (`(tr Mx + tr My)/2d`), gets RIDGE·τ added to its diagonal; the amounts
//! are in the fit ([`DenseTransform::ridge_queries`], [`DenseTransform::ridge_keys`]). Data
//! that are all zeros (τ = 0) give P = I (every estimate is then exact). P's eigenvalues are
//! clamped into `[A_MIN, A_MAX]` like a diagonal A's entries (counted in `Fit::clamped`).

use nalgebra::{DMatrix, SymmetricEigen};

use super::{MAX_DENSE_D, alpha_for};
use crate::numerics::dataset::Dataset;
use crate::numerics::estimators::{DenseTransform, EstimatorError, FeatureForm, Fit, dot};
use crate::numerics::heuristics::{A_MAX, A_MIN};

/// The ridge, relative to the mean eigenvalue τ of the two second-moment matrices.
pub const RIDGE: f64 = 1e-8;

/// Checks the dataset: pairs, dimensions, shapes, finite components, d ≤ [`MAX_DENSE_D`].
pub fn validate(data: &Dataset) -> Result<(), EstimatorError> {
    let (n, d) = (data.n, data.d);
    let fail = |message: String| Err(EstimatorError::Fit(message));
    if n == 0 || d == 0 {
        return fail("the dataset has no pairs or no dimensions".into());
    }
    if d > MAX_DENSE_D {
        return fail(format!(
            "a dense P is fitted for d ≤ {MAX_DENSE_D} only (d = {d})"
        ));
    }
    for (side, values) in [("query", &data.x), ("key", &data.y)] {
        if values.len() != n * d {
            return fail(format!(
                "the {side} matrix holds {} numbers, expected n·d = {}",
                values.len(),
                n * d
            ));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return fail(format!("a {side} component is not a finite number"));
        }
    }
    Ok(())
}

/// `mean_i u_i u_iᵀ` of the rows of a row-major `n × d` matrix.
pub fn second_moment(rows: &[f64], n: usize, d: usize) -> DMatrix<f64> {
    let mut m = DMatrix::<f64>::zeros(d, d);
    for row in rows.chunks_exact(d) {
        for i in 0..d {
            for j in 0..=i {
                m[(i, j)] += row[i] * row[j];
            }
        }
    }
    for i in 0..d {
        for j in 0..i {
            m[(j, i)] = m[(i, j)];
        }
    }
    m / n.max(1) as f64
}

/// `f(M) = V f(Λ) Vᵀ` for a symmetric M (symmetrised first).
pub fn spectral_function(m: &DMatrix<f64>, f: impl Fn(f64) -> f64) -> DMatrix<f64> {
    let symmetric = (m + m.transpose()) * 0.5;
    let eigen = SymmetricEigen::new(symmetric);
    let values = eigen.eigenvalues.map(f);
    &eigen.eigenvectors * DMatrix::from_diagonal(&values) * eigen.eigenvectors.transpose()
}

/// The matrix geometric mean `Mx⁻¹ # My = Mx^{−1/2} (Mx^{1/2} My Mx^{1/2})^{1/2} Mx^{−1/2}`,
/// the minimiser of `tr(G Mx) + tr(G⁻¹ My)`, for a positive definite `Mx` and a positive
/// semi-definite `My` (negative rounding of eigenvalues is taken as 0).
pub fn geometric_mean(mx: &DMatrix<f64>, my: &DMatrix<f64>) -> DMatrix<f64> {
    let root = spectral_function(mx, |v| v.max(0.0).sqrt());
    let inverse_root = spectral_function(mx, |v| 1.0 / v.sqrt());
    let middle = spectral_function(&(&root * my * &root), |v| v.max(0.0).sqrt());
    let g = &inverse_root * middle * &inverse_root;
    (&g + g.transpose()) * 0.5
}

/// `tr(G Mx) + tr(G⁻¹ My)`: the dataset's mean of `|Px|² + |P^{−T}y|²` for `G = PᵀP`
/// (`inf` if G is not invertible).
pub fn mean_squared_norms(g: &DMatrix<f64>, mx: &DMatrix<f64>, my: &DMatrix<f64>) -> f64 {
    match g.clone().try_inverse() {
        Some(inverse) => (g * mx).trace() + (inverse * my).trace(),
        None => f64::INFINITY,
    }
}

/// The symmetric `P = G^{1/2}` and `P^{−T} = P⁻¹`, P's eigenvalues clamped into
/// `[A_MIN, A_MAX]`, as a [`DenseTransform`], with the number of clamped eigenvalues.
pub fn symmetric_root(g: &DMatrix<f64>, ridges: (f64, f64)) -> (DenseTransform, usize) {
    let d = g.nrows();
    let symmetric = (g + g.transpose()) * 0.5;
    let eigen = SymmetricEigen::new(symmetric);
    let mut clamped = 0;
    let roots = eigen.eigenvalues.map(|v| {
        let root = v.max(0.0).sqrt();
        let bounded = if root.is_nan() {
            1.0
        } else {
            root.clamp(A_MIN, A_MAX)
        };
        if bounded != root {
            clamped += 1;
        }
        bounded
    });
    let v = &eigen.eigenvectors;
    let p = v * DMatrix::from_diagonal(&roots) * v.transpose();
    let p_inv = v * DMatrix::from_diagonal(&roots.map(|r| 1.0 / r)) * v.transpose();
    let row_major = |m: &DMatrix<f64>| -> Vec<f64> {
        (0..d)
            .flat_map(|i| (0..d).map(move |j| (i, j)))
            .map(|(i, j)| m[(i, j)])
            .collect()
    };
    (
        DenseTransform {
            d,
            p: row_major(&p),
            // P is symmetric, so P^{−T} = P⁻¹.
            p_inv_t: row_major(&p_inv),
            ridge_queries: ridges.0,
            ridge_keys: ridges.1,
        },
        clamped,
    )
}

/// `ρ = mean_i |z_i|²/d` with `z_i = Px_i + P^{−T}y_i`, or an error if it is not finite.
pub fn mean_rho(data: &Dataset, transform: &DenseTransform) -> Result<f64, EstimatorError> {
    let mut z = vec![0.0; data.d];
    let mut total = 0.0;
    for i in 0..data.n {
        transform.transform(data.query(i), data.key(i), &mut z);
        total += dot(&z, &z);
    }
    let rho = total / (data.n.max(1) * data.d.max(1)) as f64;
    if rho.is_finite() {
        Ok(rho)
    } else {
        Err(EstimatorError::Fit(format!("ρ = {rho} is not finite")))
    }
}

/// The closed-form member's fit: P = `(Mx⁻¹ # My)^{1/2}` (regularised as the module says) and
/// the α of `form` at the transformed pairs' ρ.
pub fn closed_form(data: &Dataset, form: FeatureForm) -> Result<Fit, EstimatorError> {
    validate(data)?;
    let (n, d) = (data.n, data.d);
    let mut mx = second_moment(&data.x, n, d);
    let mut my = second_moment(&data.y, n, d);
    let tau = (mx.trace() + my.trace()) / (2 * d) as f64;
    if !tau.is_finite() {
        return Err(EstimatorError::Fit(
            "the data's second moments overflow".into(),
        ));
    }
    let (g, ridges) = if tau == 0.0 {
        (DMatrix::identity(d, d), (0.0, 0.0))
    } else {
        let ridge = RIDGE * tau;
        let regularise = |m: &mut DMatrix<f64>| {
            let smallest = m.symmetric_eigenvalues().min();
            if smallest < ridge {
                for i in 0..d {
                    m[(i, i)] += ridge;
                }
                ridge
            } else {
                0.0
            }
        };
        let ridges = (regularise(&mut mx), regularise(&mut my));
        (geometric_mean(&mx, &my), ridges)
    };
    if g.iter().any(|v| !v.is_finite()) {
        return Err(EstimatorError::Fit(
            "the geometric mean of the second moments is not finite".into(),
        ));
    }
    let (transform, clamped) = symmetric_root(&g, ridges);
    let rho = mean_rho(data, &transform)?;
    Ok(Fit {
        alpha: alpha_for(form, rho, d),
        clamped,
        dense: Some(Box::new(transform)),
        ..Fit::identity(d)
    })
}
