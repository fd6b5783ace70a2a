//! Cursor pagination over the registry's immutable lists.
//!
//! The cursor is the opaque base64 of the next offset: cheap, stateless and
//! valid on every replica because the lists are built once per configuration.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use super::McpError;

/// Items per page of `tools/list`, `resources/list`, `prompts/list`...
pub(super) const PAGE_SIZE: usize = 100;

/// One page of `items` starting at `cursor`, and the cursor of the next page.
pub(super) fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
) -> Result<(Vec<T>, Option<String>), McpError> {
    let start = match cursor {
        None => 0,
        Some(cursor) => decode(cursor)
            .filter(|start| *start <= items.len())
            .ok_or_else(|| McpError::invalid_params("invalid pagination cursor", None))?,
    };
    let end = (start + PAGE_SIZE).min(items.len());
    let next = (end < items.len()).then(|| URL_SAFE_NO_PAD.encode(end.to_string()));
    Ok((items[start..end].to_vec(), next))
}

fn decode(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&bytes).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_through_everything_once() {
        let items: Vec<usize> = (0..250).collect();
        let (first, next) = page(&items, None).unwrap();
        assert_eq!(first.len(), 100);
        let (second, next) = page(&items, next.as_deref()).unwrap();
        assert_eq!(second[0], 100);
        let (third, next) = page(&items, next.as_deref()).unwrap();
        assert_eq!(third.len(), 50);
        assert!(next.is_none());
    }

    #[test]
    fn rejects_forged_cursors() {
        let items = [1, 2, 3];
        assert!(page(&items, Some("not-base64!")).is_err());
        assert!(page(&items, Some(&URL_SAFE_NO_PAD.encode("99"))).is_err());
    }
}
