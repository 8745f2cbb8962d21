"""NumPy baseline of the page's computation at its default settings, timed.

Mirrors src/math/experiment.rs of this repository (`run_experiment` followed by
`mse_against_m`, which is what the page's worker computes): the seed paper's section 4
experiment with hyperbolic random features (HCEXP; PRF when A = I), all in float64 and in the
log domain.

- Dataset 0 (the scatter dataset, `n` pairs) and datasets 1..datasets (the boxplot datasets,
  `pairs` pairs each). Per side: means ~ Laplace(0, b), variances ~ Gamma(shape, 1),
  x_i = mu + sqrt(v) * N(0, I), then rescaled to a target mean norm.
- Three diagonal A per dataset from its sample moments: identity, mean-only,
  variance-adjusted, clamped to [1e-3, 1e3].
- One Omega (m x d) per dataset, shared by all pairs and estimators. The log estimate of pair i
  is -s_i/2 - ln m + logsumcosh(Omega z_i), z = a*x + y/a, s = |a*x|^2 + |y/a|^2.
- Per dataset and estimator: log MSE, log max relative error, Lemma 3.1's log MSE, the data
  radius, the clamped count and Theorem 3.3's sample quantities; medians over the boxplot
  datasets.
- MSE against m on the first 32 pairs of dataset 0 (m = 16 ... 8192, 4 draws of Omega each):
  mean and standard error of the measured MSE, and Lemma 3.1's mean; as in Rust, each pair is
  projected once on the 8192 rows of a draw and every m sums a prefix of those projections.

The random streams are NumPy's (default_rng), not the Rust xoshiro256++ streams, so the numbers agree
in distribution, not digit for digit. One warm-up run, then `--runs` timed runs; the last
stdout line is one JSON object with the median wall time in milliseconds.
"""

import argparse
import json
import math
import os
import statistics
import time

import numpy as np

# The page's other defaults (src/math/config.rs, ExperimentConfig::default).
MEAN_SCALE = 0.02  # Laplace scale b of the component means
X_SHAPE = 0.02  # Gamma shape of the query variances
Y_SHAPE = 0.01  # Gamma shape of the key variances
X_NORM = 5.0  # target mean norm of the queries
Y_NORM = 0.5  # target mean norm of the keys
A_MIN, A_MAX = 1e-3, 1e3  # src/math/heuristics.rs
ESTIMATORS = ("prf", "hcexp-mean", "hcexp-var")  # identity, mean-only, variance-adjusted A
# src/math/experiment.rs: CURVE_MS, CURVE_PAIRS, CURVE_REPEATS.
CURVE_MS = tuple(2**k for k in range(4, 14))
CURVE_PAIRS = 32
CURVE_REPEATS = 4
# Stream tags for Omega, so no two Omega draws share a generator (datasets use the index).
SHARED_OMEGA, CURVE_OMEGA = 1, 2


# ----------------------------------------------------------------------------- data


def sample_side(rng, d, n, shape, target_norm):
    """n samples of one side (queries or keys), rescaled to the target mean norm."""
    mu = rng.laplace(0.0, MEAN_SCALE, d)
    sd = np.sqrt(rng.gamma(shape, 1.0, d))
    x = rng.standard_normal((n, d))
    x *= sd
    x += mu
    mean_norm = np.sqrt(np.einsum("ij,ij->i", x, x)).mean()
    if not (np.isfinite(mean_norm) and mean_norm > 0.0):
        raise ValueError("every sample is the zero vector: cannot rescale")
    x *= target_norm / mean_norm
    return x


def generate_dataset(index, d, n):
    """Dataset `index`: (queries, keys), each (n, d), from its own generator."""
    rng = np.random.default_rng(index)
    x = sample_side(rng, d, n, X_SHAPE, X_NORM)
    y = sample_side(rng, d, n, Y_SHAPE, Y_NORM)
    return x, y


