//! The stored heads' asset (`assets/minilm-heads.bin`, 860 KB) as a worker holds it: read the
//! first time a part needs it, then kept, so that no request carries it. The reader is the
//! worker's own (a fetch beside the page in the browser, a file for the command line and the
//! tests); a failed read is not kept, so the next part tries again.

use std::fmt;
use std::sync::Arc;

use crate::numerics::attention::heads::RealHeads;

/// How the asset's bytes are read.
type Reader = Box<dyn FnMut() -> Result<Vec<u8>, String>>;

/// The stored heads, read once.
pub struct StoredHeads {
    read: Option<Reader>,
    kept: Option<Arc<RealHeads>>,
}

impl fmt::Debug for StoredHeads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredHeads")
            .field("readable", &self.read.is_some())
            .field("kept", &self.kept.is_some())
            .finish()
    }
}

impl Default for StoredHeads {
    /// [`StoredHeads::none`].
    fn default() -> Self {
        Self::none()
    }
}

impl StoredHeads {
    /// Heads read by `read` when first needed.
    pub fn read_by(read: impl FnMut() -> Result<Vec<u8>, String> + 'static) -> Self {
        Self {
            read: Some(Box::new(read)),
            kept: None,
        }
    }

    /// No stored heads here (a worker that computes only synthetic data, the page's runner in
    /// the browser tests): a part that needs them is refused with a sentence.
    pub fn none() -> Self {
        Self {
            read: None,
            kept: None,
        }
    }

    /// The heads, read and parsed the first time.
    pub fn get(&mut self) -> Result<Arc<RealHeads>, String> {
        if let Some(heads) = &self.kept {
            return Ok(heads.clone());
        }
        let read = self
            .read
            .as_mut()
            .ok_or("the stored heads are not available in this worker")?;
        let bytes = read()?;
        let heads =
            Arc::new(RealHeads::parse(&bytes).map_err(|e| format!("the stored heads: {e}"))?);
        self.kept = Some(heads.clone());
        Ok(heads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::attention::heads::HEADS_ASSET_PATH;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn read_once_kept_after_and_a_failed_read_tried_again() {
        let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
        let reads = Rc::new(Cell::new(0));
        let counted = reads.clone();
        let mut fail_first = true;
        let mut stored = StoredHeads::read_by(move || {
            counted.set(counted.get() + 1);
            if std::mem::take(&mut fail_first) {
                return Err("HTTP status 503".into());
            }
            std::fs::read(&path).map_err(|e| e.to_string())
        });
        assert_eq!(stored.get().unwrap_err(), "HTTP status 503");
        let first = stored.get().unwrap();
        let second = stored.get().unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(reads.get(), 2, "read again after the failure, then kept");
        assert!(
            StoredHeads::none()
                .get()
                .unwrap_err()
                .contains("not available")
        );
        let mut damaged = StoredHeads::read_by(|| Ok(vec![1, 2, 3]));
        assert!(damaged.get().unwrap_err().starts_with("the stored heads: "));
    }
}
