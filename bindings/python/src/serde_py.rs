//! A serde `Deserializer` over Python values: a dict send becomes the send without being written
//! as JSON text. It answers serde exactly as `serde_json` answers for the JSON text of the same
//! value (non-negative integers as `u64`, others as `i64`, floats as `f64`, strings, `null` for
//! `None`, objects and arrays), and reads nothing but the exact `dict`, `list` and `tuple` types,
//! `str`, `int`, `float`, `bool` and `None`: anything else is an error, and the caller reads the
//! send through its JSON text instead.

use std::fmt;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyDictMethods, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::de::{self, IntoDeserializer, Visitor};

/// Why a Python value could not be read; only ever means "read it through its JSON text".
#[derive(Debug)]
pub struct Declined(String);

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Declined {}

impl de::Error for Declined {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Declined(message.to_string())
    }
}

impl From<PyErr> for Declined {
    fn from(error: PyErr) -> Self {
        Declined(error.to_string())
    }
}

/// One Python value, read through serde.
pub struct PyDeserializer<'a, 'py>(pub &'a Bound<'py, PyAny>);

impl<'de> de::Deserializer<'de> for PyDeserializer<'_, '_> {
    type Error = Declined;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Declined> {
        let value = self.0;
        if value.is_none() {
            return visitor.visit_unit();
        }
        if let Ok(text) = value.cast::<PyString>() {
            return visitor.visit_str(&text.to_cow()?);
        }
        // `bool` is a subclass of `int`: test it first.
        if let Ok(flag) = value.cast::<PyBool>() {
            return visitor.visit_bool(flag.is_true());
        }
        if value.is_instance_of::<PyInt>() {
            if let Ok(n) = value.extract::<u64>() {
                return visitor.visit_u64(n);
            }
            return visitor.visit_i64(value.extract::<i64>()?);
        }
        if let Ok(float) = value.cast::<PyFloat>() {
            return visitor.visit_f64(float.value());
        }
        if value.is_exact_instance_of::<PyDict>() {
            let dict = value.cast::<PyDict>().map_err(PyErr::from)?;
            return visitor.visit_map(Entries {
                entries: dict.iter(),
                value: None,
            });
        }
        if let Ok(list) = value.cast_exact::<PyList>() {
            return visitor.visit_seq(Items::List(list.iter()));
        }
        if let Ok(tuple) = value.cast_exact::<PyTuple>() {
            return visitor.visit_seq(Items::Tuple(tuple.iter()));
        }
        Err(Declined("not a JSON value".into()))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Declined> {
        if self.0.is_none() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Declined> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Declined> {
        if let Ok(text) = self.0.cast::<PyString>() {
            let name: String = text.to_cow()?.into_owned();
            return visitor.visit_enum(name.into_deserializer());
        }
        if let Ok(dict) = self.0.cast_exact::<PyDict>() {
            let mut entries = dict.iter();
            if let (Some((key, value)), None) = (entries.next(), entries.next()) {
                return visitor.visit_enum(Variant { key, value });
            }
        }
        Err(Declined("not an enum".into()))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// The entries of a dict, in order.
struct Entries<'py> {
    entries: pyo3::types::iter::BoundDictIterator<'py>,
    value: Option<Bound<'py, PyAny>>,
}

impl<'de> de::MapAccess<'de> for Entries<'_> {
    type Error = Declined;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Declined> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        if !key.is_instance_of::<PyString>() {
            return Err(Declined("a key is not a str".into()));
        }
        self.value = Some(value);
        seed.deserialize(PyDeserializer(&key)).map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Declined> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Declined("a value without its key".into()))?;
        seed.deserialize(PyDeserializer(&value))
    }
}

/// The items of a list or tuple, in order.
enum Items<'py> {
    List(pyo3::types::iter::BoundListIterator<'py>),
    Tuple(pyo3::types::iter::BoundTupleIterator<'py>),
}

impl<'de> de::SeqAccess<'de> for Items<'_> {
    type Error = Declined;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Declined> {
        let item = match self {
            Items::List(items) => items.next(),
            Items::Tuple(items) => items.next(),
        };
        item.map(|item| seed.deserialize(PyDeserializer(&item)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(match self {
            Items::List(items) => items.len(),
            Items::Tuple(items) => items.len(),
        })
    }
}

/// An enum written as a dict of one entry: the variant's name and its content.
struct Variant<'py> {
    key: Bound<'py, PyAny>,
    value: Bound<'py, PyAny>,
}

impl<'de, 'py> de::EnumAccess<'de> for Variant<'py> {
    type Error = Declined;
    type Variant = Content<'py>;

    fn variant_seed<V: de::DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Content<'py>), Declined> {
        if !self.key.is_instance_of::<PyString>() {
            return Err(Declined("a key is not a str".into()));
        }
        let variant = seed.deserialize(PyDeserializer(&self.key))?;
        Ok((variant, Content(self.value)))
    }
}

/// The content of an enum's variant.
struct Content<'py>(Bound<'py, PyAny>);

impl<'de> de::VariantAccess<'de> for Content<'_> {
    type Error = Declined;

    fn unit_variant(self) -> Result<(), Declined> {
        de::Deserialize::deserialize(PyDeserializer(&self.0))
    }

    fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Declined> {
        seed.deserialize(PyDeserializer(&self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Declined> {
        de::Deserializer::deserialize_seq(PyDeserializer(&self.0), visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Declined> {
        de::Deserializer::deserialize_map(PyDeserializer(&self.0), visitor)
    }
}
