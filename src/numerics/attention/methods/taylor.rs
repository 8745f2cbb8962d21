//! Taylor's `Σ_{j≤n} (q·k)^j / j!` as a feature map `[⊗^j q / √j!]_{j≤n}` (seed 004).

use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::attention::method::{MethodFamily, MethodInfo};

use super::polynomial::PolynomialMethod;

/// The registry's entry.
pub const TAYLOR: PolynomialMethod = PolynomialMethod {
    info: MethodInfo {
        id: "taylor",
        label: "Taylor",
        family: MethodFamily::Deterministic,
        colour: [102, 37, 6],
        formula: r"k(q, k) = \sum_{j \le n} \frac{{(q \cdot k)}^j}{j!},\ \text{feature } {\Big[\tfrac{q^{\otimes j}}{\sqrt{j!}}\Big]}_{j \le n} \text{ of size } \sum_{j \le n} d^j",
        source: "seed 004",
        parameters: &["degree"],
        is_random: false,
        is_quadratic: false,
        exact_at_full_length: false,
        needs_lln_constants: false,
        sweeps_budget: true,
    },
    make: PolynomialKernel::taylor,
};
