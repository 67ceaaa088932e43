//! Linker setup for a Node addon.

fn main() {
    napi_build::setup();
}
