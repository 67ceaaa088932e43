//! Fast, allocation-free content keys for memoisation: any `Serialize` value fed into XXH3-128.
//!
//! XXH3 of long inputs is twox-hash's, which picks its vector code (AVX2, else SSE2) when it runs,
//! not when the crate is compiled: the long strings of a send (context files, skills) are most of
//! what a key reads, and a build for a generic x86-64 target would otherwise hash them with SSE2
//! only (half as fast). Short inputs (the tokenizer's pieces, MCP tool names, a key that fits in
//! its block) keep xxhash-rust's XXH3, whose path for a few bytes is faster; both compute the same
//! function.
//!
//! These keys decide cache reuse inside one process (the stable half, token counts); they are not
//! published. Published fingerprints use SHA-256 (see [`crate::fingerprint`]). Every value is
//! written with a type tag and every string and sequence with its length, so distinct values of the
//! same type give distinct byte streams.

use serde::ser::{self, Serialize};
use twox_hash::xxhash3_128::{DEFAULT_SECRET_LENGTH, RawHasher, SecretBuffer};

/// A streaming XXH3-128 hasher with the default secret, allocating nothing.
pub(crate) type Xxh3 = RawHasher<&'static [u8; DEFAULT_SECRET_LENGTH]>;

/// A new [`Xxh3`] with the default seed and secret.
pub(crate) fn xxh3_128_hasher() -> Xxh3 {
    RawHasher::new(SecretBuffer::default())
}

/// A 128-bit content key.
pub(crate) type Key = u128;

/// Builds a key from several serialisable parts.
pub(crate) struct KeyBuilder {
    hasher: Blocks,
}

/// XXH3 fed in blocks: the many small writes of a serialised value (tags, lengths, short
/// strings) are gathered on the stack and handed to the hasher a block at a time, since each
/// streaming update has a fixed cost; a write of a block or more (a context file) goes to the
/// hasher as it is. The block stays small because it is zeroed for every key, and most keys are
/// short. XXH3's streaming digest depends only on the concatenated bytes, so the key is the same
/// as with one update per write.
///
/// The streaming hasher is made only when a key outgrows its block: a key that fits (most do: a
/// volatile unit's, the stable key over its inputs' digests, the digest of a small fact) is one
/// call of the one-shot XXH3 over the block, which costs far less than making, copying and
/// finishing a streaming state, and computes the same function.
struct Blocks {
    hasher: Option<Xxh3>,
    block: [u8; BLOCK],
    len: usize,
}

const BLOCK: usize = 512;

impl Blocks {
    /// Nothing written yet, and no streaming hasher.
    fn new() -> Self {
        Self {
            hasher: None,
            block: [0; BLOCK],
            len: 0,
        }
    }

    #[inline]
    fn update(&mut self, bytes: &[u8]) {
        if bytes.len() <= BLOCK - self.len {
            self.block[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
            return;
        }
        self.spill(bytes);
    }

    /// Hands the block to the streaming hasher (made on first need), then the bytes that do not
    /// fit beside it: kept out of [`Blocks::update`], so that the path every small write takes
    /// stays a copy.
    #[inline(never)]
    fn spill(&mut self, bytes: &[u8]) {
        let hasher = self.hasher.get_or_insert_with(xxh3_128_hasher);
        hasher.write(&self.block[..self.len]);
        self.len = 0;
        if bytes.len() >= BLOCK {
            hasher.write(bytes);
        } else {
            self.block[..bytes.len()].copy_from_slice(bytes);
            self.len = bytes.len();
        }
    }

    fn digest128(&self) -> Key {
        match &self.hasher {
            None => xxhash_rust::xxh3::xxh3_128(&self.block[..self.len]),
            Some(hasher) => {
                let mut hasher = hasher.clone();
                hasher.write(&self.block[..self.len]);
                hasher.finish_128()
            }
        }
    }
}

impl KeyBuilder {
    pub fn new(domain: &str) -> Self {
        let mut hasher = Blocks::new();
        hasher.update(domain.as_bytes());
        hasher.update(&[0]);
        Self { hasher }
    }

    /// Adds a value. Serialisation into the hasher cannot fail for plain data; a value whose
    /// `Serialize` impl reports an error still changes the key (the error's text is mixed in).
    pub fn add<T: Serialize + ?Sized>(&mut self, value: &T) -> &mut Self {
        if let Err(error) = value.serialize(HashSerializer {
            hasher: &mut self.hasher,
        }) {
            self.hasher.update(b"\xff");
            self.hasher.update(error.0.as_bytes());
        }
        self
    }

