//! [`InputError`]: what is wrong with the numbers a computation was given (a shape it cannot
//! use, a matrix of the wrong length, a NaN or infinite entry), one type for every routine that
//! checks its inputs. Their own error enums wrap it (`LlnError::Input`) beside what can go
//! wrong inside them (an overflow, a degenerate fit).

use std::fmt;

/// Why the numbers given to a computation cannot be used.
#[derive(Clone, Debug, PartialEq)]
pub enum InputError {
    /// The sizes cannot be used (a zero dimension, a product that overflows `usize`). `what`
    /// names what the sizes are of, and opens the message.
    InvalidShape { what: &'static str, reason: String },
    /// The matrix (or list) `what` has the wrong number of entries.
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// Entry `index` of `what` is NaN or infinite.
    NonFinite { what: &'static str, index: usize },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::InvalidShape { what, reason } => write!(f, "{what}: {reason}"),
            InputError::LengthMismatch {
                what,
                expected,
                got,
            } => write!(f, "{what} should have {expected} entries, got {got}"),
            InputError::NonFinite { what, index } => {
                write!(f, "{what}[{index}] is not a finite number")
            }
        }
    }
}

impl std::error::Error for InputError {}

/// `Ok` when `values` holds exactly `expected` entries, all finite; else the first problem
/// (the length before any entry).
pub fn check_finite(what: &'static str, values: &[f64], expected: usize) -> Result<(), InputError> {
    if values.len() != expected {
        return Err(InputError::LengthMismatch {
            what,
            expected,
            got: values.len(),
        });
    }
    match values.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(InputError::NonFinite { what, index }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_input() {
        let shape = InputError::InvalidShape {
            what: "attention shape",
            reason: "len × d overflows".into(),
        };
        assert_eq!(shape.to_string(), "attention shape: len × d overflows");
        assert_eq!(
            check_finite("k", &[1.0, 2.0], 3).unwrap_err().to_string(),
            "k should have 3 entries, got 2"
        );
        assert_eq!(
            check_finite("v", &[1.0, f64::NAN, f64::INFINITY], 3),
            Err(InputError::NonFinite {
                what: "v",
                index: 1
            })
        );
        assert_eq!(check_finite("q", &[0.0; 4], 4), Ok(()));
    }
}