def moments(x, y):
    """Per-component sample means and unbiased variances of queries and keys."""
    return x.mean(axis=0), x.var(axis=0, ddof=1), y.mean(axis=0), y.var(axis=0, ddof=1)


def clamped_power_ratio(numerator, denominator, exponent):
    """(num/den)^exponent clamped to [A_MIN, A_MAX]; 0/0 and NaN give 1. Also the clamp count."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (numerator / denominator) ** exponent
    bad = np.isnan(value) | ((numerator == 0.0) & (denominator == 0.0))
    clamped = bad | (value < A_MIN) | (value > A_MAX)
    value = np.where(bad, 1.0, np.clip(value, A_MIN, A_MAX))
    return value, int(clamped.sum())


def diagonals(mean_x, var_x, mean_y, var_y):
    """The three diagonals of A, stacked (3, d), and how many entries each had clamped."""
    mean_only, c_mean = clamped_power_ratio(np.abs(mean_y), np.abs(mean_x), 0.5)
    var_adj, c_var = clamped_power_ratio(var_y + mean_y**2, var_x + mean_x**2, 0.25)
    return np.stack([np.ones_like(mean_x), mean_only, var_adj]), [0, c_mean, c_var]


def theorem_3_3_inputs(mean_x, var_x, mean_y, var_y, a):
    """Theorem 3.3's sample quantities per estimator (src/math/theory.rs, Theorem33Inputs)."""
    return {
        "lambda_ax": np.maximum((a * a * var_x).max(axis=1), 0.0),
        "lambda_ay": np.maximum((var_y / (a * a)).max(axis=1), 0.0),
        "norm_mean_ax": np.linalg.norm(a * mean_x, axis=1),
        "norm_mean_ay": np.linalg.norm(mean_y / a, axis=1),
    }


# ------------------------------------------------------------------------ estimator


def transform(x, y, a):
    """z = a*x + y/a for every estimator and pair, (k, n, d); s = |a*x|^2 + |y/a|^2, (k, n);
    and the pair radius max(|a*x|, |y/a|), (k, n)."""
    ax = a[:, None, :] * x[None]
    ay = y[None] / a[:, None, :]
    sq_ax = np.einsum("knd,knd->kn", ax, ax)
    sq_ay = np.einsum("knd,knd->kn", ay, ay)
    ax += ay
    return ax, sq_ax + sq_ay, np.sqrt(np.maximum(sq_ax, sq_ay))


def log_sum_cosh_rows(t):
    """log sum_k cosh(t_k) = M + log sum_k (e^{t_k-M} + e^{-t_k-M})/2 for every row of t,
    with M = max_k |t_k| per row. Overwrites t.

    As src/math/estimators.rs::log_sum_cosh, one exp per term: e^{-t-M} = e^{-2M} / e^{t-M}.
    That needs sum_k 1/e^{t_k-M} <= m e^{2M} to stay finite; rows with a larger M (only at
    very large norms) take two exps per term."""
    m = t.shape[1]
    big = np.maximum(t.max(axis=1), -t.min(axis=1))
    safe = big < 0.5 * (700.0 - math.log(m))
    if safe.all():
        return big + np.log(0.5 * _shifted_sum_cosh(t, big))
    total = np.empty_like(big)
    total[safe] = _shifted_sum_cosh(t[safe], big[safe])
    t_big, m_big = t[~safe], big[~safe, None]
    total[~safe] = np.exp(t_big - m_big).sum(axis=1) + np.exp(-t_big - m_big).sum(axis=1)
    return big + np.log(0.5 * total)


def _shifted_sum_cosh(t, big):
    """sum_k e^{t_k-M} + e^{-2M} sum_k 1/e^{t_k-M} per row, in place in t."""
    t -= big[:, None]
    np.exp(t, out=t)
    up = t.sum(axis=1)
    np.reciprocal(t, out=t)
    return up + np.exp(-2.0 * big) * t.sum(axis=1)