    pub fn finish(&self) -> Key {
        self.hasher.digest128()
    }
}

#[derive(Debug)]
pub(crate) struct HashError(String);

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HashError {}

impl ser::Error for HashError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        HashError(msg.to_string())
    }
}

struct HashSerializer<'a> {
    hasher: &'a mut Blocks,
}

impl HashSerializer<'_> {
    fn tag(&mut self, tag: u8) {
        self.hasher.update(&[tag]);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.hasher.update(&(bytes.len() as u64).to_le_bytes());
        self.hasher.update(bytes);
    }

    fn reborrow(&mut self) -> HashSerializer<'_> {
        HashSerializer {
            hasher: self.hasher,
        }
    }
}

macro_rules! number {
    ($($method:ident: $ty:ty => $tag:expr),* $(,)?) => {
        $(fn $method(mut self, v: $ty) -> Result<(), HashError> {
            self.tag($tag);
            self.hasher.update(&v.to_le_bytes());
            Ok(())
        })*
    };
}

impl<'a> ser::Serializer for HashSerializer<'a> {
    type Ok = ();
    type Error = HashError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    number! {
        serialize_i8: i8 => 1, serialize_i16: i16 => 2, serialize_i32: i32 => 3, serialize_i64: i64 => 4,
        serialize_i128: i128 => 5, serialize_u8: u8 => 6, serialize_u16: u16 => 7, serialize_u32: u32 => 8,
        serialize_u64: u64 => 9, serialize_u128: u128 => 10, serialize_f32: f32 => 11, serialize_f64: f64 => 12,
    }

    fn serialize_bool(mut self, v: bool) -> Result<(), HashError> {
        self.tag(13);
        self.hasher.update(&[u8::from(v)]);
        Ok(())
    }

    fn serialize_char(mut self, v: char) -> Result<(), HashError> {
        self.tag(14);
        self.hasher.update(&u32::from(v).to_le_bytes());
        Ok(())
    }

    fn serialize_str(mut self, v: &str) -> Result<(), HashError> {
        self.tag(15);
        self.bytes(v.as_bytes());
        Ok(())
    }

    fn serialize_bytes(mut self, v: &[u8]) -> Result<(), HashError> {
        self.tag(16);
        self.bytes(v);
        Ok(())
    }

    fn serialize_none(mut self) -> Result<(), HashError> {
        self.tag(17);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(mut self, value: &T) -> Result<(), HashError> {
        self.tag(18);
        value.serialize(self)
    }

    fn serialize_unit(mut self) -> Result<(), HashError> {
        self.tag(19);
        Ok(())
    }

    fn serialize_unit_struct(mut self, _: &'static str) -> Result<(), HashError> {
        self.tag(19);
        Ok(())
    }

    fn serialize_unit_variant(
        mut self,
        _: &'static str,
        index: u32,
        _: &'static str,
    ) -> Result<(), HashError> {
        self.tag(20);
        self.hasher.update(&index.to_le_bytes());
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _: &'static str,
        index: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        self.tag(21);
        self.hasher.update(&index.to_le_bytes());
        value.serialize(self)
    }

    fn serialize_seq(mut self, len: Option<usize>) -> Result<Self, HashError> {
        self.tag(22);
        self.hasher
            .update(&(len.unwrap_or(usize::MAX) as u64).to_le_bytes());
        Ok(self)
    }

    fn serialize_tuple(mut self, len: usize) -> Result<Self, HashError> {
        self.tag(23);
        self.hasher.update(&(len as u64).to_le_bytes());
        Ok(self)
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Self, HashError> {
        self.serialize_tuple(len)
    }

    fn serialize_tuple_variant(
        mut self,
        _: &'static str,
        index: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Self, HashError> {
        self.tag(24);
        self.hasher.update(&index.to_le_bytes());
        self.hasher.update(&(len as u64).to_le_bytes());
        Ok(self)
    }

    fn serialize_map(mut self, len: Option<usize>) -> Result<Self, HashError> {
        self.tag(25);
        self.hasher
            .update(&(len.unwrap_or(usize::MAX) as u64).to_le_bytes());
        Ok(self)
    }

    fn serialize_struct(mut self, _: &'static str, len: usize) -> Result<Self, HashError> {
        self.tag(26);
        self.hasher.update(&(len as u64).to_le_bytes());
        Ok(self)
    }

    fn serialize_struct_variant(
        mut self,
        _: &'static str,
        index: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Self, HashError> {
        self.tag(27);
        self.hasher.update(&index.to_le_bytes());
        self.hasher.update(&(len as u64).to_le_bytes());
        Ok(self)
    }
}

impl ser::SerializeSeq for HashSerializer<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), HashError> {
        value.serialize(self.reborrow())
    }
    fn end(mut self) -> Result<(), HashError> {
        self.tag(28);
        Ok(())
    }
}

/// Tuples, tuple structs and tuple variants: their elements in order, with nothing after them
/// (their length was written first).
macro_rules! positional {
    ($($trait:ident :: $method:ident),* $(,)?) => {$(
        impl ser::$trait for HashSerializer<'_> {
            type Ok = ();
            type Error = HashError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), HashError> {
                value.serialize(self.reborrow())
            }
            fn end(self) -> Result<(), HashError> {
                Ok(())
            }
        }
    )*};
}

