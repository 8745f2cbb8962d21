//! The formulas the first view does not show, in LaTeX (raw strings, found by `build.rs` like
//! those of [`super::formulas`], which re-exports these): the attention and language model
//! views', then those of the kernel view's panels below its first screen (the data panel,
//! "What is computed") and the guided tour's. In the page's split build (feature
//! `formulas-on-demand`) their MathML is not in the page's module: build.rs writes it to
//! `view-formulas.txt` (with the estimators' and the heuristics' formulas, which only "What is
//! computed" shows), fetched with those parts' code ([`super::mathml::add_formulas`]).

// The attention and language model views.
pub const ATTENTION_LINEAR_RATIO: &str = r"\hat{o}_i = \frac{\phi(q_i) \cdot \sum_j \psi(k_j)\, v_j^\top}{\phi(q_i) \cdot \sum_l \psi(k_l)} \text{ in } O(L \cdot D \cdot d_v);\quad \text{error } |o_i - \hat{o}_i| \text{ with } o_i = \sum_j \operatorname{softmax}_j(q_i \cdot k_j)\, v_j";
pub const ATTENTION_MATRICES: &str = r"P_{ij} = \frac{\exp(q_i \cdot k_j)}{\sum_l \exp(q_i \cdot k_l)};\quad \hat{P}_{ij} = \frac{\phi(q_i) \cdot \psi(k_j)}{\sum_l \phi(q_i) \cdot \psi(k_l)}";
pub const ATTENTION_ROW_ERRORS: &str = r"\mathrm{TV}_i = \frac{1}{2} \sum_j |\hat{P}_{ij} - P_{ij}| \text{ (on up to 64 rows spread over the sequence)};\quad e_i = |o_i - \hat{o}_i| \text{ (every row)}";
pub const ATTENTION_BIAS_VARIANCE: &str = r"\mathrm{bias}_i^2 = |\mathrm{mean}_r \hat{o}_i^r - o_i|^2 - \mathrm{var}_i / R,\quad \mathrm{var}_i = \sum_r |\hat{o}_i^r - \operatorname{mean}|^2 / (R - 1)";
pub const ATTENTION_TEMPERATURE: &str = r"P_\tau = \operatorname{softmax}(q \cdot k / \tau);\quad H = -\frac{1}{n} \sum_i \sum_j P_{ij} \ln P_{ij};\quad \gamma = 1 - |\lambda_2(P)|, \text{ on the first tokens as their own sequence};\quad \text{each method refitted at each } \tau";
pub const ATTENTION_RANK: &str = r"\hat{P} = D^{-1} \Phi \Psi^\top \text{ has rank} \le D \text{ (the feature size)};\quad \text{softmax's } P \text{ is full rank}";
pub const ATTENTION_BUDGET: &str = r"\text{random maps: } D = m \text{ (positive)},\ 2m \text{ (hyperbolic, trigonometric)},\ 4m \text{ (complex } A\text{)};\quad \text{Taylor: } \sum_{j \le n} d^j;\quad {(1 + x/n)}^n\text{: } {(d + 1)}^n;\quad \text{LLN, elu + 1: } d;\quad \text{randomized attention: } S \text{ samples}";
pub const KERNEL_VS_ATTENTION: &str = r"\text{kernel: } \mathrm{mean}_{i,j} \frac{\operatorname{E}{(\hat{k}(q_i, k_j) - e^{q_i \cdot k_j})}^2}{e^{2 q_i \cdot k_j}};\quad \text{attention: } \mathrm{mean}_i \frac{1}{2} \sum_j |\hat{P}_{ij} - P_{ij}|";
pub const MODEL_SCALING: &str = r"32^{-1/4}";
pub const SOFTMAX_ATTENTION: &str = r"P_{ij} = \frac{\exp(q_i \cdot k_j)}{\sum_l \exp(q_i \cdot k_l)},\quad o_i = \sum_j P_{ij}\, v_j";
pub const MODEL_SCALING_D: &str = r"d^{-1/4}";
pub const MODEL_SWAP: &str = r"e = \frac{\bar{h}}{|\bar{h}|},\ \bar{h} = \frac{1}{L} \sum_i h_i^{(6)};\quad \cos(e, \hat{e}) = e \cdot \hat{e};\quad \text{drift}_\ell = \frac{\|\hat{H}_\ell - H_\ell\|_F}{\|H_\ell\|_F}";
pub const MODEL_SWAP_COST: &str = r"\text{softmax: } L^2 (d + d_v) \text{ per head};\quad \text{a linear map with } D \text{ features: } L D (2 d_v + 1) \text{ and its projections}";
pub const RETRIEVAL_AGREEMENT: &str = r"\text{rank by } \cos(e_{\text{query}}, e_c);\quad \tau = \frac{\text{concordant} - \text{discordant pairs}}{n (n - 1) / 2}";
pub const HEDGEHOG_MAP: &str = r"\phi(x) = [\operatorname{softmax}(W x + b),\ \operatorname{softmax}(-W x - b)];\quad \min_{W, b} -\frac{1}{L} \sum_{i,j} P_{ij} \ln \hat{P}_{ij},\ \hat{P}_{ij} = \frac{\phi_q(q_i) \cdot \phi_k(k_j)}{\sum_l \phi_q(q_i) \cdot \phi_k(k_l)}";
pub const LENGTH_STUDY: &str = r"\text{exact: } L^2 (d + d_v) \text{ multiply-adds (causal: about half)},\ 4 L d \text{ bytes and a tile};\quad \text{linear: } 2 L D (d_v + 1) + 2 L\, c_\phi \text{ multiply-adds},\ 4 D d_v \text{ bytes and a chunk};\quad t_{\text{model}} = \text{multiply-adds} / r_{\text{dense}}";
pub const LM_PER_LAYER: &str = r"\mathrm{PPL}_\ell = \exp\Big(-\frac{1}{n-1} \sum_{t=1}^{n-1} \ln p_\ell(x_{t+1} \mid x_{\le t})\Big),\quad \text{layer } \ell\text{: } \operatorname{softmax}(q_t \cdot k_{\le t}/\sqrt{d})\, V \to \frac{{\phi(q_t)}^\top \sum_{s \le t} \phi(k_s)\, v_s^\top}{{\phi(q_t)}^\top \sum_{s \le t} \phi(k_s)}";
pub const LM_RECURRENT: &str = r"\text{softmax layer: keep } K_{\le t}, V_{\le t}\ (2 t d \text{ per key/value head}),\ o_t = \operatorname{softmax}(q_t \cdot K_{\le t}/\sqrt{d})\, V_{\le t};\quad \text{linear layer: } S_t = S_{t-1} + \psi(k_t)\, v_t^\top,\ z_t = z_{t-1} + \psi(k_t),\ o_t = \frac{{\phi(q_t)}^\top S_t}{{\phi(q_t)}^\top z_t}\ (D d + D \text{ per head, whatever } t)";
/// Attention transfer in a causal layer (Hedgehog's loss under the mask), judged by perplexity.
pub const LM_TRANSFER: &str = r"\min_{W, b}\ -\frac{1}{L} \sum_{i} \sum_{j \le i} P_{ij} \ln \hat{P}_{ij},\quad \hat{P}_{ij} = \frac{\phi_q(q_i) \cdot \phi_k(k_j)}{\sum_{l \le i} \phi_q(q_i) \cdot \phi_k(k_l)};\quad \mathrm{PPL} = e^{\ell};\quad \ell = -\frac{1}{T-1} \sum_{t} \ln p(x_{t+1} \mid x_{\le t})";

