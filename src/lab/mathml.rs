//! Formulas as MathML (native in current browsers; no JavaScript math library).
//!
//! Every formula of the lab is written once, as a line of plain text in the TeX-like notation
//! its doc strings already use (`e^{|z|²}`, `χ²_d(q)`, `A⁻ᵀy`, `Σₖ cosh(ωₖ·z)`); [`to_mathml`]
//! turns that one line into presentation MathML, so the page, the command line's listing and
//! the docs never hold two copies of a formula.
//!
//! The notation: `x^{…}` / `x^y` superscripts and `x_{…}` / `x_y` subscripts (braces group), the
//! Unicode superscripts `² ³ ᵀ ⁻¹ ⁻ᵀ` and subscripts `ᵢ ₖ ⱼ`, `√(…)` square roots, `(a)/(b)` is
//! left as written (a solidus reads well inline). Runs of two or more letters that are not a
//! known function name are prose and become `<mtext>`, so a formula may carry a few words.

/// Function and operator names set upright as `<mi>` (multi-letter identifiers).
const FUNCTIONS: [&str; 24] = [
    "exp", "log", "ln", "cos", "sin", "cosh", "sinh", "max", "min", "mean", "median", "diag",
    "softmax", "elu", "argmin", "Re", "Im", "MSE", "SM", "ŜM", "Var", "E", "TV", "erf",
];

