//! `(1 + q·k/n)^n` as a feature map `⊗^n [1, q/√n]` (seed 004).

use crate::numerics::attention::deterministic::PolynomialKernel;

use super::polynomial::PolynomialMethod;

/// The registry's entry.
pub const POWER: PolynomialMethod = PolynomialMethod {
    id: "power",
    label: "(1 + x/n)^n",
    colour: [170, 68, 153],
    formula: r"k(q, k) = {\Big(1 + \frac{q \cdot k}{n}\Big)}^n,\ \text{feature } {\big[1, q/\sqrt{n}\big]}^{\otimes n} \text{ of size } {(d + 1)}^n",
    make: PolynomialKernel::power,
};
