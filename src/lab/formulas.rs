//! Every formula the page shows beside a chart, by name, in one place (the estimators' own
//! formulas live in their files, the attention methods' in theirs): each is rendered to MathML
//! by [`crate::lab::mathml`], and a test renders every one.

pub const ATTENTION_LINEAR_RATIO: &str = "ô_i = φ(q_i)·Σ_j ψ(k_j) v_jᵀ / φ(q_i)·Σ_l ψ(k_l), in O(L·D·dv); error |o_i − ô_i| with o_i = Σ_j softmax_j(q_i·k_j) v_j.";
pub const ATTENTION_MATRICES: &str =
    "P_ij = exp(q_i·k_j) / Σ_l exp(q_i·k_l);  P̂_ij = φ(q_i)·ψ(k_j) / Σ_l φ(q_i)·ψ(k_l)";
pub const ATTENTION_ROW_ERRORS: &str = "TV_i = ½ Σ_j |P̂_ij − P_ij| (on up to 64 rows spread over the sequence);  e_i = |o_i − ô_i| (every row)";
pub const ATTENTION_BIAS_VARIANCE: &str =
    "bias²_i = |mean_r ô_i^r − o_i|² − var_i / R,  var_i = Σ_r |ô_i^r − mean|² / (R − 1)";
pub const ATTENTION_TEMPERATURE: &str = "P_τ = softmax(q·k / τ); H = −(1/n) Σ_i Σ_j P_ij ln P_ij; γ = 1 − |λ₂(P)|, on the first tokens as their own sequence; each method refitted at each τ";
pub const ATTENTION_RANK: &str =
    "P̂ = D⁻¹ Φ Ψᵀ has rank ≤ D (the feature size); softmax's P is full rank";
pub const ATTENTION_BUDGET: &str = "random maps: D = m (positive), 2m (hyperbolic, trigonometric), 4m (complex A); Taylor: Σ_{j≤n} d^j; (1 + x/n)^n: (d + 1)^n; LLN, elu + 1: d; randomized attention: S samples";
pub const MODEL_SCALING: &str = "32^{−1/4}";
pub const SOFTMAX_ATTENTION: &str =
    "P_{ij} = exp(q_i·k_j) / Σ_l exp(q_i·k_l),  o_i = Σ_j P_{ij} v_j";
pub const MODEL_SCALING_D: &str = "d^{−1/4}";
pub const DATA_MOMENTS: &str = "|μ_x,i|, σ_x,i, |μ_y,i|, σ_y,i;  a_i = 1, √(|μ_y,i| / |μ_x,i|), ((σ²_y,i + μ²_y,i) / (σ²_x,i + μ²_x,i))^¼";
pub const DATA_NORMS: &str = "|x| = √(Σ_i x_i²),  |y| = √(Σ_i y_i²)";
pub const DATA_DOT: &str = "x·y = ln SM(x, y)";
pub const DATA_AX_NORM: &str = "|Ax| = √(Σ_i a_i² x_i²)";
pub const DATA_AINV_Y_NORM: &str = "|A⁻¹y| = √(Σ_i y_i² / a_i²)";
pub const DATA_Z: &str =
    "z = Ax + A⁻ᵀy;  MSE ∝ e^{|z|²} SM²  (a complex A or GERF: with the magnitudes a of its fit)";
pub const LEMMA_3_1_HCEXP_MSE: &str =
    "MSE(x, y) = (1/2m) · e^{|z|²} · SM(x, y)² · (1 − e^{−|z|²})²,  z = Ax + A⁻ᵀy";
pub const COMPLEX_A_MSE: &str =
    "A = e^{iθ}·diag(a),  m·MSE = (E|f|² + Re E f²)/2 − SM²,  f = exp(ω·z − s/2)";
pub const LEMMA_3_2_BOUND: &str = "√MSE / SM ≤ W(r) / √(2m),  W(r) = e^{2r²} (1 − e^{−4r²})";
pub const THEOREM_3_3_RADIUS: &str =
    "r = max(√(λ_Ax χ²_d(q)) + |Aμ_x|, √(λ_A⁻ᵀy χ²_d(q)) + |A⁻ᵀμ_y|),  q = p^{1/(2s)}";
pub const SOFTMAX_KERNEL: &str = "SM(x, y) = exp(x·y),  x, y ∈ ℝ^d,  ωₖ ~ N(0, I_d)";
pub const CEXP_HCEXP_MSE: &str = "CEXP: (1/m) e^{|z|²} SM² (1 − e^{−|z|²});  HCEXP: (1/2m) e^{|z|²} SM² (1 − e^{−|z|²})²,  z = Ax + A⁻ᵀy";

/// Every formula above, with its name (for the test that renders each one).
pub const ALL: [(&str, &str); 22] = [
    ("ATTENTION_LINEAR_RATIO", ATTENTION_LINEAR_RATIO),
    ("ATTENTION_MATRICES", ATTENTION_MATRICES),
    ("ATTENTION_ROW_ERRORS", ATTENTION_ROW_ERRORS),
    ("ATTENTION_BIAS_VARIANCE", ATTENTION_BIAS_VARIANCE),
    ("ATTENTION_TEMPERATURE", ATTENTION_TEMPERATURE),
    ("ATTENTION_RANK", ATTENTION_RANK),
    ("ATTENTION_BUDGET", ATTENTION_BUDGET),
    ("MODEL_SCALING", MODEL_SCALING),
    ("SOFTMAX_ATTENTION", SOFTMAX_ATTENTION),
    ("MODEL_SCALING_D", MODEL_SCALING_D),
    ("DATA_MOMENTS", DATA_MOMENTS),
    ("DATA_NORMS", DATA_NORMS),
    ("DATA_DOT", DATA_DOT),
    ("DATA_AX_NORM", DATA_AX_NORM),
    ("DATA_AINV_Y_NORM", DATA_AINV_Y_NORM),
    ("DATA_Z", DATA_Z),
    ("LEMMA_3_1_HCEXP_MSE", LEMMA_3_1_HCEXP_MSE),
    ("COMPLEX_A_MSE", COMPLEX_A_MSE),
    ("LEMMA_3_2_BOUND", LEMMA_3_2_BOUND),
    ("THEOREM_3_3_RADIUS", THEOREM_3_3_RADIUS),
    ("SOFTMAX_KERNEL", SOFTMAX_KERNEL),
    ("CEXP_HCEXP_MSE", CEXP_HCEXP_MSE),
];