/// `text` as `<math>` elements (inline), each with its own text as its `alttext`: one per
/// part of `text` between top-level semicolons (outside any bracket), so that a long formula
/// wraps between its parts where its box is narrow (MathML itself never breaks a line).
pub fn to_mathml(text: &str) -> String {
    top_level_parts(text)
        .iter()
        .map(|part| {
            let chars: Vec<char> = part.chars().collect();
            let mut parser = Parser { chars, at: 0 };
            let body = parser.sequence(None);
            format!(
                "<math display=\"inline\" alttext=\"{}\"><mrow>{}</mrow></math>",
                escape(part.trim()),
                body
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` cut after each semicolon outside brackets (the semicolon stays with its part).
fn top_level_parts(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            ';' if depth == 0 => {
                parts.push(&text[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if parts.is_empty() || !text[start..].trim().is_empty() {
        parts.push(&text[start..]);
    }
    parts
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn superscript_digit(c: char) -> Option<&'static str> {
    Some(match c {
        '²' => "2",
        '³' => "3",
        '¹' => "1",
        '⁴' => "4",
        'ᵀ' => "T",
        '⁻' => "−",
        'ⁿ' => "n",
        _ => return None,
    })
}

fn subscript_letter(c: char) -> Option<&'static str> {
    Some(match c {
        'ᵢ' => "i",
        'ₖ' => "k",
        'ⱼ' => "j",
        'ₘ' => "m",
        'ₙ' => "n",
        '₀' => "0",
        '₁' => "1",
        '₂' => "2",
        _ => return None,
    })
}

fn is_operator(c: char) -> bool {
    "+−-·=()[]{}|,;/∘⊗≤≥<>~×≈→∈∑Σ∏!:".contains(c) || c == '\''
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    /// Atoms with their scripts until `close` (or the end).
    fn sequence(&mut self, close: Option<char>) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if Some(c) == close {
                break;
            }
            let Some(atom) = self.atom() else {
                continue;
            };
            out.push_str(&self.scripts(atom));
        }
        out
    }

    /// One atom (without scripts), or `None` for skipped whitespace.
    fn atom(&mut self) -> Option<String> {
        let c = self.peek()?;
        if c.is_whitespace() {
            self.at += 1;
            // Several spaces in a row separate parts of a formula.
            if self.peek().is_some_and(char::is_whitespace) {
                while self.peek().is_some_and(char::is_whitespace) {
                    self.at += 1;
                }
                return Some("<mspace width=\"1em\"/>".to_string());
            }
            // One space separates words of prose and gives a formula room to breathe.
            return Some("<mspace width=\"0.25em\"/>".to_string());
        }
        if c == '{' {
            self.at += 1;
            let inner = self.sequence(Some('}'));
            self.at += 1;
            return Some(format!("<mrow>{inner}</mrow>"));
        }
        if c == '√' {
            self.at += 1;
            if self.peek() == Some('(') {
                self.at += 1;
                let inner = self.sequence(Some(')'));
                self.at += 1;
                return Some(format!("<msqrt>{inner}</msqrt>"));
            }
            let inner = self.atom().unwrap_or_default();
            return Some(format!("<msqrt>{inner}</msqrt>"));
        }
        if c.is_ascii_digit()
            || (c == '.'
                && self
                    .chars
                    .get(self.at + 1)
                    .is_some_and(char::is_ascii_digit))
        {
            let start = self.at;
            while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                self.at += 1;
            }
            let number: String = self.chars[start..self.at].iter().collect();
            return Some(format!("<mn>{number}</mn>"));
        }
        if c == 'Σ' || c == '∏' {
            self.at += 1;
            return Some(format!("<mo>{c}</mo>"));
        }
        if c.is_alphabetic() && superscript_digit(c).is_none() && subscript_letter(c).is_none() {
            let start = self.at;
            while self.peek().is_some_and(|c| {
                c.is_alphabetic() && superscript_digit(c).is_none() && subscript_letter(c).is_none()
            }) {
                self.at += 1;
            }
            // A hat or tilde combining mark stays on its letter.
            while self
                .peek()
                .is_some_and(|c| ('\u{300}'..='\u{36f}').contains(&c))
            {
                self.at += 1;
            }
            let word: String = self.chars[start..self.at].iter().collect();
            let letters = word.chars().filter(|c| c.is_alphabetic()).count();
            if letters == 1 || FUNCTIONS.contains(&word.as_str()) {
                return Some(format!("<mi>{}</mi>", escape(&word)));
            }
            return Some(format!("<mtext>{}</mtext>", escape(&word)));
        }
        self.at += 1;
        if let Some(sub) = subscript_letter(c) {
            return Some(format!("<mi>{sub}</mi>"));
        }
        if is_operator(c) || !c.is_alphanumeric() {
            let shown = if c == '-' { '−' } else { c };
            return Some(format!("<mo>{}</mo>", escape(&shown.to_string())));
        }
        Some(format!("<mi>{}</mi>", escape(&c.to_string())))
    }

    /// `base` with the scripts that follow it (`^…`, `_…`, Unicode super- and subscripts).
    fn scripts(&mut self, base: String) -> String {
        let mut sup = String::new();
        let mut sub = String::new();
        loop {
            match self.peek() {
                Some('^') => {
                    self.at += 1;
                    sup.push_str(&self.script_argument());
                }
                Some('_') => {
                    self.at += 1;
                    sub.push_str(&self.script_argument());
                }
                Some(c) if superscript_digit(c).is_some() => {
                    let mut text = String::new();
                    while let Some(s) = self.peek().and_then(superscript_digit) {
                        text.push_str(s);
                        self.at += 1;
                    }
                    sup.push_str(&format!("<mi>{text}</mi>"));
                }
                Some(c) if subscript_letter(c).is_some() => {
                    let mut text = String::new();
                    while let Some(s) = self.peek().and_then(subscript_letter) {
                        text.push_str(s);
                        self.at += 1;
                    }
                    sub.push_str(&format!("<mi>{text}</mi>"));
                }
                _ => break,
            }
        }
        match (sub.is_empty(), sup.is_empty()) {
            (true, true) => base,
            (false, true) => format!("<msub>{base}<mrow>{sub}</mrow></msub>"),
            (true, false) => format!("<msup>{base}<mrow>{sup}</mrow></msup>"),
            (false, false) => {
                format!("<msubsup>{base}<mrow>{sub}</mrow><mrow>{sup}</mrow></msubsup>")
            }
        }
    }

    /// A script's argument: a braced group, one atom, or a comma-joined index (`μ_y,i`: the
    /// doc strings' way of writing `μ_{y,i}`).
    fn script_argument(&mut self) -> String {
        if self.peek() == Some('{') {
            self.at += 1;
            let inner = self.sequence(Some('}'));
            self.at += 1;
            return inner;
        }
        let mut argument = self.atom().unwrap_or_default();
        while self.peek() == Some(',')
            && self
                .chars
                .get(self.at + 1)
                .is_some_and(|c| c.is_alphanumeric())
            && !self
                .chars
                .get(self.at + 2)
                .is_some_and(|c| c.is_alphanumeric())
        {
            self.at += 1;
            argument.push_str("<mo>,</mo>");
            argument.push_str(&self.atom().unwrap_or_default());
        }
        argument
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formula_wraps_between_its_top_level_parts_only() {
        let m = to_mathml("a = (b; c); d = e");
        assert_eq!(m.matches("<math ").count(), 2, "{m}");
        assert!(m.contains("alttext=\"a = (b; c);\""), "{m}");
        assert!(m.contains("alttext=\"d = e\""), "{m}");
        assert_eq!(top_level_parts("x = 1"), vec!["x = 1"]);
        assert_eq!(top_level_parts("x;"), vec!["x;"]);
    }

    #[test]
    fn scripts_roots_and_words_become_their_elements() {
        let m = to_mathml("e^{|z|²}");
        assert!(
            m.starts_with("<math display=\"inline\" alttext=\"e^{|z|²}\">"),
            "{m}"
        );
        // As in TeX, the square of |z|² sits on the closing bar.
        assert!(m.contains("<msup><mi>e</mi><mrow><mo>|</mo><mi>z</mi><msup><mo>|</mo><mrow><mi>2</mi></mrow></msup></mrow></msup>"), "{m}");
        let m = to_mathml("χ²_d(q)");
        assert!(
            m.contains(
                "<msubsup><mi>χ</mi><mrow><mi>d</mi></mrow><mrow><mi>2</mi></mrow></msubsup>"
            ),
            "{m}"
        );
        let m = to_mathml("√(2m)");
        assert!(m.contains("<msqrt><mn>2</mn><mi>m</mi></msqrt>"), "{m}");
        let m = to_mathml("A⁻ᵀy");
        assert!(
            m.contains("<msup><mi>A</mi><mrow><mi>−T</mi></mrow></msup><mi>y</mi>"),
            "{m}"
        );
        let m = to_mathml("Σₖ cosh(ωₖ·z)");
        assert!(
            m.contains("<msub><mo>Σ</mo><mrow><mi>k</mi></mrow></msub><mspace width=\"0.25em\"/><mi>cosh</mi>"),
            "{m}"
        );
        let m = to_mathml("a_i = √(|μ_y,i| / |μ_x,i|)");
        assert!(
            m.contains("<msub><mi>μ</mi><mrow><mi>y</mi><mo>,</mo><mi>i</mi></mrow></msub>"),
            "{m}"
        );
        let m = to_mathml("φ, ψ the estimator's features");
        assert!(m.contains("<mtext>estimator</mtext>"), "{m}");
    }

    #[test]
    fn markup_in_the_text_is_escaped_and_nothing_panics() {
        let m = to_mathml("a < b & c > \"d\"");
        assert!(!m.contains("< b"), "{m}");
        assert!(m.contains("&lt;") && m.contains("&amp;") && m.contains("&gt;"));
        // Unbalanced braces, trailing scripts, empty text.
        for text in ["", "x^", "x_", "{a", "}", "√", "e^{", "^^__", "1.2.3"] {
            let m = to_mathml(text);
            assert!(
                m.starts_with("<math") && m.ends_with("</math>"),
                "{text}: {m}"
            );
        }
    }

    #[test]
    fn every_formula_of_the_registry_converts_with_balanced_elements() {
        for e in crate::numerics::estimators::REGISTRY {
            let m = to_mathml(e.docs().formula);
            for tag in ["mrow", "msup", "msub", "msqrt", "msubsup"] {
                assert_eq!(
                    m.matches(&format!("<{tag}>")).count(),
                    m.matches(&format!("</{tag}>")).count(),
                    "{}: {tag} in {m}",
                    e.id()
                );
            }
        }
    }
}
