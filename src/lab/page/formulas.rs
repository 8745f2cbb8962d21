//! Every formula the page shows beside a chart, by name, in one place (the estimators' own
//! formulas live in their files, the attention methods' in theirs), in LaTeX: each is a raw
//! string, which `build.rs` finds and renders to MathML ([`crate::lab::page::mathml`]), and a test
//! checks that every one rendered. A `;` outside any bracket is where a long formula may wrap.
//!
//! The attention and language model views' own formulas are in [`super::view_formulas`] (re-exported
//! here): the page's split build fetches their MathML with those views instead of carrying it on
//! the first view.

pub use super::view_formulas::*;

pub const DATA_MOMENTS: &str = r"|\mu_{x,i}|,\ \sigma_{x,i},\ |\mu_{y,i}|,\ \sigma_{y,i};\quad a_i = 1,\ \sqrt{|\mu_{y,i}| / |\mu_{x,i}|},\ \left(\frac{\sigma_{y,i}^2 + \mu_{y,i}^2}{\sigma_{x,i}^2 + \mu_{x,i}^2}\right)^{1/4}";
pub const DATA_NORMS: &str = r"|x| = \sqrt{\sum_i x_i^2},\quad |y| = \sqrt{\sum_i y_i^2}";
pub const DATA_DENSE_P: &str = r"z = Px + P^{-\top} y,\quad P = {\left(M_x^{-1} \# M_y\right)}^{1/2} \text{ (closed form) or fitted};\quad A = P \text{ diagonal is the seed paper's}";
pub const DATA_DOT: &str = r"x \cdot y = \ln \mathrm{SM}(x, y)";
pub const DATA_AX_NORM: &str = r"|Ax| = \sqrt{\sum_i a_i^2 x_i^2}";
pub const DATA_AINV_Y_NORM: &str = r"|A^{-1} y| = \sqrt{\sum_i y_i^2 / a_i^2}";
pub const DATA_Z: &str = r"z = Ax + A^{-\top} y;\quad \mathrm{MSE} \propto e^{|z|^2}\, \mathrm{SM}^2 \quad \text{(a complex } A \text{ or GERF: with the magnitudes } a \text{ of its fit)}";
pub const LEMMA_3_1_HCEXP_MSE: &str = r"\mathrm{MSE}(x, y) = \frac{1}{2m} \cdot e^{|z|^2} \cdot \mathrm{SM}{(x, y)}^2 \cdot \left(1 - e^{-|z|^2}\right)^2,\quad z = Ax + A^{-\top} y";
pub const COMPLEX_A_MSE: &str = r"A = e^{i\theta} \operatorname{diag}(a),\quad m \cdot \mathrm{MSE} = \frac{\operatorname{E}|f|^2 + \operatorname{Re} \operatorname{E} f^2}{2} - \mathrm{SM}^2,\quad f = \exp(\omega \cdot z - s/2)";
pub const LEMMA_3_2_BOUND: &str = r"\frac{\sqrt{\mathrm{MSE}}}{\mathrm{SM}} \le \frac{W(r)}{\sqrt{2m}},\quad W(r) = e^{2r^2} \left(1 - e^{-4r^2}\right)";
pub const THEOREM_3_3_RADIUS: &str = r"r = \max\left(\sqrt{\lambda_{Ax}\, \chi^2_d(q)} + |A\mu_x|,\ \sqrt{\lambda_{A^{-\top}y}\, \chi^2_d(q)} + |A^{-\top}\mu_y|\right),\quad q = p^{1/(2s)}";
pub const SOFTMAX_KERNEL: &str = r"\mathrm{SM}(x, y) = \exp(x \cdot y),\quad x, y \in \mathbb{R}^d,\quad \omega_k \sim \mathcal{N}(0, I_d)";
pub const CEXP_HCEXP_MSE: &str = r"\text{CEXP: } \frac{1}{m}\, e^{|z|^2}\, \mathrm{SM}^2 \left(1 - e^{-|z|^2}\right);\quad \text{HCEXP: } \frac{1}{2m}\, e^{|z|^2}\, \mathrm{SM}^2 \left(1 - e^{-|z|^2}\right)^2,\quad z = Ax + A^{-\top} y";

pub const PRF_ESTIMATOR: &str = r"\widehat{\mathrm{SM}}(x, y) = \frac{1}{m} \sum_{k=1}^{m} e^{\omega_k \cdot x - |x|^2/2}\, e^{\omega_k \cdot y - |y|^2/2},\quad \omega_k \sim \mathcal{N}(0, I_d);\quad \operatorname{E} \widehat{\mathrm{SM}} = e^{x \cdot y}";
pub const PRF_RELATIVE_MSE: &str =
    r"\frac{\mathrm{MSE}(x, y)}{\mathrm{SM}{(x, y)}^2} = \frac{e^{|x + y|^2} - 1}{m}";
/// Every formula above, with its name (for the test that renders each one).
pub const ALL: [(&str, &str); 32] = [
    ("ATTENTION_LINEAR_RATIO", ATTENTION_LINEAR_RATIO),
    ("ATTENTION_MATRICES", ATTENTION_MATRICES),
    ("ATTENTION_ROW_ERRORS", ATTENTION_ROW_ERRORS),
    ("ATTENTION_BIAS_VARIANCE", ATTENTION_BIAS_VARIANCE),
    ("ATTENTION_TEMPERATURE", ATTENTION_TEMPERATURE),
    ("ATTENTION_RANK", ATTENTION_RANK),
    ("ATTENTION_BUDGET", ATTENTION_BUDGET),
    ("KERNEL_VS_ATTENTION", KERNEL_VS_ATTENTION),
    ("MODEL_SCALING", MODEL_SCALING),
    ("SOFTMAX_ATTENTION", SOFTMAX_ATTENTION),
    ("MODEL_SCALING_D", MODEL_SCALING_D),
    ("DATA_MOMENTS", DATA_MOMENTS),
    ("DATA_NORMS", DATA_NORMS),
    ("DATA_DENSE_P", DATA_DENSE_P),
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
    ("MODEL_SWAP", MODEL_SWAP),
    ("MODEL_SWAP_COST", MODEL_SWAP_COST),
    ("RETRIEVAL_AGREEMENT", RETRIEVAL_AGREEMENT),
    ("HEDGEHOG_MAP", HEDGEHOG_MAP),
    ("LENGTH_STUDY", LENGTH_STUDY),
    ("PRF_ESTIMATOR", PRF_ESTIMATOR),
    ("PRF_RELATIVE_MSE", PRF_RELATIVE_MSE),
    ("LM_PER_LAYER", LM_PER_LAYER),
];
