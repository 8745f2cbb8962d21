//! Every formula the page shows beside a chart, by name, in one place (the estimators' own
//! formulas live in their files, the attention methods' in theirs), in LaTeX: each is a raw
//! string, which `build.rs` finds and renders to MathML ([`crate::lab::page::mathml`]), and a test
//! checks that every one rendered. A `;` outside any bracket is where a long formula may wrap.
//!
//! This file holds the formulas the first view shows (the kernel view's theory charts). Those
//! only later parts show (the attention and language model views, the kernel view's panels
//! below its first screen, the guided tour) are in [`super::view_formulas`] (re-exported here):
//! the page's split build fetches their MathML with those parts instead of carrying it on the
//! first view.

pub use super::view_formulas::*;

pub const LEMMA_3_1_HCEXP_MSE: &str = r"\mathrm{MSE}(x, y) = \frac{1}{2m} \cdot e^{|z|^2} \cdot \mathrm{SM}{(x, y)}^2 \cdot \left(1 - e^{-|z|^2}\right)^2,\quad z = Ax + A^{-\top} y";
pub const COMPLEX_A_MSE: &str = r"A = e^{i\theta} \operatorname{diag}(a),\quad m \cdot \mathrm{MSE} = \frac{\operatorname{E}|f|^2 + \operatorname{Re} \operatorname{E} f^2}{2} - \mathrm{SM}^2,\quad f = \exp(\omega \cdot z - s/2)";
pub const LEMMA_3_2_BOUND: &str = r"\frac{\sqrt{\mathrm{MSE}}}{\mathrm{SM}} \le \frac{W(r)}{\sqrt{2m}},\quad W(r) = e^{2r^2} \left(1 - e^{-4r^2}\right)";
pub const THEOREM_3_3_RADIUS: &str = r"r = \max\left(\sqrt{\lambda_{Ax}\, \chi^2_d(q)} + |A\mu_x|,\ \sqrt{\lambda_{A^{-\top}y}\, \chi^2_d(q)} + |A^{-\top}\mu_y|\right),\quad q = p^{1/(2s)}";

/// Every formula above, with its name (for the test that renders each one).
pub const ALL: [(&str, &str); 34] = [
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
    ("LM_RECURRENT", LM_RECURRENT),
    ("LM_TRANSFER", LM_TRANSFER),
];
