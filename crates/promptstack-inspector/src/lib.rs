//! The inspector: a web page that shows what the model sees, block by block, served by
//! `promptstack serve` at `/`.
//!
//! The page is plain ES modules and one stylesheet with no build step; this crate embeds them in
//! the binary ([`asset`]), so nothing is fetched from elsewhere at run time and building needs no
//! JavaScript tooling. It also draws the cache chart ([`cache_chart_svg`]) that the page draws
//! itself and that `promptstack cache-sim --svg` writes, from one set of layout rules.
//!
//! ```
//! let index = promptstack_inspector::asset("index.html").unwrap();
//! assert_eq!(index.content_type, "text/html; charset=utf-8");
//! assert!(promptstack_inspector::asset("../Cargo.toml").is_none());
//! ```

mod chart;

pub use chart::cache_chart_svg;

/// One embedded file of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    /// The path under `/inspector/` (`index.html` is also served at `/`).
    pub path: &'static str,
    /// The `Content-Type` it is served with.
    pub content_type: &'static str,
    /// The file's bytes.
    pub bytes: &'static [u8],
}

macro_rules! assets {
    ($($path:literal => $type:literal,)*) => {
        /// Every embedded file, in a fixed order.
        pub const ASSETS: &[Asset] = &[$(Asset {
            path: $path,
            content_type: $type,
            bytes: include_bytes!(concat!("../assets/", $path)),
        },)*];
    };
}

assets! {
    "index.html" => "text/html; charset=utf-8",
    "style.css" => "text/css; charset=utf-8",
    "app.js" => "text/javascript; charset=utf-8",
    "api.js" => "text/javascript; charset=utf-8",
    "dom.js" => "text/javascript; charset=utf-8",
    "jsonloc.js" => "text/javascript; charset=utf-8",
    "views.js" => "text/javascript; charset=utf-8",
    "chart.js" => "text/javascript; charset=utf-8",
    "evals.js" => "text/javascript; charset=utf-8",
    "evalchart.js" => "text/javascript; charset=utf-8",
    "cache-chart.json" => "application/json",
}

/// The embedded file at `path` (relative to `/inspector/`), if there is one. Only the listed
/// names match: there is no file system behind it.
pub fn asset(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

/// The name under which [`file`] serves the send context's JSON Schema, which the page validates
/// its send editor against (generated from the engine's types, so it cannot drift).
pub const SEND_SCHEMA: &str = "send.schema.json";

/// The name under which [`file`] serves the provider formats, in the engine's order, as a JSON
/// array of their names: the page's format menus list them.
pub const FORMATS: &str = "formats.json";

/// What the server answers at `/inspector/{path}`: an embedded asset, the send schema or the
/// formats; the content type and the bytes.
pub fn file(path: &str) -> Option<(&'static str, std::borrow::Cow<'static, [u8]>)> {
    if path == SEND_SCHEMA {
        let schema = promptstack::SendContext::json_schema().to_string();
        return Some(("application/json", schema.into_bytes().into()));
    }
    if path == FORMATS {
        let names = promptstack::provider::Format::ALL.map(promptstack::provider::Format::as_str);
        let json = serde_json::to_vec(&names).unwrap_or_default();
        return Some(("application/json", json.into()));
    }
    asset(path).map(|a| (a.content_type, a.bytes.into()))
}