def log_estimates(z, s, omega):
    """log of the hyperbolic estimate for every (estimator, pair): z is (k, n, d)."""
    k, n, d = z.shape
    m = omega.shape[0]
    t = z.reshape(k * n, d) @ omega.T  # (k n, m), one BLAS call
    return -0.5 * s - math.log(m) + log_sum_cosh_rows(t).reshape(k, n)


def log_theoretical_mse(z, log_true, m):
    """Lemma 3.1, hyperbolic form, per pair: (1/2m) e^S SM^2 (1 - e^{-S})^2, S = |z|^2."""
    big_s = np.einsum("knd,knd->kn", z, z)
    with np.errstate(divide="ignore"):
        return -math.log(2 * m) + big_s + 2.0 * log_true + 2.0 * np.log(-np.expm1(-big_s))


# ------------------------------------------------------------------------- statistics


def log_relative_error(delta):
    """ln |e^delta - 1| without overflow: max(delta, 0) + ln(1 - e^{-|delta|})."""
    with np.errstate(divide="ignore"):
        return np.maximum(delta, 0.0) + np.log(-np.expm1(-np.abs(delta)))


def log_mean_exp(logs, axis=-1):
    """log mean exp along `axis`, shifted by the maximum (-inf stays -inf)."""
    top = logs.max(axis=axis, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = shift + np.log(np.exp(logs - shift).mean(axis=axis, keepdims=True))
    out = np.where(np.isfinite(top), out, top)
    return np.squeeze(out, axis=axis)


def dataset_metrics(log_true, log_est, log_theory):
    """Per estimator: log MSE, log max relative error, log of Lemma 3.1's mean MSE."""
    log_rel = log_relative_error(log_est - log_true)
    log_squared = 2.0 * log_true + 2.0 * log_rel
    return {
        "log_mse": log_mean_exp(log_squared),
        "log_max_rel_err": log_rel.max(axis=-1),
        "log_theoretical_mse": log_mean_exp(log_theory),
    }


# ------------------------------------------------------------------------- experiment


def estimate_dataset(index, d, n, m):
    """Every estimator on dataset `index`, with one shared Omega (estimate_dataset in Rust)."""
    x, y = generate_dataset(index, d, n)
    mom = moments(x, y)
    a, clamped = diagonals(*mom)
    theorem = theorem_3_3_inputs(*mom, a)
    omega = np.random.default_rng((SHARED_OMEGA, index)).standard_normal((m, d))
    log_true = np.einsum("nd,nd->n", x, y)
    z, s, radius = transform(x, y, a)
    log_est = log_estimates(z, s, omega)
    log_theory = log_theoretical_mse(z, log_true, m)
    return {
        "log_true": log_true,
        "log_estimates": log_est,
        "log_theoretical_mse": log_theory,
        "data_radius": radius.max(axis=1),
        "clamped": clamped,
        "x": x,
        "y": y,
        "a": a,
        "theorem_3_3": theorem,
        "metrics": dataset_metrics(log_true, log_est, log_theory),
    }


def run_experiment(d, m, n, datasets, pairs):
    """The scatter dataset and the boxplot datasets, with medians (run_experiment in Rust)."""
    scatter = estimate_dataset(0, d, n, m)
    per_dataset = [estimate_dataset(i, d, pairs, m)["metrics"] for i in range(1, datasets + 1)]
    medians = {
        key: np.median(np.stack([p[key] for p in per_dataset]), axis=0)
        for key in ("log_mse", "log_max_rel_err", "log_theoretical_mse")
    }
    return scatter, per_dataset, medians


def mse_against_m(x, y, a, ms=CURVE_MS, pairs=CURVE_PAIRS, repeats=CURVE_REPEATS):
    """MSE against m on the first `pairs` pairs of dataset 0 (x, y), with the A of all of
    dataset 0 (mse_against_m in Rust)."""
    n, d = x.shape
    pairs = min(max(pairs, 1), n)
    repeats = max(repeats, 2)
    x, y = x[:pairs], y[:pairs]
    log_true = np.einsum("nd,nd->n", x, y)
    z, s, _ = transform(x, y, a)
    # As in Rust: each repeat draws the largest m once; every m takes its leading rows, and
    # each pair is projected once on the largest m (every m sums a prefix of the projections).
    largest = max(ms)
    k = len(a)
    projected = []
    for r in range(repeats):
        omega = np.random.default_rng((CURVE_OMEGA, r)).standard_normal((largest, d))
        projected.append(z.reshape(k * pairs, d) @ omega.T)  # (k pairs, largest), one BLAS call
    curves = []
    for m in ms:
        log_mses = np.empty((k, repeats))
        for r in range(repeats):
            t = projected[r][:, :m].copy()  # log_sum_cosh_rows overwrites its argument
            log_est = -0.5 * s - math.log(m) + log_sum_cosh_rows(t).reshape(k, pairs)
            log_squared = 2.0 * log_true + 2.0 * log_relative_error(log_est - log_true)
            log_mses[:, r] = log_mean_exp(log_squared)
        scale = log_mses.max(axis=1, keepdims=True)
        scaled = np.exp(log_mses - scale)
        mean = scaled.mean(axis=1)
        standard_error = scaled.std(axis=1, ddof=1) / math.sqrt(repeats)
        with np.errstate(divide="ignore"):
            curves.append({
                "m": m,
                "log_measured_mse": scale[:, 0] + np.log(mean),
                "log_standard_error": scale[:, 0] + np.log(standard_error),
                "log_theoretical_mse": log_mean_exp(log_theoretical_mse(z, log_true, m)),
            })
    return curves


def compute_all(d, m, n, datasets, pairs):
    """Everything the page's worker computes for one configuration."""
    scatter, per_dataset, medians = run_experiment(d, m, n, datasets, pairs)
    curves = mse_against_m(scatter["x"], scatter["y"], scatter["a"])
    return (scatter, per_dataset, medians), curves


# ------------------------------------------------------------------------------- main


def blas_name():
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas['version']}"
    except Exception:  # the config layout is not a stable API
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up")
    parser.add_argument("--d", type=int, default=50, help="dimension")
    parser.add_argument("--m", type=int, default=1024, help="random projections per dataset")
    parser.add_argument("--n", type=int, default=1000, help="pairs in the scatter dataset")
    parser.add_argument("--datasets", type=int, default=20, help="boxplot datasets")
    parser.add_argument("--pairs", type=int, default=250, help="pairs per boxplot dataset")
    args = parser.parse_args()
    if min(args.runs, args.d, args.m, args.datasets) < 1 or min(args.n, args.pairs) < 2:
        parser.error("need runs, d, m, datasets >= 1 and n, pairs >= 2")
    config = (args.d, args.m, args.n, args.datasets, args.pairs)

    compute_all(*config)  # warm-up
    samples = []
    for _ in range(args.runs):
        start = time.perf_counter()
        (scatter, _, medians), curves = compute_all(*config)
        samples.append((time.perf_counter() - start) * 1e3)

    check = {
        name: {
            "median_mse": math.exp(medians["log_mse"][k]),
            "median_max_rel_err": math.exp(medians["log_max_rel_err"][k]),
            "median_theoretical_mse": math.exp(medians["log_theoretical_mse"][k]),
            "scatter_mse": math.exp(scatter["metrics"]["log_mse"][k]),
            "curve_mse_m8192": math.exp(curves[-1]["log_measured_mse"][k]),
            "curve_theory_m8192": math.exp(curves[-1]["log_theoretical_mse"][k]),
        }
        for k, name in enumerate(ESTIMATORS)
    }
    report = {
        "numpy_ms": round(statistics.median(samples), 2),
        "samples_ms": [round(v, 2) for v in samples],
        "numpy_version": np.__version__,
    }
    blas = blas_name()
    if blas:
        report["blas"] = blas
    report["threads"] = os.cpu_count()
    report["check"] = {
        name: {key: float(f"{v:.4g}") for key, v in values.items()}
        for name, values in check.items()
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
