//! The server's router, driven without a port through `tower::ServiceExt::oneshot`.

mod bundles;
mod credentials;
mod fairness;
mod harness;
mod inspector;
mod isolation;
mod quotas;
mod router;
mod socket;