// The kernel view's panels below its first screen (the data panel, "What is computed") and the
// guided tour's steps on the kernel view.
pub const DATA_MOMENTS: &str = r"|\mu_{x,i}|,\ \sigma_{x,i},\ |\mu_{y,i}|,\ \sigma_{y,i};\quad a_i = 1,\ \sqrt{|\mu_{y,i}| / |\mu_{x,i}|},\ \left(\frac{\sigma_{y,i}^2 + \mu_{y,i}^2}{\sigma_{x,i}^2 + \mu_{x,i}^2}\right)^{1/4}";
pub const DATA_NORMS: &str = r"|x| = \sqrt{\sum_i x_i^2},\quad |y| = \sqrt{\sum_i y_i^2}";
pub const DATA_DENSE_P: &str = r"z = Px + P^{-\top} y,\quad P = {\left(M_x^{-1} \# M_y\right)}^{1/2} \text{ (closed form) or fitted};\quad A = P \text{ diagonal is the seed paper's}";
pub const DATA_DOT: &str = r"x \cdot y = \ln \mathrm{SM}(x, y)";
pub const DATA_AX_NORM: &str = r"|Ax| = \sqrt{\sum_i a_i^2 x_i^2}";
pub const DATA_AINV_Y_NORM: &str = r"|A^{-1} y| = \sqrt{\sum_i y_i^2 / a_i^2}";
pub const DATA_Z: &str = r"z = Ax + A^{-\top} y;\quad \mathrm{MSE} \propto e^{|z|^2}\, \mathrm{SM}^2 \quad \text{(a complex } A \text{ or GERF: with the magnitudes } a \text{ of its fit)}";
pub const SOFTMAX_KERNEL: &str = r"\mathrm{SM}(x, y) = \exp(x \cdot y),\quad x, y \in \mathbb{R}^d,\quad \omega_k \sim \mathcal{N}(0, I_d)";
pub const CEXP_HCEXP_MSE: &str = r"\text{CEXP: } \frac{1}{m}\, e^{|z|^2}\, \mathrm{SM}^2 \left(1 - e^{-|z|^2}\right);\quad \text{HCEXP: } \frac{1}{2m}\, e^{|z|^2}\, \mathrm{SM}^2 \left(1 - e^{-|z|^2}\right)^2,\quad z = Ax + A^{-\top} y";
pub const PRF_ESTIMATOR: &str = r"\widehat{\mathrm{SM}}(x, y) = \frac{1}{m} \sum_{k=1}^{m} e^{\omega_k \cdot x - |x|^2/2}\, e^{\omega_k \cdot y - |y|^2/2},\quad \omega_k \sim \mathcal{N}(0, I_d);\quad \operatorname{E} \widehat{\mathrm{SM}} = e^{x \cdot y}";
pub const PRF_RELATIVE_MSE: &str =
    r"\frac{\mathrm{MSE}(x, y)}{\mathrm{SM}{(x, y)}^2} = \frac{e^{|x + y|^2} - 1}{m}";
