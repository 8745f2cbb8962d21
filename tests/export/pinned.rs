// The links whose export is pinned (included by tests/export.rs and tests/browser_worker.rs).

/// (query, CSV, JSON): the default estimators on a small page (the simd128 cosh kernel), and
/// the twelve estimators before the DERF members with orthogonal, fresh ω (the exp kernel and the f64 sums, GERF, the
/// optimised A, Gaussian tails of ω and the Gamma variances through libm).
const PINNED: [(&str, &str, &str); 2] = [
    (
        "m=64&n=120&datasets=6&pairs=60",
        include_str!("small.csv"),
        include_str!("small.json"),
    ),
    (
        "d=8&m=32&n=40&datasets=3&pairs=20&seed=5&est=prf-pos,prf-hyp,cexp-mean,cexp-var,hcexp-mean,hcexp-var,hcexp-opt,rff,cplx,hcplx,oprf,oprf-var&orf=1&omega=fresh",
        include_str!("every-estimator.csv"),
        include_str!("every-estimator.json"),
    ),
];
