//! The layers a swap names: `all`, one layer, a list, a range, or a mix (`0,4-6,29`).

/// The layers of `text` among `count`, sorted and without repeats, or a sentence saying what
/// is wrong.
pub fn parse_layers(text: &str, count: usize) -> Result<Vec<usize>, String> {
    let text = text.trim();
    if text == "all" {
        return Ok((0..count).collect());
    }
    let bad = |piece: &str| {
        format!(
            "expected all, a layer from 0 to {}, a list (1,4) or a range (3-7); got {piece:?}",
            count.saturating_sub(1)
        )
    };
    let layer = |piece: &str| match piece.trim().parse::<usize>() {
        Ok(l) if l < count => Ok(l),
        _ => Err(bad(piece)),
    };
    let mut layers = Vec::new();
    for piece in text.split(',') {
        match piece.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (layer(from)?, layer(to)?);
                if from > to {
                    return Err(bad(piece));
                }
                layers.extend(from..=to);
            }
            None => layers.push(layer(piece)?),
        }
    }
    layers.sort_unstable();
    layers.dedup();
    Ok(layers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ranges_and_all_are_read_and_nonsense_refused() {
        assert_eq!(parse_layers("all", 4), Ok(vec![0, 1, 2, 3]));
        assert_eq!(parse_layers(" 2 ", 4), Ok(vec![2]));
        assert_eq!(parse_layers("3,0-1,1", 4), Ok(vec![0, 1, 3]));
        for bad in ["", "4", "-1", "2-1", "a", "1,,2", "1-", "0-4"] {
            let e = parse_layers(bad, 4).expect_err(bad);
            assert!(e.contains("from 0 to 3"), "{bad}: {e}");
        }
    }
}
