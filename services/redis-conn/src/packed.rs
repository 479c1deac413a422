//! Packed lists: the one encoding of a list of strings in a Redis value or a script argument,
//! shared by every store and by the Lua `pack`/`unpk` of [`crate::script::BASICS`]. Each item is
//! its length in bytes in decimal, `:`, and its bytes, so an item may hold any character (a `:`,
//! a newline, client text) without ever shifting its neighbours.
//!
//! ```
//! use arbiter_redis_conn::packed::{pack, unpack};
//! let text = pack(&["e4", "", "a:b"]);
//! assert_eq!(text, "2:e40:3:a:b");
//! assert_eq!(unpack(&text).unwrap(), ["e4", "", "a:b"]);
//! ```

/// Appends `items` as a packed list to `out`.
pub fn pack_into<S: AsRef<str>>(out: &mut String, items: &[S]) {
    for item in items {
        let item = item.as_ref();
        out.push_str(&item.len().to_string());
        out.push(':');
        out.push_str(item);
    }
}

/// `items` as a packed list.
pub fn pack<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::new();
    pack_into(&mut out, items);
    out
}

/// The items of a packed list.
///
/// # Errors
/// What is wrong with text that is not a packed list: a length missing or not a number (a
/// length has at most 10 digits, so a long value without one is rejected at once), or an item
/// cut short (or cut inside a character).
pub fn unpack(text: &str) -> Result<Vec<&str>, String> {
    let mut items = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let colon = rest
            .bytes()
            .take(11)
            .position(|b| b == b':')
            .ok_or_else(|| "packed list without a length".to_owned())?;
        let len: usize = rest[..colon]
            .parse()
            .map_err(|_| "packed list with a bad length".to_owned())?;
        let body = &rest[colon + 1..];
        let item = body
            .get(..len)
            .ok_or_else(|| "packed item longer than the list".to_owned())?;
        items.push(item);
        rest = &body[len..];
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_back_whatever_their_items_hold() {
        let items = ["abc", "", "x:", "é", "12:34", "\n"];
        assert_eq!(unpack(&pack(&items)).unwrap(), items);
        assert_eq!(unpack("").unwrap(), Vec::<&str>::new());
    }

    #[test]
    fn malformed_lists_are_refused() {
        for bad in ["5:ab", "x:ab", "ab", "99999999999:a", "1:é"] {
            assert!(unpack(bad).is_err(), "{bad:?}");
        }
    }
}
