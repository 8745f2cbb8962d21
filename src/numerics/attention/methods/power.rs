//! `(1 + q·k/n)^n` as a feature map `⊗^n [1, q/√n]` (seed 004).

use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::attention::method::{MethodFamily, MethodInfo};

use super::polynomial::PolynomialMethod;

/// The registry's entry.
pub const POWER: PolynomialMethod = PolynomialMethod {
    info: MethodInfo {
        id: "power",
        label: "(1 + x/n)^n",
        family: MethodFamily::Deterministic,
        colour: [170, 68, 153],
        formula: r"k(q, k) = {\Big(1 + \frac{q \cdot k}{n}\Big)}^n,\ \text{feature } {\big[1, q/\sqrt{n}\big]}^{\otimes n} \text{ of size } {(d + 1)}^n",
        source: "seed 004",
        parameters: &["degree"],
        is_random: false,
        is_quadratic: false,
        exact_at_full_length: false,
        needs_lln_constants: false,
        sweeps_budget: true,
    },
    make: PolynomialKernel::power,
};
