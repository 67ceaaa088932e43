use std::collections::HashMap;

/// Groups items by key, keeping their order within each group.
pub fn group_by<K, V, F>(items: Vec<V>, key: F) -> HashMap<K, Vec<V>>
where
    K: std::hash::Hash + Eq,
    F: Fn(&V) -> K,
{
    let mut out: HashMap<K, Vec<V>> = HashMap::new();
    for item in items {
        out.entry(key(&item)).or_default().push(item);
    }
    out
}

fn shifts(x: u64) -> u64 {
    (x << 3) >> 1 | x >> 60
}

impl<T: Clone> From<&[T]> for Wrapper<Vec<T>> {
    fn from(s: &[T]) -> Self { Wrapper(s.to_vec()) }
}
struct Wrapper<T>(T);