positional!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for HashSerializer<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), HashError> {
        key.serialize(self.reborrow())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), HashError> {
        value.serialize(self.reborrow())
    }
    fn end(mut self) -> Result<(), HashError> {
        self.tag(29);
        Ok(())
    }
}

/// A struct's fields are written without their names: a type writes its fields in one order, and
/// a key reads one type at each place (after the name of the root it keys), so the names say
/// nothing the position does not.
impl ser::SerializeStruct for HashSerializer<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        value.serialize(self.reborrow())
    }
    fn skip_field(&mut self, _: &'static str) -> Result<(), HashError> {
        // A skipped field (e.g. `None` with `skip_serializing_if`) must still differ from a
        // present one, whose value starts with a tag below this one.
        self.tag(30);
        Ok(())
    }
    fn end(self) -> Result<(), HashError> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for HashSerializer<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        self.bytes(key.as_bytes());
        value.serialize(self.reborrow())
    }
    fn end(self) -> Result<(), HashError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<T: Serialize>(v: &T) -> Key {
        KeyBuilder::new("test").add(v).finish()
    }

    /// Writes of every size, straddling and exceeding a block, give the digest of the
    /// concatenated bytes.
    #[test]
    fn blocks_digest_the_concatenation() {
        let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let mut blocks = Blocks::new();
        let (mut at, mut size) = (0, 0);
        while at < data.len() {
            let end = (at + size).min(data.len());
            blocks.update(&data[at..end]);
            assert_eq!(
                blocks.digest128(),
                twox_hash::XxHash3_128::oneshot(&data[..end]),
                "after {end} bytes"
            );
            at = end;
            size = (size * 5 + 3) % (3 * BLOCK);
        }
        // Every length a key can have in one block (hashed in one shot, through each of XXH3's
        // paths for short inputs) and just past it (streamed).
        for end in 0..=2 * BLOCK {
            let mut blocks = Blocks::new();
            blocks.update(&data[..end / 2]);
            blocks.update(&data[end / 2..end]);
            assert_eq!(
                blocks.digest128(),
                twox_hash::XxHash3_128::oneshot(&data[..end]),
                "{end} bytes"
            );
        }
    }

    #[test]
    fn distinct_values_give_distinct_keys() {
        assert_ne!(key(&("ab", "c")), key(&("a", "bc")));
        assert_ne!(key(&vec!["a"]), key(&vec!["a", ""]));
        assert_ne!(key(&Some(0u8)), key(&None::<u8>));
        assert_eq!(
            key(&serde_json::json!({"a": [1, 2]})),
            key(&serde_json::json!({"a": [1, 2]}))
        );
        assert_ne!(
            key(&serde_json::json!({"a": [1, 2]})),
            key(&serde_json::json!({"a": [2, 1]}))
        );
        // Fields are keyed by place: a skipped field differs from a present one of any value,
        // and values moving between fields change the key.
        #[derive(serde::Serialize)]
        struct Record<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            first: Option<&'a str>,
            second: &'a str,
        }
        let record = |first, second| key(&Record { first, second });
        assert_ne!(record(None, "a"), record(Some(""), "a"));
        assert_ne!(record(Some("a"), ""), record(Some(""), "a"));
        assert_ne!(record(None, ""), record(Some(""), ""));
        assert_eq!(record(Some("a"), "b"), record(Some("a"), "b"));
    }
}
