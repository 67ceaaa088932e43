//! The server's router, driven without a port through `tower::ServiceExt::oneshot`.

mod harness;
mod isolation;
mod router;
