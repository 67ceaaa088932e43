//! What a render may still allocate: its fuel, converted to bytes. Filters (here and in the
//! layers) check a result's size against it before they allocate.

use minijinja::value::Value;

/// The bytes of data one fuel pays for (minijinja charges data created, output written and items
/// visited against the same fuel as instructions).
pub(crate) const BYTES_PER_FUEL: u64 = 64;

/// The bytes of data the fuel left in this render can still pay for.
pub(crate) fn room(state: &minijinja::State) -> u64 {
    state
        .fuel_levels()
        .map_or(u64::MAX, |(_, left)| left.saturating_mul(BYTES_PER_FUEL))
}

/// Fails (out of fuel) unless this render can still pay for `bytes` more bytes of data. Filters
/// call it before they allocate a result of a size they can compute.
pub(crate) fn ensure_room(state: &minijinja::State, bytes: usize) -> Result<(), minijinja::Error> {
    let room = room(state);
    if bytes as u64 >= room {
        return Err(out_of_room(bytes as u64, room));
    }
    Ok(())
}

pub(crate) fn out_of_room(bytes: u64, room: u64) -> minijinja::Error {
    minijinja::Error::new(
        minijinja::ErrorKind::OutOfFuel,
        format!(
            "a value of {bytes} bytes or more would not fit in the {room} bytes this render may \
             still allocate (half the template memory, less what it used)"
        ),
    )
}

/// Fails (out of fuel) unless `value` written out in full, every item of every container
/// included, fits in what this render may still allocate. Walks no more than that, depth first
/// with one iterator per open container: a filter that converts or writes a whole value calls it
/// first, so that a lazily repeated list (`[s] * 100000000`) is refused after a bounded walk.
pub(crate) fn ensure_value_fits(
    state: &minijinja::State,
    value: &Value,
) -> Result<(), minijinja::Error> {
    /// What one item costs besides its text: its slot, and punctuation.
    const SLOT: u64 = 8;
    let room = room(state);
    let mut used = 0u64;
    let mut take = |bytes: u64| {
        used = used.saturating_add(bytes);
        if used >= room {
            return Err(out_of_room(used, room));
        }
        Ok(())
    };
    // Open containers: the container (to look up a map's values) and its iterator.
    let mut open: Vec<(Value, minijinja::value::ValueIter)> = Vec::new();
    let mut next = Some(value.clone());
    loop {
        if let Some(value) = next.take() {
            take(SLOT)?;
            if let Some(text) = value.as_str() {
                take(text.len() as u64)?;
            } else if value.as_object().is_some()
                && let Ok(items) = value.try_iter()
            {
                open.push((value, items));
            }
        }
        let Some((container, items)) = open.last_mut() else {
            return Ok(());
        };
        match items.next() {
            Some(item) => {
                if container.kind() == minijinja::value::ValueKind::Map {
                    let member = container.get_item(&item).unwrap_or_default();
                    take(SLOT)?;
                    if let Some(text) = item.as_str() {
                        take(text.len() as u64)?;
                    }
                    next = Some(member);
                } else {
                    next = Some(item);
                }
            }
            None => {
                open.pop();
            }
        }
    }
}
